"""Hybrid search over one time slice: dense + full-text candidates, fused, gated, budgeted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chronomem.records import MemoryRecord
from chronomem.retrieval.fusion import estimate_tokens, rrf, should_abstain
from chronomem.storage import Filter, MemoryStore

#: Candidates each channel contributes before fusion.
CANDIDATE_POOL = 50
#: Fused score bonus for a fact over a chunk at equal rank: current facts lead.
FACT_BONUS = 1.0 / 120


@dataclass
class Hit:
    """A ranked memory with the evidence behind its rank."""

    record: MemoryRecord
    score: float
    channels: list[str] = field(default_factory=list)
    dense: float | None = None
    lexical: float | None = None


@dataclass
class SearchOutcome:
    hits: list[Hit]
    abstained: bool
    tokens: int
    truncated: bool


def hybrid_search(
    store: MemoryStore,
    query_text: str,
    query_vector: Sequence[float],
    flt: Filter,
    limit: int,
    budget_tokens: int | None = None,
) -> SearchOutcome:
    """Rank rows passing `flt` for the query; abstain when nothing relevant is stored."""
    dense = store.vector_search(query_vector, flt, CANDIDATE_POOL)
    lexical = store.text_search(query_text, flt, CANDIDATE_POOL)
    best_dense = max((score for _, score in dense), default=None)
    if should_abstain(best_dense, len(lexical)):
        return SearchOutcome([], True, 0, False)

    records = {r.id: r for r, _ in dense}
    records.update({r.id: r for r, _ in lexical})
    dense_score = {r.id: s for r, s in dense}
    lexical_score = {r.id: s for r, s in lexical}
    fused = rrf({"dense": [r.id for r, _ in dense], "lexical": [r.id for r, _ in lexical]})
    hits = [
        Hit(
            record=records[f.id],
            score=f.score + (FACT_BONUS if records[f.id].kind == "fact" else 0.0),
            channels=sorted(f.ranks),
            dense=dense_score.get(f.id),
            lexical=lexical_score.get(f.id),
        )
        for f in fused
    ]
    hits.sort(key=lambda h: (-h.score, h.record.id))
    return _within_budget(hits, limit, budget_tokens)


def _within_budget(hits: list[Hit], limit: int, budget_tokens: int | None) -> SearchOutcome:
    chosen: list[Hit] = []
    tokens = 0
    truncated = False
    for hit in hits:
        if len(chosen) >= limit:
            break
        cost = estimate_tokens(hit.record.content)
        if budget_tokens is not None and tokens + cost > budget_tokens:
            truncated = True
            continue
        chosen.append(hit)
        tokens += cost
    return SearchOutcome(chosen, False, tokens, truncated)
