"""Conversational context: a statement is read with the ones said next to it.

A turn of a conversation often makes sense only with its neighbours: "Yes, last Tuesday, it was
amazing!" answers "When did you go to the museum?", said just before it, and shares no word with
a question about the museum. Chunks of one project written one after the other (`MemoryStore.adjacent`:
next to each other in write order, within CONTEXT_GAP in valid and in transaction time) whose vectors
are alike (`RankConfig.context_cosine`) are taken as context of each other:

- `context_bonus` (pure): a chunk of the candidate pool gains `context_weight` times the best fused
  score among its neighbours in the pool;
- `context_additions` (pure): the neighbours of the best `context_top` chunks that the pool missed
  join the results, each below the chunk it is context of, at `context_share` of its score.

Notes written minutes apart about unrelated things are not alike enough to count: on DevMem,
adjacent notes of a project have cosines of 0.02-0.31 (10th-90th percentile), adjacent LoCoMo turns
0.50-0.81. Chunks only: a fact stands on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Protocol, TypeVar

from chronomem.search.candidates import Candidate

#: Statements further apart than this, in valid or in transaction time, belong to different sessions.
CONTEXT_GAP = timedelta(hours=1)

T = TypeVar("T")


class Ranked(Protocol):
    """What `context_bonus` reads and changes of a ranked candidate (`rank.Ranked`; rank imports this module)."""

    candidate: Candidate
    score: float
    channels: list[str]


def context_bonus(items: Sequence[Ranked], weight: float) -> None:
    """Add to each chunk `weight` times the best score among its neighbours in `items` (scores as they
    stood before any bonus), and mark it with the "context" channel."""
    if not weight:
        return
    score_of = {item.candidate.record.id: item.score for item in items}
    bonuses = []
    for item in items:
        neighbours = [score_of[n] for n in item.candidate.adjacent if n in score_of]
        bonuses.append(weight * max(neighbours) if neighbours and item.candidate.record.kind == "chunk" else 0.0)
    for item, bonus in zip(items, bonuses, strict=True):
        if bonus > 0:
            item.score += bonus
            item.channels.append("context")


def missing_neighbours(
    ranked: Sequence[T],
    adjacent: Mapping[str, Sequence[str]],
    top: int,
    id_of: Callable[[T], str],
    is_chunk: Callable[[T], bool],
) -> list[tuple[str, str]]:
    """(chunk id, neighbour id) for the neighbours of the first `top` chunks of `ranked` that are not in it."""
    shown = {id_of(item) for item in ranked}
    out = []
    for item in [item for item in ranked if is_chunk(item)][:top]:
        for neighbour in adjacent.get(id_of(item), ()):
            if neighbour not in shown:
                shown.add(neighbour)
                out.append((id_of(item), neighbour))
    return out


def context_additions(
    ranked: list[T], additions: Sequence[tuple[str, T]], id_of: Callable[[T], str], score_of: Callable[[T], float]
) -> list[T]:
    """`ranked` with each addition (the id of the item it is context of, the new item) placed after that
    item and after the items following it that score at least as much; the rest keep their order."""
    out = list(ranked)
    for source, item in additions:
        at = next((i for i, existing in enumerate(out) if id_of(existing) == source), None)
        if at is None:
            continue
        at += 1
        while at < len(out) and score_of(out[at]) >= score_of(item):
            at += 1
        out.insert(at, item)
    return out
