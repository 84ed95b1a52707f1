"""Ablation rankers: each retrieval signal alone, then fused, over the slice `recall` searches.

Built from chronomem's public parts without changing them: the same `Filter`
`search_slice` builds (chronomem/tools/recall.py). The first rankers are single channels
(`MemoryStore.vector_search` / `text_search` with the same candidate pool as recall) and
their fusion by `chronomem.retrieval.fusion.rrf`; the rest are recall's own read path
(`retrieval.pipeline.ranked_hits`) with a `RankConfig` that switches the later signals off, one more
on per row, the last being recall's ranking. None of them abstains, so they show what each
signal contributes to the order.

To measure a further signal, give it a weight in `RankConfig` and append a
`PipelineRanker` row that turns it on (off in the rows before it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from dataclasses import replace

from chronomem.consolidate.slots import slot_matcher
from chronomem.records import MemoryRecord
from chronomem.retrieval.fusion import rrf
from chronomem.retrieval.pipeline import ranked_hits
from chronomem.retrieval.rank import QueryInfo, RankConfig
from chronomem.retrieval.temporal import read_time
from chronomem.search.candidates import CANDIDATE_POOL
from chronomem.search.engine import Search, text_search, vector_search
from chronomem.search.terms import without_name
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
    project: str | None = None
    records: dict[str, MemoryRecord] = field(default_factory=dict)

    @cached_property
    def vector(self) -> list[float]:
        return self.svc.embed_one(self.text)

    @cached_property
    def dense(self) -> list[tuple[MemoryRecord, float]]:
        return self._keep(vector_search(self.svc.store, self.vector, self.flt, self.pool))

    @cached_property
    def lexical(self) -> list[tuple[MemoryRecord, float]]:
        return self._keep(text_search(self.svc.store, self.text, self.flt, self.pool))

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


@dataclass(frozen=True)
class PipelineRanker:
    """chronomem's own read path (`retrieval.pipeline.ranked_hits`) with some of its signals switched off; never abstains."""

    name: str
    config: RankConfig

    def rank(self, ctx: QueryContext, limit: int) -> list[MemoryRecord]:
        reading = read_time(ctx.text, ctx.svc.now())
        names = ctx.svc.project_names()
        own = (names.get(ctx.project, ctx.project),) if ctx.project else ()
        text = without_name(reading.text, own[0]) if own and self.config.own_name_off else reading.text
        period = (reading.since, reading.at) if reading.since is not None and reading.at is not None else None
        info = QueryInfo(
            text=text,
            intent=reading.intent,
            project_names=own,
            other_project_names=tuple(n for n in names.values() if n not in own),
            period=period,
        )
        vector = ctx.svc.embed_one(text)
        config = replace(self.config, abstain=False)
        hits, _ = ranked_hits(Search(ctx.svc.store, ctx.flt), info, vector, config, slot_matcher(ctx.svc).embed_phrases)
        return [h.record for h in hits[:limit]]


_OFF = RankConfig(
    entity_weight=0.0, foreign_penalty=1.0, group_size=1, history_group_size=1, fact_boost=1.0,
    second_hop=False, own_name_off=False, coverage_weight=0.0, slot_weight=0.0, slot_sense_weight=0.0,
    context_weight=0.0, context_share=0.0, period_weight=0.0, answer_type_weight=0.0, succession=False,
    told_nothing_penalty=1.0,
)
#: recall's ranking without conversational context, for the rows before its own.
_NO_CONTEXT = replace(
    RankConfig(), succession=False, context_weight=0.0, context_share=0.0, period_weight=0.0, answer_type_weight=0.0,
    told_nothing_penalty=1.0,
)
#: recall's ranking before the last row's signal.
_NOT_TOLD = replace(RankConfig(), told_nothing_penalty=1.0)
#: recall's ranking with the signals added after the second hop switched off, for the rows before theirs.
_UPTO_HOP = replace(_NO_CONTEXT, own_name_off=False, coverage_weight=0.0, slot_weight=0.0, slot_sense_weight=0.0)
#: ... and without the slot channels.
_NO_SLOT = replace(_NO_CONTEXT, slot_weight=0.0, slot_sense_weight=0.0)

#: The ablation ladder, one signal added per row (the last row is recall's ranking without its abstention gate).
RANKERS: list[Ranker | PipelineRanker] = [
    Ranker("lexical only", ("lexical",)),
    Ranker("dense only", ("dense",)),
    Ranker("fused (RRF k=60)", ("lexical", "dense")),
    PipelineRanker("score fusion (dense 0.3, BM25 0.7), dated phrase off the query", _OFF),
    PipelineRanker("+ exact-name channel (0.2)", replace(_OFF, entity_weight=0.2)),
    PipelineRanker("+ other-project demotion", replace(_OFF, entity_weight=0.2, foreign_penalty=0.5)),
    PipelineRanker(
        "+ the newer wins",
        replace(_OFF, entity_weight=0.2, foreign_penalty=0.5, group_size=4, history_group_size=8, fact_boost=1.1),
    ),
    PipelineRanker("+ second hop through a name of the best match", _UPTO_HOP),
    PipelineRanker(
        "+ the searched project's own name off the query", replace(_NO_SLOT, coverage_weight=0.0)
    ),
    PipelineRanker("+ query terms covered, weighted by pool IDF (0.2)", _NO_SLOT),
    PipelineRanker("+ a stated fact's slot matched to the query (1.0)", replace(_NO_CONTEXT, slot_sense_weight=0.0)),
    PipelineRanker("+ the meaning of its slot, by the cosine of its slot phrase to the query (0.5)", _NO_CONTEXT),
    PipelineRanker(
        "+ conversational context: chunks written next to it, alike (0.3, neighbours of the first 3 at 0.5)",
        replace(_NOT_TOLD, succession=False, period_weight=0.0, answer_type_weight=0.0),
    ),
    PipelineRanker(
        "+ what began in the day or month a dated question names (0.3)",
        replace(_NOT_TOLD, succession=False, answer_type_weight=0.0),
    ),
    PipelineRanker(
        "+ a memory holding the kind of answer asked for: someone, a path, an address, a number (0.2)",
        replace(_NOT_TOLD, succession=False),
    ),
    PipelineRanker(
        "+ the later word on the leader's value: a newer note naming it beside another of its kind",
        _NOT_TOLD,
    ),
    PipelineRanker(
        "+ a memory that tells nothing the question does not (its words all the question's, no value) demoted"
        " (= recall's ranking)",
        RankConfig(),
    ),
]


def load_rankers(spec: str) -> list[Ranker | PipelineRanker]:
    """The ranker list named `module:attribute` (e.g. a list of `PipelineRanker` variants to compare)."""
    module, _, name = spec.partition(":")
    return list(getattr(importlib.import_module(module), name or "RANKERS"))


def run_rankers(ctx: QueryContext, rankers: list[Ranker | PipelineRanker], limit: int) -> dict[str, list[MemoryRecord]]:
    """Every ranker's top `limit` for one query, sharing the channel searches."""
    return {ranker.name: ranker.rank(ctx, limit) for ranker in rankers}
