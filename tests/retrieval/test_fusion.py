"""Pure scoring: reciprocal rank fusion and token estimates."""

from __future__ import annotations

import pytest

from chronomem.retrieval.fusion import RRF_K, estimate_tokens, rrf


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


def test_token_estimate() -> None:
    assert estimate_tokens("") == 1
    assert estimate_tokens("x" * 400) == 100
