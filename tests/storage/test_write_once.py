"""Rows are written once: across remember, recall (and the hits the consolidator applies), consolidation
(extraction, supersession, a conflict, a restatement, upkeep) and forget, every stored row keeps every column
as written — vector included — except its validity (`invalid_at`, `expired_at`, `reason`). What changes after a
write lands in the `usage` side table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from chronomem.consolidate.runner import Consolidator
from chronomem.service import MemoryService
from chronomem.storage.schema import VALIDITY_COLUMNS
from chronomem.tools import forget, history, recall, remember


def snapshot(svc: MemoryService) -> dict[str, dict[str, Any]]:
    """Every row as stored, every column (read from the table itself, not through the read index)."""
    return {r["id"]: r for r in svc.store.table.to_arrow().to_pylist()}


def unchanged_but_validity(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], step: str) -> None:
    assert set(before) <= set(after), f"{step}: rows disappeared"
    for memory_id, old in before.items():
        new = after[memory_id]
        changed = [c for c in old if c not in VALIDITY_COLUMNS and old[c] != new[c]]
        assert not changed, f"{step} rewrote {changed} of {memory_id}"


@pytest.fixture
def runner(svc: MemoryService) -> Consolidator:
    return Consolidator(svc, llm=None)


def test_no_row_is_rewritten_except_to_close_its_validity(svc: MemoryService, runner: Consolidator, clock) -> None:
    def step(name: str, action: Callable[[], Any]) -> Any:
        clock.advance(minutes=5)
        before = snapshot(svc)
        out = action()
        unchanged_but_validity(before, snapshot(svc), name)
        return out

    agent = step("remember a fact", lambda: remember(
        svc, "API port settled.", valid_from="2024-01-01", facts=[{"subject": "api", "predicate": "port", "object": "8080"}]
    ))
    step("remember a note", lambda: remember(svc, "The release checklist lives in docs/release.md.", tags=["release"]))
    step("remember a conflicting note", lambda: remember(svc, "The api listens on port 9090.", valid_from="2024-02-01"))
    step("consolidate (extraction, a conflict)", runner.run_to_completion)
    port = history(svc, subject="api", predicate="port")
    assert all(e.conflicts_with for e in port.entries if e.status == "current"), "the conflict shows on both facts"

    again = step("restate the fact", lambda: remember(
        svc, "Port confirmed.", facts=[{"subject": "api", "predicate": "port", "object": "8080"}]
    ))
    assert again.facts[0].action == "reinforced" and again.facts[0].id == agent.facts[0].id
    restated = svc.store.get(agent.facts[0].id)
    assert restated is not None and restated.salience == pytest.approx(1.5) and again.id in restated.source_ids

    hit = step("recall", lambda: recall(svc, "where is the release checklist"))
    runner.record_hits([i.id for i in hit.results])
    step("apply recall hits", runner.run_to_completion)
    seen = svc.store.get(hit.results[0].id)
    assert seen is not None and seen.usage is not None and seen.usage.seen_at is not None

    step("supersede", lambda: remember(
        svc, "Port is 7070 now.", valid_from="2024-03-01", facts=[{"subject": "api", "predicate": "port", "object": "7070"}]
    ))
    step("forget (invalidate)", lambda: forget(svc, hit.results[0].id, reason="moved to the wiki"))
    step("forget (retract)", lambda: forget(svc, again.id, reason="never said", retract=True))
    step("upkeep", lambda: svc.store.optimize())
    assert svc.store.usage.rows() == len(svc.store.usage.latest()), "upkeep compacts usage to one row per memory"
