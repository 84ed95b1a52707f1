"""`DenseMatrix`: the read index's vectors, for a top-k by cosine at a quarter of the memory.

Held in memory as int8 codes with one scale per row (a row's largest component maps to ±127),
~0.4 kB a row instead of 1.5 kB of float32. The float32 rows themselves are written to an unnamed
temporary file in the store's directory and read back with `pread` only for the few rows a search
needs: they live in the operating system's page cache (shared, evictable), not in the process.

Up to `SHORTLIST_MIN_ROWS` rows a search is exact: every row's product with the query is computed
from its codes, converted a block at a time (int8 → float32 is a fast cast, then one BLAS product per
block); rounding moves a row's product by at most `scale / 2 · Σ|query|`. The best candidates by that
estimate are re-scored from their float32 rows, and any row whose estimate plus its bound could still
reach the `limit`-th exact score is re-scored too, so the result is the exact top-k.

Above it, converting every row's codes is most of a recall (~5 ms of ~15 at 100k rows), so a search
first shortlists rows by a 64-dimensional projection of the vectors (the principal axes of a sample
of the rows, refitted each time the matrix doubles), itself held as int8 codes with a scale per row
(64 bytes a row): a sixth of the width to convert and multiply. The shortlist (`SHORTLIST` rows, more
for a large `limit`) then goes through the exact steps above. Measured on 100k real vectors (LoCoMo
turns varied), the shortlist keeps 99.8% of the exact top 50; the returned scores are always the exact
float32 ones.

Without `os.pread` (Windows) or a writable store directory the float32 rows stay in memory.

A matrix can also start from a snapshot (search/snapshot.py, `restore`): its codes, scales and projection as
arrays over the snapshot file's memory map (copy-on-write: pages are the page cache's until written), its float32
rows read from the snapshot file with `pread` as from the spill file (`RowFile`). Not through the map: the kernel
maps a file's page cache in large folios, so touching one row there made ~1.7 MB resident (64 spread checksum
reads mapped 108 of the 147 MB of a 100k store's vectors); a `pread` copies the row and maps nothing. Rows below
the snapshot's count come from it, rows appended after from the spill file.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: Rows converted from int8 per BLAS call (the float32 block stays in the CPU caches).
BLOCK_ROWS = 4096
#: Candidates re-scored exactly before the bound check: `OVERSAMPLE` times `limit`, at least `limit` + `MIN_EXTRA`.
#: The bound check keeps the result exact at any value; 2 reads half of 4's float32 rows (recall at 100k rows:
#: 0.91 -> 0.46 ms of row reads, eval/bench_latency's store and queries) and 1 reads no fewer.
OVERSAMPLE = 2
MIN_EXTRA = 64
#: Slack added to each row's rounding bound for float32 accumulation error.
SLACK = 1e-5
#: Rows from which a search shortlists by the projection first (below, every row's codes are converted).
SHORTLIST_MIN_ROWS = 50_000
#: Width of the projection the shortlist is picked by.
PROJECTED_DIMS = 64
#: Rows shortlisted: at least this many, and `SHORTLIST_PER_RESULT` per result asked for.
SHORTLIST = 2_000
SHORTLIST_PER_RESULT = 40
#: Rows sampled to fit the projection's axes.
FIT_SAMPLE = 20_000
#: Projected rows converted from int8 per BLAS call.
PROJECTED_BLOCK_ROWS = 16_384
#: `largest` reads its threshold off every `SAMPLE_STRIDE`-th score.
SAMPLE_STRIDE = 8


class DenseMatrix:
    """Unit-length vectors by row number: int8 codes and scales in memory, float32 rows in a spill file."""

    def __init__(self, dim: int, spill_dir: Path | None = None) -> None:
        self.dim = dim
        self.n = 0
        cap = 1024
        self._codes = np.zeros((cap, dim), dtype=np.int8)
        self._scales = np.zeros(cap, dtype=np.float32)
        self._block = np.empty((BLOCK_ROWS, dim), dtype=np.float32)
        self._axes: np.ndarray | None = None  # (dim, PROJECTED_DIMS) once fitted
        self._fitted_at = 0  # rows when the axes were fitted
        self._projected = np.zeros((0, PROJECTED_DIMS), dtype=np.int8)  # each row's projection, as int8 codes
        self._projected_scales = np.zeros(0, dtype=np.float32)
        self._projected_block = np.empty((0, PROJECTED_DIMS), dtype=np.float32)  # made with the axes
        self._file: Any = None
        self._exact: np.ndarray | None = None  # float32 rows when there is no spill file
        self._base: RowFile | np.ndarray | None = None  # float32 rows 0 … base_rows-1 from a snapshot (`restore`)
        self._base_rows = 0
        if spill_dir is not None and hasattr(os, "pread"):
            try:
                self._file = RowFile(tempfile.TemporaryFile(prefix="chronomem-vectors-", dir=spill_dir), 0, dim)  # noqa: SIM115 - open for the matrix's life (close())
            except OSError as exc:
                log.debug("no spill file in %s (%s): float32 rows stay in memory", spill_dir, exc)
        if self._file is None:
            self._exact = np.zeros((cap, dim), dtype=np.float32)

    @property
    def spilled(self) -> bool:
        """True when the float32 rows live in the spill file, not in the process."""
        return self._file is not None

    def close(self) -> None:
        for rows in (self._file, self._base):
            if isinstance(rows, RowFile):
                rows.close()

    def append(self, rows: np.ndarray) -> None:
        """Add unit-length float32 rows (zero rows allowed) after the last one."""
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        count = rows.shape[0]
        first, end = self.n, self.n + count
        self._grow(end)
        self._codes[first:end], self._scales[first:end] = int8_codes(rows)
        if self._file is not None:
            self._file.write(first, rows)
        else:
            assert self._exact is not None
            self._exact[first:end] = rows
        self.n = end
        if self._axes is not None and end < 2 * self._fitted_at:
            self._project(first, end)
        elif end >= SHORTLIST_MIN_ROWS and self.dim > 2 * PROJECTED_DIMS:
            self._fit_projection()

    def _grow(self, need: int) -> None:
        cap = len(self._scales)
        if need <= cap:
            return
        cap = max(need, cap * 2)
        self._codes = resized(self._codes, cap)
        self._scales = resized(self._scales, cap)
        if self._exact is not None:
            self._exact = resized(self._exact, cap)
        if self._axes is not None:
            self._projected = resized(self._projected, cap)
            self._projected_scales = resized(self._projected_scales, cap)

    def _decoded(self, rows: slice | np.ndarray) -> np.ndarray:
        """`rows` (a slice or row numbers) rebuilt from their codes (float32, within the rounding bound of the originals)."""
        return self._codes[rows].astype(np.float32) * self._scales[rows, None]

    def _fit_projection(self) -> None:
        """Fit the projection's axes to a sample of the rows (their principal directions) and project every row."""
        rng = np.random.default_rng(0)  # a fixed sample: the same rows give the same shortlists
        sample = np.sort(rng.choice(self.n, min(FIT_SAMPLE, self.n), replace=False))
        decoded = self._decoded(sample)
        centred = decoded - decoded.mean(axis=0)
        _, vectors = np.linalg.eigh(centred.T @ centred)  # the covariance's eigenvectors, ascending; no U as in an SVD
        self._axes = np.ascontiguousarray(vectors[:, ::-1][:, :PROJECTED_DIMS], dtype=np.float32)
        self._projected = np.zeros((len(self._scales), PROJECTED_DIMS), dtype=np.int8)
        self._projected_scales = np.zeros(len(self._scales), dtype=np.float32)
        self._projected_block = np.empty((PROJECTED_BLOCK_ROWS, PROJECTED_DIMS), dtype=np.float32)
        for start in range(0, self.n, BLOCK_ROWS):
            self._project(start, min(start + BLOCK_ROWS, self.n))
        self._fitted_at = self.n

    def _project(self, start: int, end: int) -> None:
        """Rows `start:end` projected on the axes, kept as int8 codes with a scale each (a quarter of float32's
        memory: 64 bytes a row; rounding moves a shortlist score far less than the projection itself does)."""
        assert self._axes is not None
        self._projected[start:end], self._projected_scales[start:end] = int8_codes(self._decoded(slice(start, end)) @ self._axes)

    def rows(self, indices: np.ndarray) -> np.ndarray:
        """The float32 rows at `indices`, in that order (a fresh array)."""
        indices = np.asarray(indices, dtype=np.int64)
        if self._exact is not None and self._base is None:
            return self._exact[indices]
        out = np.empty((len(indices), self.dim), dtype=np.float32)
        held = indices < self._base_rows
        for source, where in ((self._base, held), (self._exact if self._exact is not None else self._file, ~held)):
            if not where.any():
                continue
            if isinstance(source, RowFile):
                out[where] = source.read(indices[where])
            else:
                assert source is not None
                out[where] = source[indices[where]]
        return out

    def estimates(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Every row's (or `rows`') product with `query` from its int8 codes (within `bounds` of the exact product)."""
        if rows is not None:
            return (self._codes[rows].astype(np.float32) @ query) * self._scales[rows]
        return int8_products(self._codes, self._scales, self.n, query, self._block)

    def pair_products(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The products of rows `a[i]` and `b[i]`, estimated from their int8 codes (cosines: rows are unit length)."""
        return np.einsum("ij,ij->i", self._decoded(a), self._decoded(b))

    def bounds(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Per row (or per one of `rows`), the most its estimate can differ from its exact product with `query`."""
        scales = self._scales[: self.n] if rows is None else self._scales[rows]
        return scales * np.float32(0.5 * float(np.abs(query).sum())) + np.float32(SLACK)

    def shortlist(self, query: np.ndarray, keep: np.ndarray, size: int) -> np.ndarray | None:
        """The `size` rows among `keep` whose projections best match the query's, or None when every kept row
        should be searched (no projection yet, or no more kept rows than `size`)."""
        if self._axes is None:
            return None
        kept = keep[: self.n]
        if int(kept.sum()) <= size:
            return None
        scores = int8_products(self._projected, self._projected_scales, self.n, query @ self._axes, self._projected_block)
        scores[~kept] = -np.inf
        return np.sort(largest(scores, size))

    def top(self, query: np.ndarray, keep: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The top-`limit` rows among `keep` by product with the unit `query`, best first: (row numbers, exact
        scores, their float32 rows). Exact up to `SHORTLIST_MIN_ROWS` rows, among a shortlist above."""
        query = np.ascontiguousarray(query, dtype=np.float32)
        available = int(keep[: self.n].sum())
        k = min(limit, available)
        if k <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), np.empty((0, self.dim), np.float32)
        candidates = self.shortlist(query, keep, max(SHORTLIST, SHORTLIST_PER_RESULT * limit))
        if candidates is None:
            candidates = np.arange(self.n)
            estimate = self.estimates(query)
            estimate[~keep[: self.n]] = -np.inf
            bounds = self.bounds(query)
        else:
            available = len(candidates)
            estimate = self.estimates(query, candidates)
            bounds = self.bounds(query, candidates)
        best = top_rows(estimate, max(OVERSAMPLE * limit, limit + MIN_EXTRA), available)  # positions in candidates
        first = candidates[best]
        vectors = self.rows(first)
        exact = vectors @ query
        if len(first) < available:  # rows left out whose estimate could still reach the k-th exact score
            kth = np.partition(exact, len(exact) - k)[len(exact) - k]
            reach = estimate + bounds >= kth
            reach[best] = False
            more = candidates[np.flatnonzero(reach)]
            if len(more):
                extra = self.rows(more)
                first = np.concatenate([first, more])
                vectors = np.concatenate([vectors, extra])
                exact = np.concatenate([exact, extra @ query])
        order = np.lexsort((first, -exact))[:k]  # best first; equal scores by row number
        return first[order], exact[order], vectors[order]


    def state(self) -> dict[str, Any]:
        """What a snapshot needs (search/snapshot.py), taken under the read index's lock: the count and references
        to the arrays as they are. Rows below the count never change in place (a refit or a growth makes new
        arrays), so the arrays stay valid for reading those rows after the lock is let go."""
        return {
            "matrix": self,
            "n": self.n,
            "codes": self._codes,
            "scales": self._scales,
            "axes": self._axes,
            "fitted_at": self._fitted_at,
            "projected": self._projected if self._axes is not None else None,
            "projected_scales": self._projected_scales if self._axes is not None else None,
        }

    @classmethod
    def restore(
        cls,
        dim: int,
        spill_dir: Path | None,
        n: int,
        codes: np.ndarray,
        scales: np.ndarray,
        vectors: RowFile | np.ndarray,
        axes: np.ndarray | None,
        fitted_at: int,
        projected: np.ndarray | None,
        projected_scales: np.ndarray | None,
    ) -> DenseMatrix:
        """A matrix of `n` rows from a snapshot's arrays (`codes`, `scales`, `projected*`: `n` rows or more, those
        after `n` free capacity; `vectors`: the `n` float32 rows, in a file or an array), used as they are (no copy);
        the matrix owns a `RowFile` given (`close`)."""
        matrix = cls(dim, spill_dir)
        matrix.n = n
        matrix._codes, matrix._scales = codes, scales
        matrix._base, matrix._base_rows = vectors, n
        if matrix._exact is not None:
            matrix._exact = np.zeros((len(scales), dim), dtype=np.float32)
        if axes is not None and projected is not None and projected_scales is not None:
            matrix._axes, matrix._fitted_at = axes, fitted_at
            matrix._projected, matrix._projected_scales = projected, projected_scales
            matrix._projected_block = np.empty((PROJECTED_BLOCK_ROWS, PROJECTED_DIMS), dtype=np.float32)
        return matrix


