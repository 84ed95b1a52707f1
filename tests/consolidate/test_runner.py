"""The consolidator's scheduler: extraction then upkeep between calls, one holder per store, CLI to completion."""

from __future__ import annotations

import threading
import time

from filelock import FileLock
import pytest

from chronomem.consolidate.runner import CONSOLIDATE_LOCK_NAME, UPKEEP_MIN_UNINDEXED, Consolidator
from chronomem.consolidate.upkeep import BURST_UPKEEP_COMMITS
from chronomem.service import MemoryService
from chronomem.tools import recall, remember


def fill(svc: MemoryService, n: int) -> None:
    for i in range(n):
        remember(svc, f"Deploy note {i}: service-{i} rolls out with canary step {i % 7}.")


def drain_extraction(runner: Consolidator) -> None:
    """Steps until the pending chunks are extracted (extraction comes before upkeep)."""
    while runner.pending_chunks()["rules"]:
        report = runner.step()
        assert report is not None and report.did == "extract rules"


@pytest.mark.slow
def test_step_folds_unindexed_rows_into_the_index(svc: MemoryService) -> None:
    fill(svc, UPKEEP_MIN_UNINDEXED)
    assert svc.store.unindexed_rows() == UPKEEP_MIN_UNINDEXED
    before = recall(svc, "canary step for service-7")
    runner = Consolidator(svc, llm=None)
    drain_extraction(runner)
    report = runner.step()
    assert report is not None and report.did == "index upkeep"
    assert svc.store.unindexed_rows() == 0
    assert runner.step() is None  # nothing pending any more
    after = recall(svc, "canary step for service-7")
    assert "service-7 " in before.results[0].text and after.results[0].id == before.results[0].id


@pytest.mark.slow
def test_background_thread_waits_for_quiet_then_works(svc: MemoryService) -> None:
    fill(svc, UPKEEP_MIN_UNINDEXED)
    assert svc.store.commits_since_optimize < BURST_UPKEEP_COMMITS  # not a burst: upkeep waits too
    runner = Consolidator(svc, idle_seconds=0.3, llm=None)
    runner.call_started()
    runner.call_finished()
    runner.call_started()  # a call in flight: no step may start
    time.sleep(0.8)
    assert runner.steps == []
    runner.call_finished()
    deadline = time.monotonic() + 20
    while (not runner.steps or runner.steps[-1].did != "index upkeep") and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.stop()
    dids = [s.did for s in runner.steps]
    assert dids[-1] == "index upkeep" and set(dids[:-1]) == {"extract rules"}


def test_a_burst_of_writes_is_compacted_while_calls_flow(svc: MemoryService) -> None:
    runner = Consolidator(svc, idle_seconds=60, llm=None)  # never quiet during this test
    runner.call_started()
    for i in range(BURST_UPKEEP_COMMITS):
        remember(svc, f"Deploy note {i}: service-{i} rolls out with canary step {i % 7}.")
        runner.call_finished()
        runner.call_started()  # the next call is already in flight
    deadline = time.monotonic() + 20
    while not runner.steps and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.stop()
    assert [(s.did, s.detail) for s in runner.steps] == [("index upkeep", "during a burst of writes")]
    assert svc.store.commits_since_optimize == 0 and svc.store.unindexed_rows() == 0
    assert runner.pending_chunks()["rules"] == BURST_UPKEEP_COMMITS  # extraction still waits for quiet
    assert "service-7 " in recall(svc, "canary step for service-7").results[0].text


def test_one_consolidator_per_store(svc: MemoryService) -> None:
    fill(svc, UPKEEP_MIN_UNINDEXED)
    held = threading.Event()
    release = threading.Event()

    def other_process() -> None:  # another holder (a separate lock object, as another process would have)
        with FileLock(str(svc.store.path / CONSOLIDATE_LOCK_NAME)):
            held.set()
            release.wait(10)

    t = threading.Thread(target=other_process)
    t.start()
    held.wait(10)
    try:
        assert Consolidator(svc, llm=None).step() is None
        assert svc.store.unindexed_rows() == UPKEEP_MIN_UNINDEXED
        assert Consolidator(svc, llm=None).pending_chunks()["rules"] == UPKEEP_MIN_UNINDEXED
    finally:
        release.set()
        t.join()
    assert Consolidator(svc, llm=None).step() is not None
