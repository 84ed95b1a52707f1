"""eval/variants.py: the queries a ranking variant wins and loses against another, read from a --rankers run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.variants import main


def _run(tmp_path: Path) -> Path:
    data = tmp_path / "split"
    data.mkdir()
    notes = {"n1": "billing-api listens on 8081.", "n2": "billing-api moved to 9090.", "n3": "The office has a plant."}
    (data / "writes.jsonl").write_text("".join(json.dumps({"id": k, "content": v}) + "\n" for k, v in notes.items()))
    queries = [
        {"qid": "q1", "type": "current", "query": "billing-api port?", "gold_ids": ["n2"]},
        {"qid": "q2", "type": "as_of", "query": "billing-api port in May?", "gold_ids": ["n1"]},
        {"qid": "q3", "type": "current", "query": "office plant?", "gold_ids": ["n3"]},
        {"qid": "q4", "type": "abstain", "query": "who runs payroll?", "gold_ids": []},
    ]
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    result = {
        "args": {"data": str(data)},
        "ranker_queries": {
            "base": {"q1": ["n1", "n2"], "q2": ["n1"], "q3": ["n3"], "q4": ["n3"]},
            "variant": {"q1": ["n2", "n1"], "q2": ["n2", "n1"], "q3": ["n3"], "q4": ["n1"]},
        },
    }
    path = tmp_path / "devmem-text.json"
    path.write_text(json.dumps(result))
    return path


def test_lists_the_queries_whose_first_answer_moved_with_both_answers(tmp_path: Path, capsys) -> None:
    path = _run(tmp_path)
    assert main([str(path), "--base", "base", "--variant", "variant"]) == 0
    out = capsys.readouterr().out
    assert "- as_of: +0 / -1" in out and "- current: +1 / -0" in out
    assert "won q1 (current) billing-api port?" in out and "lost q2 (as_of)" in out
    assert "base: billing-api listens on 8081." in out and "variant: billing-api moved to 9090." in out
    assert "q3" not in out and "q4" not in out  # unchanged, and an abstention question has nothing to win
    assert main([str(path), "--base", "base", "--variant", "variant", "--type", "current"]) == 0
    assert "q2" not in capsys.readouterr().out


def test_a_ranker_the_run_did_not_keep_is_a_clear_error(tmp_path: Path, capsys) -> None:
    path = _run(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main([str(path), "--base", "base", "--variant", "restate"])
    assert exit_info.value.code == 2
    assert "no answers kept for restate; rankers in the file: base, variant" in capsys.readouterr().err
