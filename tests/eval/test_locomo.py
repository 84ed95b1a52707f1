"""eval/locomo.py's comparison of recall with the plain channels it contains, per category (issue 45)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eval.locomo import channel_margins, render

RESULTS = Path(__file__).resolve().parents[2] / "eval" / "results" / "locomo.json"


def _table(value: float) -> dict[str, float]:
    metrics = {m: value for m in ("recall@1", "recall@5", "recall@10", "hit@5", "mrr")}
    return {"n": 10, **metrics, "abstained": 0.0}


def _payload(ours: dict[str, float], dense: dict[str, float], rrf: dict[str, float]) -> dict[str, Any]:
    return {
        "system": {"by_category": {c: _table(v) for c, v in ours.items()}},
        "ablation": {
            "dense only": {c: _table(v) for c, v in dense.items()},
            "fused (RRF k=60)": {c: _table(v) for c, v in rrf.items()},
        },
    }


def test_margin_is_over_the_best_channel_and_names_a_category_below_it() -> None:
    payload = _payload(
        ours={"temporal": 0.8, "single-hop": 0.5},
        dense={"temporal": 0.6, "single-hop": 0.55},
        rrf={"temporal": 0.7, "single-hop": 0.4},
    )
    rows = {(r[0], r[1]): r for r in channel_margins(payload)}
    assert rows[("temporal", "recall@10")][2:] == [0.8, 0.6, 0.7, 0.8 - 0.7]
    assert rows[("single-hop", "mrr")][-1] < 0  # dense 0.55 beats recall's 0.5
    assert len(rows) == 2 * 3


def test_no_ablation_no_section() -> None:
    assert channel_margins({"system": {"by_category": {"overall": _table(0.5)}}, "ablation": {}}) == []


def test_render_says_which_category_falls_below() -> None:
    payload = json.loads(RESULTS.read_text(encoding="utf-8"))  # a real run's payload
    assert "At or above every plain channel in every category." in render(payload)
    payload["ablation"]["dense only"]["temporal"]["mrr"] = payload["system"]["by_category"]["temporal"]["mrr"] + 0.01
    assert "Below a plain channel: temporal mrr." in render(payload)
