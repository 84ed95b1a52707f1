"""eval/bench_ab.py end to end at a tiny size: a store kept by bench_latency, copied for two sides of this
checkout, two rounds taking turns; every run's medians and recall's stage times exist and the tables compare
them. No timing is asserted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eval.bench_ab import STAGES, run, stage_table, table
from eval.bench_latency import Config
from eval.bench_latency import run as bench_latency
from tests.conftest import shared_dir

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # benchmark-like: fills a store, then four child processes embed and write
def test_two_sides_take_turns_and_are_compared(tmp_path: Path) -> None:
    data = shared_dir("data", "locomo")
    store = tmp_path / "store"
    bench_latency(Config(sizes=[120], calls=2, out=tmp_path / "latency", store=store, real_up_to=120, cold_runs=0,
                         consolidate_seconds=10, data=str(data), write=False))
    other = tmp_path / "other"
    shutil.copytree(store, other)
    sides = {"a": (CHECKOUT, store), "b": (CHECKOUT, other)}
    runs = run(sides, {}, 2, Path(data), counts=(5, 3))
    assert list(runs) == ["a", "b"] and all(len(results) == 2 for results in runs.values())
    assert all(0 < result[tool] for results in runs.values() for result in results for tool in ("recall", "remember"))
    lines = table(runs).splitlines()
    assert lines[2].startswith("| a |") and "| 1.00 |" in lines[2] and lines[3].startswith("| b |")
    # every stage of recall is found in this checkout and timed in every run
    assert all(set(result["stages"]) == set(STAGES) for results in runs.values() for result in results)
    assert all(0 < result["stages"]["embed the query"] for results in runs.values() for result in results)
    header, _, row_a, row_b = stage_table(runs).splitlines()
    assert header == "| side | " + " | ".join(STAGES) + " |" and row_a.startswith("| a |") and "–" not in row_a + row_b
