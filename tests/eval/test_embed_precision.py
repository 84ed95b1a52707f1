"""eval/embed_precision.py on a slice of one LoCoMo conversation: the float32 export, the shipped model and its int8
copy load for real, every figure exists and is sane, and the report names them. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path

from eval.embed_precision import main
from tests.conftest import shared_dir
import pytest

pytestmark = pytest.mark.slow  # benchmark-like: loads and runs the three forms of the model



def test_the_comparison_runs_and_writes_its_report(tmp_path: Path) -> None:
    data = json.loads(shared_dir("data", "locomo", "26.json").read_text(encoding="utf-8"))
    keep = {k: v for k, v in data.items() if not k.startswith("session_") or k.split("_")[1] in ("1", "2")}
    known = {t["dia_id"] for s in ("session_1", "session_2") for t in data[s]}
    keep["qa"] = [q for q in data["qa"] if q.get("evidence") and set(q["evidence"]) <= known][:12]
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "26.json").write_text(json.dumps(keep), encoding="utf-8")

    devmem = tmp_path / "devmem"
    devmem.mkdir()
    source = shared_dir("data", "devmem")
    writes = (source / "writes.jsonl").read_text(encoding="utf-8").splitlines()[:60]
    kept = {json.loads(line)["id"] for line in writes}
    queries = [line for line in (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()
               if json.loads(line)["gold_ids"] and set(json.loads(line)["gold_ids"]) <= kept][:10]
    (devmem / "writes.jsonl").write_text("\n".join(writes) + "\n", encoding="utf-8")
    (devmem / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")

    assert main(["--data", str(folder), "--devmem", str(devmem), "--rounds", "1", "--out", str(tmp_path / "out")]) == 0
    payload = json.loads((tmp_path / "out" / "embed_precision.json").read_text(encoding="utf-8"))
    assert payload["turns"] == len(known) and payload["questions"] == len(keep["qa"]) > 0
    for form in ("float32", "shipped", "int8"):
        assert payload["single_query_ms"][form] > 0 and payload["batch_turns_per_s"][form] > 0
        assert all(0.0 <= v <= 1.0 for v in payload["dense_retrieval"][form].values())
    shipped, int8 = payload["cosine_to_float32"]["shipped"], payload["cosine_to_float32"]["int8"]
    assert 0.9999 <= shipped["min"] <= shipped["median"] <= 1.0 + 1e-6  # float16 weights, float32 compute
    assert 0.97 < int8["min"] <= int8["median"] < 1.0
    assert 0.0 < payload["top10_overlap"]["int8"] <= payload["top10_overlap"]["shipped"] <= 1.0
    assert payload["shipped_model"].endswith("model") and payload["shipped_precision"] == "float16-weights"
    assert payload["devmem_dense"]["devmem"]["queries"] == len(queries) > 0
    for form in ("shipped", "int8"):
        assert set(payload["differences"][form]) >= {"locomo mrr", "devmem hit@5", "devmem mrr"}
        assert payload["within_tolerance"][form] == all(d >= -0.005 for d in payload["differences"][form].values())
    markdown = (tmp_path / "out" / "embed_precision.md").read_text(encoding="utf-8")
    assert "| int8 copy (opt-in) |" in markdown and "| float32 (the export) |" in markdown and "| devmem |" in markdown
    assert "tolerance" in markdown and "Shipped: the `float16-weights` form" in markdown
