"""The dense matrix's top-k is the exact float32 top-k, from int8 codes and spilled float32 rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chronomem.storage import densematrix
from chronomem.storage.densematrix import DenseMatrix


def unit_rows(rng: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def near_duplicates(rng: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    """Rows a hair apart: their int8 estimates misorder them, only the exact re-scoring tells them apart."""
    base = unit_rows(rng, 5, dim)
    rows = base[rng.integers(0, 5, n)] + rng.normal(0, 0.002, (n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def brute_force(rows: np.ndarray, query: np.ndarray, keep: np.ndarray, k: int) -> list[int]:
    scores = np.where(keep, rows @ query, -np.inf)
    order = np.lexsort((np.arange(len(rows)), -scores))
    return [int(i) for i in order[: min(k, int(keep.sum()))]]


@pytest.mark.parametrize("spill", [True, False])
def test_top_is_the_exact_top_k_even_among_near_duplicates(tmp_path: Path, spill: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(densematrix, "BLOCK_ROWS", 257)  # several blocks and a ragged last one
    rng = np.random.default_rng(3)
    rows = near_duplicates(rng, 3000)
    matrix = DenseMatrix(32, tmp_path if spill else None)
    for start in range(0, 3000, 700):  # appended in parts, growing the arrays
        matrix.append(rows[start : start + 700])
    assert matrix.spilled is spill
    assert matrix.n == 3000
    for trial in range(20):
        query = rows[rng.integers(0, 3000)] + rng.normal(0, 0.01, 32).astype(np.float32)
        query /= np.linalg.norm(query)
        keep = rng.random(3000) < 0.7
        found, scores, vectors = matrix.top(query, keep, 25)
        assert found.tolist() == brute_force(rows, query, keep, 25)
        assert scores == pytest.approx(rows[found] @ query, abs=1e-6)
        assert np.array_equal(vectors, rows[found])


def test_the_bound_check_rescues_rows_the_estimate_left_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(densematrix, "OVERSAMPLE", 1)
    monkeypatch.setattr(densematrix, "MIN_EXTRA", 0)  # re-score only the estimate's own top k first
    rng = np.random.default_rng(8)
    rows = near_duplicates(rng, 2000)
    matrix = DenseMatrix(32, tmp_path)
    matrix.append(rows)
    keep = np.ones(2000, dtype=bool)
    differed = 0
    for _ in range(20):
        query = rows[rng.integers(0, 2000)]
        estimate_top = np.argsort(-matrix.estimates(query), kind="stable")[:10].tolist()
        truth = brute_force(rows, query, keep, 10)
        differed += sorted(estimate_top) != sorted(truth)
        assert matrix.top(query, keep, 10)[0].tolist() == truth
    assert differed, "the data should make the int8 estimate alone pick other rows"


def test_codes_take_a_quarter_of_the_memory_and_zero_rows_stay_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    rows = unit_rows(rng, 100)
    rows[7] = 0.0
    matrix = DenseMatrix(32, tmp_path)
    matrix.append(rows)
    assert matrix._codes.dtype == np.int8 and matrix._exact is None
    assert np.array_equal(matrix.rows(np.array([7, 3, 99])), rows[[7, 3, 99]])
    query = rows[3]
    bounds = matrix.bounds(query)
    assert np.all(np.abs(matrix.estimates(query) - rows @ query) <= bounds)
    assert matrix.estimates(query)[7] == 0.0
    found, _, _ = matrix.top(query, np.ones(100, dtype=bool), 100)
    assert found[0] == 3 and sorted(found.tolist()) == list(range(100))
    empty, _, _ = matrix.top(query, np.zeros(100, dtype=bool), 5)
    assert len(empty) == 0
    matrix.close()