class RowFile:
    """Float32 rows of one width stored in a file from `offset` on, read and written with `pread` / `pwrite`: they
    stay in the operating system's page cache, never in the process's memory. Owns `handle` (`close`)."""

    def __init__(self, handle: Any, offset: int, dim: int) -> None:
        self._handle = handle
        self._offset = offset
        self._width = dim * 4
        self._dim = dim

    def close(self) -> None:
        self._handle.close()

    def write(self, first: int, rows: np.ndarray) -> None:
        """Rows `first`, `first` + 1, … set to `rows` (float32, C order)."""
        data, at = memoryview(np.ascontiguousarray(rows, dtype=np.float32)).cast("B"), self._offset + first * self._width
        while data:  # a write may take fewer bytes than offered
            written = os.pwrite(self._handle.fileno(), data, at)
            data, at = data[written:], at + written

    def read(self, rows: np.ndarray) -> np.ndarray:
        """The rows at `rows`, in that order; one read for a run of consecutive rows (a snapshot's write)."""
        count = len(rows)
        if count > 1 and int(rows[-1]) - int(rows[0]) == count - 1 and bool(np.all(np.diff(rows) == 1)):
            return self._read_run(int(rows[0]), count)
        out = np.empty((count, self._dim), dtype=np.float32)
        for i, row in enumerate(rows.tolist()):
            out[i] = self._read_run(row, 1)[0]
        return out

    def _read_run(self, first: int, count: int) -> np.ndarray:
        size = count * self._width
        data = os.pread(self._handle.fileno(), size, self._offset + first * self._width)
        if len(data) != size:
            raise OSError(f"the stored vectors end before row {first + count - 1}")
        return np.frombuffer(data, dtype=np.float32).reshape(count, self._dim)


