"""The dense matrix's top-k is the exact float32 top-k, from int8 codes and spilled float32 rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chronomem.search import densematrix
from chronomem.search.densematrix import DenseMatrix


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


def low_rank_rows(rng: np.random.Generator, n: int, dim: int = 48, rank: int = 6) -> np.ndarray:
    """Rows whose variance lies mostly in a few directions, as sentence embeddings' does."""
    mixing = rng.standard_normal((rank, dim)).astype(np.float32)
    rows = rng.standard_normal((n, rank)).astype(np.float32) @ mixing + rng.normal(0, 0.3, (n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def small_shortlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(densematrix, "SHORTLIST_MIN_ROWS", 2_000)
    monkeypatch.setattr(densematrix, "PROJECTED_DIMS", 8)
    monkeypatch.setattr(densematrix, "SHORTLIST", 300)
    monkeypatch.setattr(densematrix, "SHORTLIST_PER_RESULT", 10)
    monkeypatch.setattr(densematrix, "FIT_SAMPLE", 1_500)


@pytest.mark.usefixtures("small_shortlist")
def test_a_large_matrix_searches_a_shortlist_that_keeps_the_best_rows(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows = low_rank_rows(rng, 6_000)
    matrix = DenseMatrix(48, tmp_path)
    matrix.append(rows[:1_500])
    assert matrix._axes is None  # below SHORTLIST_MIN_ROWS: every row is searched
    matrix.append(rows[1_500:3_000])
    assert matrix._axes is not None and matrix._fitted_at == 3_000
    matrix.append(rows[3_000:])  # past twice the fitted size: fitted again
    assert matrix._fitted_at == 6_000
    keep = rng.random(6_000) < 0.8
    kept_share = []
    for _ in range(30):
        query = rows[rng.integers(0, 6_000)] + rng.normal(0, 0.05, 48).astype(np.float32)
        query /= np.linalg.norm(query)
        short = matrix.shortlist(query, keep, 300)
        assert short is not None and len(short) == 300 and keep[short].all()
        found, scores, vectors = matrix.top(query, keep, 20)
        assert keep[found].all() and len(found) == 20
        assert scores == pytest.approx(rows[found] @ query, abs=1e-6)  # the scores are the exact ones
        assert np.array_equal(vectors, rows[found])
        truth = brute_force(rows, query, keep, 20)
        assert found[0] == truth[0]
        kept_share.append(len(set(found.tolist()) & set(truth)) / 20)
    assert np.mean(kept_share) >= 0.95


@pytest.mark.usefixtures("small_shortlist")
def test_a_filter_keeping_fewer_rows_than_the_shortlist_is_searched_exactly(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    rows = low_rank_rows(rng, 4_000)
    matrix = DenseMatrix(48, tmp_path)
    matrix.append(rows)
    keep = np.zeros(4_000, dtype=bool)
    keep[rng.choice(4_000, 250, replace=False)] = True
    query = rows[17]
    assert matrix.shortlist(query, keep, 300) is None
    assert matrix.top(query, keep, 25)[0].tolist() == brute_force(rows, query, keep, 25)


@pytest.mark.parametrize("size", [50, 1_000, 40_000, 120_000])
def test_largest_is_the_exact_top_k_and_breaks_ties_toward_the_newest_rows(size: int) -> None:
    """The sampled threshold only narrows where the partition looks: the answer is the top k of a full sort by
    (score descending, index descending), with ties (rounded scores), masked rows (-inf) and k large or small."""
    rng = np.random.default_rng(size)
    for trial in range(12):
        scores = np.round(rng.standard_normal(size), 1 if trial % 2 else 4).astype(np.float32)
        if trial % 3 == 0:
            scores[rng.random(size) < 0.7] = -np.inf
        k = int(rng.integers(1, size))
        best_first = np.lexsort((-np.arange(size), -scores))
        assert np.array_equal(np.sort(densematrix.largest(scores, k)), np.sort(best_first[:k]))
        finite = int(np.isfinite(scores).sum())
        assert np.array_equal(densematrix.top_rows(scores, k, size), best_first[: min(k, finite)])


def test_largest_partitions_everything_when_the_sample_threshold_keeps_too_few() -> None:
    """When only the sampled scores are high, about 2·k/`SAMPLE_STRIDE` of them reach the threshold: fewer
    than k, so the whole array is partitioned."""
    scores = np.zeros(100_000, dtype=np.float32)
    sampled = scores[:: densematrix.SAMPLE_STRIDE]
    sampled[:] = np.arange(1, len(sampled) + 1)
    k = 1_000
    assert len(scores) > 8 * k  # the sampled path is tried
    got = densematrix.largest(scores, k)
    assert np.array_equal(np.sort(got), np.sort(np.lexsort((-np.arange(len(scores)), -scores))[:k]))
