"""`budget_tokens` of recall and as_of bounds the whole readable answer, not only the memories' texts."""

from __future__ import annotations

import pytest

from chronomem.retrieval.fusion import estimate_tokens
from chronomem.service import MemoryService
from chronomem.tools import as_of, recall, remember

NOTE = "the rollout uses blue green switching and health checks. "


@pytest.fixture
def notes(svc: MemoryService) -> dict[str, str]:
    """Six deployment notes of about 120 tokens each, one of about 750, and one short."""
    stored = {}
    for i in range(6):
        text = f"Deployment note {i}: " + NOTE * 8
        stored[remember(svc, text).id] = text
    long_text = "Deployment runbook: " + NOTE * 50
    stored[remember(svc, long_text).id] = long_text
    short = "Deployment rollout: blue green."
    stored[remember(svc, short).id] = short
    return stored


@pytest.mark.slow
@pytest.mark.parametrize("budget", [20, 60, 100, 160, 250, 600, 2000])
def test_recall_text_stays_within_budget(svc: MemoryService, notes: dict[str, str], budget: int) -> None:
    unbounded = recall(svc, "deployment rollout")
    result = recall(svc, "deployment rollout", budget_tokens=budget)
    text = result.text()
    if result.results:
        assert estimate_tokens(text) <= budget, text
        assert result.tokens == estimate_tokens(text)
    else:  # not even one result line fits: the answer is the one-line notice alone
        assert text == f"Relevant memories exist for this query but none fit budget_tokens={budget}."
    for item in result.results:  # whole memories only, never a cut text
        assert item.text == notes[item.id]
    assert result.truncated == (len(result.results) < len(unbounded.results))


def test_a_long_memory_is_skipped_not_cut(svc: MemoryService, notes: dict[str, str]) -> None:
    full = recall(svc, "deployment runbook", limit=20)
    runbook = next(i for i in full.results if i.text.startswith("Deployment runbook"))
    result = recall(svc, "deployment runbook", budget_tokens=400)
    assert estimate_tokens(result.text()) <= 400 and result.truncated
    assert result.results and runbook.id not in [i.id for i in result.results]
    assert "(more left out to stay within 400 tokens)" in result.message


@pytest.mark.slow
def test_a_long_query_is_quoted_short(svc: MemoryService, notes: dict[str, str]) -> None:
    query = "deployment rollout " + "with blue green switching " * 100
    result = recall(svc, query, budget_tokens=300)
    assert estimate_tokens(result.text()) <= 300 and result.results
    assert len(result.message) < 250 and result.query == query


def test_as_of_text_stays_within_budget(svc: MemoryService, notes: dict[str, str]) -> None:
    result = as_of(svc, "deployment rollout", "now", budget_tokens=200)
    assert result.results and estimate_tokens(result.text()) <= 200
