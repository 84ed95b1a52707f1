"""Store upkeep: the vector index is built in a background step once the table is large, and searches still find."""

from __future__ import annotations

import random

from chronomem.consolidate.runner import Consolidator
from chronomem.consolidate.upkeep import (
    BURST_UPKEEP_COMMITS,
    BURST_UPKEEP_MAX_ROWS,
    BURST_UPKEEP_MAX_SECONDS,
    needs_burst_upkeep,
    needs_vector_index,
)
from chronomem.consolidate.watermark import ConsolidationState
from chronomem.records import MemoryRecord, new_id
from chronomem.search.engine import vector_search
from chronomem.service import MemoryService
from chronomem.storage import Filter


def test_needs_vector_index() -> None:
    assert not needs_vector_index(49_999, None)
    assert needs_vector_index(50_000, None)
    assert not needs_vector_index(150_000, 50_000)
    assert needs_vector_index(200_000, 50_000)


def test_burst_upkeep_only_after_many_appends_and_only_where_optimize_is_quick() -> None:
    asked: list[int] = []

    def rows(n: int):
        def count() -> int:
            asked.append(n)
            return n
        return count

    assert not needs_burst_upkeep(BURST_UPKEEP_COMMITS - 1, rows(10), None)
    assert asked == [], "the row count is only asked once the appends call for it"
    assert needs_burst_upkeep(BURST_UPKEEP_COMMITS, rows(10), None)
    assert needs_burst_upkeep(BURST_UPKEEP_COMMITS, rows(BURST_UPKEEP_MAX_ROWS), BURST_UPKEEP_MAX_SECONDS)
    assert not needs_burst_upkeep(BURST_UPKEEP_COMMITS, rows(BURST_UPKEEP_MAX_ROWS + 1), None)
    assert not needs_burst_upkeep(BURST_UPKEEP_COMMITS, rows(10), BURST_UPKEEP_MAX_SECONDS + 0.1)


def test_vector_index_is_built_past_the_threshold_and_search_still_finds(svc: MemoryService, clock) -> None:
    rng = random.Random(7)
    rows = []
    for i in range(400):
        vector = [rng.gauss(0, 1) for _ in range(svc.embedder.dim)]
        rows.append(MemoryRecord(
            id=new_id(clock.now), kind="fact", project="proj", content=f"fact {i}", subject=f"s{i}", predicate="p",
            object=str(i), valid_at=clock.now, created_at=clock.now, vector=vector, embed_model="test",
        ))
    svc.store.add(rows)
    runner = Consolidator(svc, llm=None, vector_index_min_rows=300)
    assert svc.store.vector_index_rows() is None
    did = [r.did for r in runner.run_to_completion(force_upkeep=False)]
    assert did == ["index upkeep", "vector index"]
    assert svc.store.vector_index_rows() == 400
    assert ConsolidationState.load(svc.store.path).data["vector_index"] == {"trained_rows": 400}
    assert runner.step() is None, "no retraining until the table has grown 4x"
    target = rows[123]
    assert target.vector is not None
    [(found, score)] = vector_search(svc.store, target.vector, Filter().projects(["proj"]), 1)
    assert found.id == target.id and score > 0.99
