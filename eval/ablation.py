"""Ablation rankers: each retrieval signal alone, then fused, over the slice `recall` searches.

Built from chronomem's public parts without changing them: the same `Filter`
`search_slice` builds (chronomem/tools/recall.py), `MemoryStore.vector_search` /
`text_search` with the same candidate pool as `hybrid_search`, and
`chronomem.retrieval.fusion.rrf`. Unlike `recall` these rankers never abstain and
give facts no bonus, so they show what each signal contributes.

To measure a further signal, add a function to `SIGNALS` (a `QueryContext` in, memory
ids best first out) and append a `Ranker` that adds it to the previous one's signals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from chronomem.records import MemoryRecord
from chronomem.retrieval.fusion import rrf
from chronomem.retrieval.search import CANDIDATE_POOL
from chronomem.service import MemoryService
from chronomem.storage import Filter


def slice_filter(
    svc: MemoryService, at: datetime, known_at: datetime, project: str | None, scope: str = "project"
) -> Filter:
    """The prefilter `recall` / `as_of` use for this slice and scope (all kinds)."""
    flt = Filter().live(at, known_at)
    projects = svc.scope_projects(project, scope)
    return flt if projects is None else flt.projects(projects)


@dataclass
class QueryContext:
    """One query against one slice; each channel searches at most once, on first use."""

    svc: MemoryService
    text: str
    flt: Filter
    pool: int = CANDIDATE_POOL
    records: dict[str, MemoryRecord] = field(default_factory=dict)

    @cached_property
    def vector(self) -> list[float]:
        return self.svc.embed_one(self.text)

    @cached_property
    def dense(self) -> list[tuple[MemoryRecord, float]]:
        return self._keep(self.svc.store.vector_search(self.vector, self.flt, self.pool))

    @cached_property
    def lexical(self) -> list[tuple[MemoryRecord, float]]:
        return self._keep(self.svc.store.text_search(self.text, self.flt, self.pool))

    def _keep(self, hits: list[tuple[MemoryRecord, float]]) -> list[tuple[MemoryRecord, float]]:
        self.records.update((record.id, record) for record, _ in hits)
        return hits


Signal = Callable[[QueryContext], list[str]]

SIGNALS: dict[str, Signal] = {
    "lexical": lambda ctx: [record.id for record, _ in ctx.lexical],
    "dense": lambda ctx: [record.id for record, _ in ctx.dense],
}


@dataclass(frozen=True)
class Ranker:
    """A named set of signals fused by weighted RRF (one signal: its own order)."""

    name: str
    signals: tuple[str, ...]
    weights: Mapping[str, float] | None = None

    def rank(self, ctx: QueryContext, limit: int) -> list[MemoryRecord]:
        fused = rrf({name: SIGNALS[name](ctx) for name in self.signals}, self.weights)
        return [ctx.records[f.id] for f in fused[:limit]]


#: The ablation ladder, one signal added per row.
RANKERS: list[Ranker] = [
    Ranker("lexical only", ("lexical",)),
    Ranker("dense only", ("dense",)),
    Ranker("fused (RRF k=60)", ("lexical", "dense")),
]


def run_rankers(ctx: QueryContext, rankers: list[Ranker], limit: int) -> dict[str, list[MemoryRecord]]:
    """Every ranker's top `limit` for one query, sharing the channel searches."""
    return {ranker.name: ranker.rank(ctx, limit) for ranker in rankers}
