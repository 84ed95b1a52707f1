"""Hybrid search over one time slice: gather candidates, check what the query names, rank, budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from chronomem.records import MemoryRecord
from chronomem.retrieval.candidates import gather
from chronomem.retrieval.fusion import estimate_tokens
from chronomem.retrieval.rank import DEFAULT_CONFIG, QueryInfo, RankConfig, missing_from, query_entities, rank
from chronomem.storage import Filter, MemoryStore

#: At most this many unmatched names are double-checked against the whole slice.
MAX_ENTITY_CHECKS = 2


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
    reason: str = ""


def hybrid_search(
    store: MemoryStore,
    query: QueryInfo,
    query_vector: Sequence[float],
    flt: Filter,
    limit: int,
    budget_tokens: int | None = None,
    config: RankConfig = DEFAULT_CONFIG,
) -> SearchOutcome:
    """Rank rows passing `flt` for the query; abstain when nothing relevant is stored."""
    pool = gather(store, query.text, query_vector, flt)
    unmatched = missing_from(sorted(query_entities(query)), pool)
    if unmatched:
        query.missing_entities = tuple(_confirm_absent(store, unmatched[:MAX_ENTITY_CHECKS], flt))
    ranking = rank(query, pool, config)
    if ranking.abstained:
        return SearchOutcome([], True, 0, False, ranking.reason)
    hits = [
        Hit(r.candidate.record, r.score, r.channels, r.candidate.dense, r.candidate.lexical) for r in ranking.items
    ]
    return _within_budget(hits, limit, budget_tokens)


def _confirm_absent(store: MemoryStore, names: list[str], flt: Filter) -> list[str]:
    """Names that a full-text search of the whole slice for the name itself does not find verbatim."""
    absent = []
    for name in names:
        found = store.text_search(name, flt, 10)
        if not any(name in record.content.lower() for record, _ in found):
            absent.append(name)
    return absent


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
