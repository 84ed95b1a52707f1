"""Pure ranking metrics shared by the benchmarks: recall@k, hit@k, MRR, Kendall tau, stale-leak, abstention.

Every function takes a ranking (benchmark ids, best first, already deduplicated) and the
ground truth, and returns a number; nothing here touches chronomem or the disk.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def dedupe(ids: Iterable[T]) -> list[T]:
    """`ids` in order with repeats dropped (a fact and the chunk it came from map to one note)."""
    return list(dict.fromkeys(ids))


def recall_at_k(ranked: Sequence[T], relevant: Collection[T], k: int) -> float:
    """Share of `relevant` found in the first `k` of `ranked`."""
    if not relevant:
        raise ValueError("recall@k needs at least one relevant item")
    found = set(ranked[:k]) & set(relevant)
    return len(found) / len(set(relevant))


def hit_at_k(ranked: Sequence[T], relevant: Collection[T], k: int) -> float:
    """1.0 when any relevant item is in the first `k`, else 0.0."""
    wanted = set(relevant)
    return 1.0 if any(item in wanted for item in ranked[:k]) else 0.0


def all_in_top_k(ranked: Sequence[T], relevant: Collection[T], k: int) -> float:
    """1.0 when every relevant item is in the first `k` (multi-hop both@k), else 0.0."""
    if not relevant:
        raise ValueError("all_in_top_k needs at least one relevant item")
    return 1.0 if set(relevant) <= set(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[T], relevant: Collection[T]) -> float:
    """1 / (1-based rank of the first relevant item); 0.0 when none is ranked."""
    wanted = set(relevant)
    for position, item in enumerate(ranked, start=1):
        if item in wanted:
            return 1.0 / position
    return 0.0


def top1_in(ranked: Sequence[T], items: Collection[T]) -> bool:
    """True when the first result is one of `items` (False for an empty ranking)."""
    return bool(ranked) and ranked[0] in set(items)


def kendall_tau(ranked: Sequence[T], gold_order: Sequence[T]) -> float | None:
    """Kendall tau between the order of the gold items as ranked and `gold_order`.

    Only gold items that appear in `ranked` count; with fewer than two of them the order
    is undefined and the result is None. tau = (concordant - discordant) / pairs.
    """
    position = {item: i for i, item in enumerate(ranked)}
    present = [item for item in gold_order if item in position]
    n = len(present)
    if n < 2:
        return None
    concordant = discordant = 0
    for i in range(n):
        for j in range(i + 1, n):
            if position[present[i]] < position[present[j]]:
                concordant += 1
            else:
                discordant += 1
    return (concordant - discordant) / (n * (n - 1) / 2)


def stale_leak_rate(cases: Iterable[tuple[Sequence[T], Collection[T]]]) -> float | None:
    """Share of (ranking, stale ids) cases whose top-1 is stale; None when there are no cases."""
    flags = [1.0 if top1_in(ranked, stale) else 0.0 for ranked, stale in cases]
    return mean(flags)


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the non-None values; None when there are none."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


@dataclass(frozen=True)
class AbstentionScores:
    """How well a system abstains: recall on unanswerable queries, precision over all abstentions."""

    recall: float | None
    precision: float | None
    false_rate: float | None
    abstained: int
    unanswerable: int
    answerable: int


def abstention_scores(cases: Iterable[tuple[bool, bool]]) -> AbstentionScores:
    """Score (abstained, answerable) pairs.

    recall = abstentions on unanswerable / unanswerable; precision = abstentions on
    unanswerable / all abstentions (None when it never abstained); false_rate =
    abstentions on answerable / answerable.
    """
    true_abstain = false_abstain = unanswerable = answerable = 0
    for abstained, is_answerable in cases:
        if is_answerable:
            answerable += 1
            false_abstain += abstained
        else:
            unanswerable += 1
            true_abstain += abstained
    total = true_abstain + false_abstain
    return AbstentionScores(
        recall=true_abstain / unanswerable if unanswerable else None,
        precision=true_abstain / total if total else None,
        false_rate=false_abstain / answerable if answerable else None,
        abstained=total,
        unanswerable=unanswerable,
        answerable=answerable,
    )