def int8_codes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 codes and a scale per row (the row's largest component maps to ±127; a zero row: scale 0)."""
    rows = np.asarray(rows, dtype=np.float32)
    peak = np.abs(rows).max(axis=1) if len(rows) else np.zeros(0, dtype=np.float32)
    scales = (peak / np.float32(127.0)).astype(np.float32)
    codes = np.zeros_like(rows)
    np.divide(rows, scales[:, None], out=codes, where=scales[:, None] > 0)
    return np.clip(np.rint(codes), -127, 127).astype(np.int8), scales


def int8_products(codes: np.ndarray, scales: np.ndarray, n: int, query: np.ndarray, block: np.ndarray) -> np.ndarray:
    """The first `n` rows' products with `query` from their int8 codes and scales: a block of rows at a time is
    cast to float32 into `block` (which stays in the CPU caches) and multiplied by BLAS."""
    out = np.empty(n, dtype=np.float32)
    rows = len(block)
    for start in range(0, n, rows):
        end = min(start + rows, n)
        part = block[: end - start]
        np.copyto(part, codes[start:end], casting="unsafe")
        np.dot(part, query, out=out[start:end])
    out *= scales[:n]
    return out


def top_rows(scores: np.ndarray, limit: int, available: int) -> np.ndarray:
    """Indices of the `limit` highest finite scores (at most `available` of them), best first; of equal scores,
    the higher index first (`largest`)."""
    k = min(limit, available)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < len(scores):
        part = largest(scores, k)
    else:
        part = np.arange(len(scores))
    part = part[np.isfinite(scores[part])]
    return part[np.lexsort((-part, -scores[part]))]  # best first; equal scores, the higher index first


def largest(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the `k` largest of `scores` (0 < k < len(scores)), in no order; of equal scores at the cut,
    the highest indices: rows are numbered in write order, and of equally good matches a memory's newest is
    the likelier to hold (before, the pick among them was whatever the partition happened to leave).

    Partitioning a whole array of 100k scores took ~1 ms of an ~18 ms recall. When there are many more scores
    than `k` (8·k: the ~2·k kept are then at most a quarter), the scores at or above a threshold are partitioned
    instead: the value of every `SAMPLE_STRIDE`-th score that about 2·k of all scores would reach if the sample
    were a fair one. It need not be: if fewer than `k` reach it, the whole array is partitioned, so the answer
    is always exact.
    """
    among = None
    if len(scores) > 8 * k:
        sample = scores[::SAMPLE_STRIDE]
        rank = len(sample) - (2 * k) // SAMPLE_STRIDE - 1
        reach = np.flatnonzero(scores >= np.partition(sample, rank)[rank])
        if len(reach) >= k:
            among = reach
    values = scores if among is None else scores[among]
    part = np.argpartition(values, len(values) - k)[len(values) - k :]
    cut = values[part[0]]  # the k-th largest: argpartition puts it first
    above = part[values[part] > cut]
    tied = np.flatnonzero(values == cut)
    if len(above) + len(tied) > k:
        part = np.concatenate([above, tied[len(tied) - (k - len(above)) :]])
    return part if among is None else among[part]


def resized(array: np.ndarray, rows: int) -> np.ndarray:
    """`array` with `rows` rows: its own first, zeros after (a growing buffer's next size)."""
    grown = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown
