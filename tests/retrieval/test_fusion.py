"""Pure scoring: reciprocal rank fusion, the abstention gate, token estimates."""

from __future__ import annotations

import pytest

from chronomem.retrieval.fusion import RRF_K, estimate_tokens, rrf, should_abstain


def test_rrf_scores_by_formula_and_records_ranks() -> None:
    fused = rrf({"dense": ["a", "b"], "lexical": ["b", "c"]})
    by_id = {f.id: f for f in fused}
    assert by_id["b"].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert by_id["a"].score == pytest.approx(1 / (RRF_K + 1))
    assert by_id["b"].ranks == {"dense": 2, "lexical": 1}
    assert [f.id for f in fused] == ["b", "a", "c"]


def test_rrf_weights_and_duplicates() -> None:
    fused = rrf({"dense": ["a", "a", "b"], "lexical": ["b"]}, weights={"dense": 3.0, "lexical": 1.0})
    by_id = {f.id: f for f in fused}
    assert by_id["a"].score == pytest.approx(3 / (RRF_K + 1))
    assert by_id["b"].ranks["dense"] == 2  # duplicates do not take a rank
    assert by_id["b"].score == pytest.approx(3 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert [f.id for f in fused] == ["b", "a"]


def test_rrf_ties_are_deterministic() -> None:
    assert [f.id for f in rrf({"x": ["b"], "y": ["a"]})] == ["a", "b"]


@pytest.mark.parametrize(
    ("dense", "lexical", "abstain"),
    [(None, 0, True), (None, 3, False), (0.9, 0, False), (0.35, 2, False), (0.35, 0, True), (0.1, 5, True)],
)
def test_abstention_gate(dense: float | None, lexical: int, abstain: bool) -> None:
    assert should_abstain(dense, lexical) is abstain


def test_token_estimate() -> None:
    assert estimate_tokens("") == 1
    assert estimate_tokens("x" * 400) == 100
