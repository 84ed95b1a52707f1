"""Salience: recall hits reinforce in the background; decay is computed at read time and never removes."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import anyio
import pytest

from chronomem.consolidate.runner import Consolidator
from chronomem.consolidate.salience import HIT_STEP
from chronomem.facts import HALF_LIFE, effective_salience, last_reinforced, record_salience
from chronomem.records import UTC, MemoryRecord, Usage, new_id
from chronomem.service import MemoryService
from chronomem.tools import recall, remember

T = datetime(2024, 1, 1, tzinfo=UTC)


def test_effective_salience_halves_every_half_life() -> None:
    assert effective_salience(2.0, T, T) == 2.0
    assert abs(effective_salience(2.0, T, T + HALF_LIFE) - 1.0) < 1e-9
    assert abs(effective_salience(2.0, T, T + 3 * HALF_LIFE) - 0.25) < 1e-9
    assert effective_salience(2.0, T + timedelta(days=1), T) == 2.0, "a future reinforcement does not inflate"
    assert effective_salience(-1.0, T, T) == 0.0


def test_last_reinforced_is_the_latest_statement_or_hit() -> None:
    later = T + timedelta(days=30)
    row = MemoryRecord(id=new_id(T), kind="fact", project="p", content="c", valid_at=T, created_at=T,
                       source_ids=[new_id(T), new_id(later)])
    assert abs((last_reinforced(row) - later).total_seconds()) < 0.01
    seen = row.copy(tags=["infra"]).with_usage(Usage(id=row.id, at=T, seen_at=datetime(2024, 3, 1, tzinfo=UTC), hits=1))
    assert last_reinforced(seen) == datetime(2024, 3, 1, tzinfo=UTC)
    assert seen.tags == ["infra"] and seen.to_row()["tags"] == ["infra"]


def test_recall_hits_are_applied_in_a_batch_and_decay_only_ranks(svc: MemoryService, clock) -> None:
    note = remember(svc, "The release checklist lives in docs/release.md.")
    runner = Consolidator(svc, llm=None)
    runner.run_to_completion()
    rows = svc.store.count()
    hit = recall(svc, "where is the release checklist")
    assert hit.results[0].id == note.id
    runner.record_hits([i.id for i in hit.results])
    report = runner.step()
    assert report is not None and report.did == "salience" and report.counts["hits"] == 1
    stored = svc.store.get(note.id)
    assert stored is not None and abs(stored.salience - (1.0 + HIT_STEP)) < 1e-6
    assert stored.usage is not None and stored.usage.seen_at == clock.now and stored.usage.hits == 1
    runner.record_hits([note.id])  # again within the cooldown: the time refreshes, salience does not grow
    runner.step()
    again = svc.store.get(note.id)
    assert again is not None and abs(again.salience - stored.salience) < 1e-6
    assert svc.store.count() == rows, "reinforcement lives in the usage table: no row is added, removed or rewritten"
    raw = svc.store.table.to_arrow().to_pylist()
    assert next(r for r in raw if r["id"] == note.id)["salience"] == pytest.approx(1.0), "the row stays as written"

    clock.advance(days=365)
    assert record_salience(again, clock.now) < 0.1 * again.salience
    assert recall(svc, "where is the release checklist").results[0].id == note.id, "decay never removes"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_server_records_recall_hits_and_its_consolidator_applies_them(svc: MemoryService) -> None:
    from mcp import Client

    from chronomem.server.app import build_server

    note = remember(svc, "The on-call rota lives in the ops wiki under Rotations.")
    async with Client(build_server(svc), read_timeout_seconds=60) as client:
        result = await client.call_tool("recall", {"query": "where is the on-call rota"})
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["results"][0]["id"] == note.id
        deadline = time.monotonic() + 30
        stored = svc.store.get(note.id)
        while stored is not None and stored.salience == 1.0 and time.monotonic() < deadline:
            await anyio.sleep(0.2)  # the consolidator waits for quiet, then applies the hit
            stored = svc.store.get(note.id)
    assert stored is not None and stored.salience > 1.0 and stored.usage is not None and stored.usage.seen_at is not None
