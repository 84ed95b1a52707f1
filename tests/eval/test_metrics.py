"""The pure metric functions of eval/metrics.py against hand-computed values."""

from __future__ import annotations

import pytest

from eval.metrics import (
    abstention_scores,
    all_in_top_k,
    dedupe,
    hit_at_k,
    kendall_tau,
    mean,
    recall_at_k,
    reciprocal_rank,
    stale_leak_rate,
)

RANKED = ["a", "b", "c", "d", "e", "f"]


def test_recall_at_k_counts_share_of_relevant_in_top_k() -> None:
    assert recall_at_k(RANKED, {"b", "e", "z"}, 1) == 0.0
    assert recall_at_k(RANKED, {"b", "e", "z"}, 2) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, {"b", "e", "z"}, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, ["a", "a"], 1) == 1.0  # duplicates in the gold count once
    assert recall_at_k([], {"a"}, 10) == 0.0


def test_recall_at_k_needs_relevant_items() -> None:
    with pytest.raises(ValueError):
        recall_at_k(RANKED, set(), 5)


def test_hit_and_all_in_top_k() -> None:
    assert hit_at_k(RANKED, {"c"}, 2) == 0.0
    assert hit_at_k(RANKED, {"c"}, 3) == 1.0
    assert all_in_top_k(RANKED, {"a", "e"}, 4) == 0.0
    assert all_in_top_k(RANKED, {"a", "e"}, 5) == 1.0


def test_reciprocal_rank_uses_first_relevant() -> None:
    assert reciprocal_rank(RANKED, {"c", "f"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, {"a"}) == 1.0
    assert reciprocal_rank(RANKED, {"z"}) == 0.0
    # MRR over three queries: (1/3 + 1 + 0) / 3
    assert mean([1 / 3, 1.0, 0.0]) == pytest.approx(4 / 9)


def test_kendall_tau_hand_computed() -> None:
    gold = ["n1", "n2", "n3", "n4"]
    assert kendall_tau(["n1", "x", "n2", "n3", "n4"], gold) == 1.0
    assert kendall_tau(["n4", "n3", "n2", "n1"], gold) == -1.0
    # ranked order n2, n1, n3, n4: pairs (n1,n2) discordant, the other five concordant -> (5 - 1) / 6
    assert kendall_tau(["n2", "n1", "n3", "n4"], gold) == pytest.approx(4 / 6)
    # only n3 and n1 found, in the wrong order: one discordant pair
    assert kendall_tau(["n3", "y", "n1"], gold) == -1.0


def test_kendall_tau_undefined_below_two_found() -> None:
    assert kendall_tau(["n2", "x"], ["n1", "n2", "n3"]) is None
    assert kendall_tau([], ["n1", "n2"]) is None


def test_stale_leak_rate_looks_at_top1_only() -> None:
    cases = [
        (["old", "new"], {"old"}),  # leak
        (["new", "old"], {"old"}),  # stale only at rank 2: no leak
        ([], {"old"}),  # abstained: no leak
        (["other"], {"old", "older"}),  # no leak
    ]
    assert stale_leak_rate(cases) == pytest.approx(1 / 4)
    assert stale_leak_rate([]) is None


def test_abstention_scores() -> None:
    # (abstained, answerable): 2 of 3 unanswerable abstained, 1 of 4 answerable abstained
    cases = [(True, False), (True, False), (False, False), (True, True), (False, True), (False, True), (False, True)]
    scores = abstention_scores(cases)
    assert scores.recall == pytest.approx(2 / 3)
    assert scores.precision == pytest.approx(2 / 3)
    assert scores.false_rate == pytest.approx(1 / 4)
    assert abstention_scores([(False, True)]).precision is None


def test_dedupe_and_mean() -> None:
    assert dedupe(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]
    assert mean([None, 1.0, 0.0]) == 0.5
    assert mean([]) is None
