"""The ablation's rankers (eval/ablation.py) run the real read path on a real store: every one of them answers."""

from __future__ import annotations

from chronomem.service import MemoryService
from chronomem.tools.remember import remember
from eval.ablation import RANKERS, QueryContext, run_rankers, slice_filter


def test_every_ranker_of_the_ablation_answers_from_the_store(svc: MemoryService) -> None:
    remember(svc, "The billing-api service listens on port 8081.", project="shop")
    remember(svc, "We bought a new espresso machine for the office.", project="shop")
    now = svc.now()
    ctx = QueryContext(svc, "Which port does billing-api listen on?", slice_filter(svc, now, now, "shop"), project="shop")
    answers = run_rankers(ctx, RANKERS, 5)
    assert set(answers) == {r.name for r in RANKERS}
    for name, records in answers.items():
        assert records, name
    full = answers[RANKERS[-1].name]  # the last row is recall's own ranking
    assert "8081" in full[0].content
