"""eval/entities.py end to end on its own stream: the entity views answer every aggregate question exactly, and
recall's results (read as an agent would) miss the counts and the maximum."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import entities


@pytest.mark.slow
def test_entity_views_answer_the_aggregate_questions_that_ranking_misses(tmp_path: Path) -> None:
    assert entities.main(["--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "entities.json").read_text())["questions"]
    assert all(r["entity_ok"] and r["fact_ids"] for r in rows)
    missed = {r["operator"] for r in rows if not r["recall_ok"]}
    assert {"count", "max"} <= missed
    assert (tmp_path / "entities.md").read_text().count("✓") >= len(rows)
