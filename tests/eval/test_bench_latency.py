"""eval/bench_latency.py end to end at a tiny size: two sizes (one through the real bulk import path, one
with derived vectors), a few calls of each tool in-process and over a real MCP stdio server, and the
JSON, Markdown and plot it writes. No timing is asserted: only that every measurement exists and is sane."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from chronomem.consolidate.upkeep import UPKEEP_MIN_UNINDEXED
from eval.bench_latency import Config, Corpus, parse_size, run
from eval.stage_times import OTHER, STAGES
from tests.conftest import shared_dir

CALLS = 3
TOOLS = ("recall", "as_of", "remember")


def test_parse_size() -> None:
    assert [parse_size(s) for s in ("1k", "10K", "100k", "1m", "250", "2.5k")] == [
        1000,
        10_000,
        100_000,
        1_000_000,
        250,
        2500,
    ]


def test_variants_are_distinct_texts_in_the_past() -> None:
    corpus = Corpus.load(shared_dir("data", "locomo"))
    n = len(corpus.turns)
    rows = [corpus.variant(i) for i in [*range(0, 50), *range(n, n + 50), *range(7 * n, 7 * n + 50)]]
    texts = [text for text, _, _ in rows]
    assert len(set(texts)) == len(texts)
    assert corpus.variant(0)[0] == corpus.turns[0].content()  # variant 0 is LoCoMo as written
    assert corpus.variant(n)[2] == 0 and corpus.variant(n)[1] < corpus.turns[0].when


@pytest.mark.slow  # benchmark-like: fills stores, spawns servers, times every tool
def test_benchmark_runs_end_to_end_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "results"
    payload = run(Config(data=str(shared_dir("data", "locomo")), sizes=[240, 120], calls=CALLS, out=out, real_up_to=120, cold_runs=1, consolidate_seconds=30))

    saved = json.loads((out / "latency.json").read_text(encoding="utf-8"))
    assert saved["settings"] == payload["settings"] and saved["settings"]["sizes"] == [120, 240]
    env = saved["environment"]
    assert env["machine"]["cores"] and env["machine"]["versions"]["mcp"] and env["versions"]["lancedb"]
    assert env["date"] and env["python"]

    small, large = saved["sizes"]
    assert small["fill"]["added_real"] == 120 and small["fill"]["added_derived"] == 0
    assert large["fill"]["added_real"] == 0 and large["fill"]["added_derived"] > 0
    assert 0.5 < large["fill"]["derived_cosine_to_base"] < 1.0
    for result in (small, large):
        assert result["rows_at_measurement"] >= result["size"]
        assert result["upkeep"]["unindexed_rows_after"] < UPKEEP_MIN_UNINDEXED  # the server's upkeep ran
        for where in ("in_process", "end_to_end"):
            for tool in TOOLS:
                stats = result[where][tool]
                assert stats["n"] == CALLS and 0 < stats["median_ms"] <= stats["p95_ms"] <= stats["p99_ms"] <= stats["max_ms"]
        assert result["end_to_end"]["tools_list"]["n"] == CALLS
        for tool in ("recall", "remember"):  # where a call's time goes: every stage, and what is left
            stages = result["stages"][tool]["stages"]
            assert result["stages"][tool]["calls"] == CALLS and set(stages) == {label for _, _, label in STAGES[tool]} | {OTHER}
            assert sum(s["median_ms"] for s in stages.values()) > 0 and all(s["p99_ms"] >= s["median_ms"] for s in stages.values())
        assert result["stages"]["recall"]["stages"]["search: dense and lexical candidates"]["median_ms"] > 0
        assert result["stages"]["remember"]["stages"]["storage: commit, read-back, read index"]["median_ms"] > 0
        assert 0 < result["end_to_end"]["fresh_recall"]["n"] <= CALLS
        assert result["reference"]["rows"] >= result["size"]
        assert result["reference"]["total"]["n"] == CALLS
        assert result["recall_over_reference"]["in_process"] > 0
        cold = result["cold_start"]
        assert 0 < cold["initialize_s"] < cold["first_recall_s"]
        assert result["disk"]["du_bytes_per_row"] > 0
        assert result["consolidation_after_remembers"]["extract_chunks"] >= CALLS  # the remembered chunks
    if importlib.util.find_spec("psutil"):
        assert large["end_to_end"]["memory"]["rss_mb"] > 0
        assert large["end_to_end"]["memory"]["mappings"]["anonymous"] > 0
    if Path("/proc/self/status").exists():  # RSS by component: a fresh process, step by step
        steps = large["rss_components"]["steps"]
        assert steps[0]["component"] == "interpreter" and len(steps) == 7
        assert all(step["rss"] > 0 for step in steps) and steps[-1]["rss"] > steps[0]["rss"]
        assert sum(step["added_mb"] for step in steps[1:]) == pytest.approx(steps[-1]["rss"] - steps[0]["rss"], abs=0.5)
        assert "## Resident memory by component" in (out / "latency.md").read_text(encoding="utf-8")

    assert saved["bulk_import"]["rows"] == 120 and saved["bulk_import"]["per_second"] > 0
    targets = {(t["name"], t["where"]): t for t in saved["targets"]}
    assert len(targets) == 12
    assert targets[("recall e2e", "median, 100k")]["ok"] is None  # not measured at this size
    assert targets[("bulk import", "real embedding path")]["ok"] in (True, False)

    md = (out / "latency.md").read_text(encoding="utf-8")
    assert "## Targets" in md and "| 120 |" in md and "| 240 |" in md
    if importlib.util.find_spec("matplotlib"):
        assert (out / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
