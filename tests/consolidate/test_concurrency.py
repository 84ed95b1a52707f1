"""Tool calls keep flowing while the server's background consolidator works through thousands of chunks.

The calls go straight to the tool functions from the test thread, bracketed the way the
server brackets them (`call_started` / `call_finished`), so the consolidator's own thread
waits for quiet, works in batches and ends a batch early when a call is waiting. Latencies
are reported (printed, and as test properties), never asserted: this machine is shared.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from chronomem.consolidate.runner import Consolidator
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import recall, remember
from eval.bench_consolidate import PROJECT, bulk_chunks, synthetic_notes
import pytest

pytestmark = pytest.mark.slow  # benchmark-like: concurrent consolidators and writers

CHUNKS = 2000
#: The calls stop here even if the backlog is not done (a loaded machine); the rest is drained without calls.
DEADLINE = 120.0
#: An agent thinks between tool calls; the consolidator works in those gaps (and through reads).
AGENT_PAUSE = 0.3


def test_tool_calls_flow_while_thousands_of_chunks_are_consolidated(svc: MemoryService, record_property) -> None:
    notes = synthetic_notes(CHUNKS, seed=5)
    pool = svc.embedder.embed(notes[:100])  # rules read text, not vectors: a pool keeps set-up short
    svc.settings = svc.settings.__class__(**{**svc.settings.__dict__, "project": PROJECT})
    bulk_chunks(svc, notes, [pool[i % len(pool)] for i in range(CHUNKS)])
    ids_before = {i for i, _ in svc.store.keys(Filter())}
    runner = Consolidator(svc, llm=None, idle_seconds=0.05)
    errors: list[BaseException] = []

    def call(fn: Any, *args: Any, wake: bool) -> float:
        runner.call_started()
        start = time.perf_counter()
        try:
            fn(svc, *args)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            runner.call_finished(wake=wake)
        return time.perf_counter() - start

    def session(wake: bool, rounds: int | None) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"recall": [], "remember": []}
        i, checked, start = 0, time.monotonic(), time.monotonic()
        while rounds is None or i < rounds:
            if rounds is None and time.monotonic() - checked > 1.0:
                checked = time.monotonic()
                if runner.pending_chunks()["rules"] == 0 or time.monotonic() - start > DEADLINE:
                    break
            out["recall"].append(call(recall, "which port does the billing-svc listen on", wake=wake))
            if i % 4 == 0:
                out["remember"].append(call(remember, f"Note {i}: read the worker logs, nothing new.", wake=wake))
            i += 1
            time.sleep(AGENT_PAUSE)
        return out

    baseline = session(wake=False, rounds=20)
    started = time.monotonic()
    during = session(wake=True, rounds=None)
    seconds = time.monotonic() - started
    runner.stop()
    if runner._thread is not None:
        runner._thread.join(timeout=60)
    left_after_calls = runner.pending_chunks()["rules"]
    runner.run_to_completion()

    assert not errors, errors[0]
    assert runner.pending_chunks()["rules"] == 0
    facts = svc.store.count(Filter().kinds(["fact"]))
    assert facts > CHUNKS // 4
    assert ids_before <= {i for i, _ in svc.store.keys(Filter())}, "nothing physically removed"
    top = recall(svc, "which port does billing-svc listen on", kinds=["fact"]).results
    assert top and top[0].predicate == "port"

    extract = [s for s in runner.steps if s.did == "extract rules"]
    report = {"chunks": CHUNKS, "seconds": round(seconds, 1), "left_when_calls_stopped": left_after_calls,
              "batches": len(extract),
              "yielded_batches": sum(1 for s in extract if s.counts.get("yielded")), "facts": facts}
    for tool in ("recall", "remember"):
        base = statistics.median(baseline[tool])
        report[f"{tool}_calls"] = len(during[tool])
        report[f"{tool}_baseline_median_ms"] = round(base * 1000, 1)
        report[f"{tool}_median_ms"] = round(statistics.median(during[tool]) * 1000, 1)
        report[f"{tool}_worst_added_ms"] = round((max(during[tool]) - base) * 1000, 1)
    for key, value in report.items():
        record_property(key, value)
    print("\nconsolidation under load:", report)
