"""Pure scoring functions: weighted reciprocal rank fusion (`rrf`), which the baselines of eval/ablation.py fuse with
(recall's own ranking, rank.py, sums weighted channel scores instead), and `estimate_tokens`, by which recall and the
brief keep to a token budget."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: The RRF constant from Cormack et al. (2009); larger flattens the rank curve.
RRF_K = 60
#: Equal channel weights: plain RRF, the ablation baseline.
DEFAULT_WEIGHTS: Mapping[str, float] = {"dense": 1.0, "lexical": 1.0}


@dataclass
class Fused:
    """One id's fused score and the rank (1-based) it had in each channel that found it."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[Fused]:
    """Weighted reciprocal rank fusion: score(d) = sum over channels c of w_c / (k + rank_c(d)).

    Ties break by the best single rank, then by id, so the order is deterministic.
    """
    weights = DEFAULT_WEIGHTS if weights is None else weights
    fused: dict[str, Fused] = {}
    for channel, ids in rankings.items():
        weight = weights.get(channel, 1.0)
        for rank, memory_id in enumerate(dict.fromkeys(ids), start=1):
            entry = fused.setdefault(memory_id, Fused(memory_id, 0.0))
            entry.score += weight / (k + rank)
            entry.ranks[channel] = rank
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters a token for English and code), never zero."""
    return max(1, math.ceil(len(text) / 4))
