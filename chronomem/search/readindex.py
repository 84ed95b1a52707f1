"""`ReadIndex`: an in-memory copy of the `memories` table that answers the read path's searches.

LanceDB stays the store of record. A recall used to cost two LanceDB queries (the filtered ANN
search and the filtered full-text search, ~50 ms at 100k rows, each re-reading the table's state);
this copy answers both in a few milliseconds: the filter columns as NumPy arrays, the normalised
vectors as a `DenseMatrix` (int8 codes in memory, float32 rows spilled to an unnamed file in the store
directory; its top-k is exact up to 50k rows, above that taken from a shortlist that keeps 99.7% of it), an
inverted index of each row's `terms` column scored with BM25 (the column LanceDB's full-text index reads, made
by `terms.row_terms`, so code identifiers, paths and camelCase are matched whole and split; the same tokens and
the same scores as LanceDB's), and the result columns as one Arrow table.

Kept in step with the table's version, never trusted blindly:
- the store applies its own writes as they commit, when the version moved by exactly one (no
  other process wrote in between);
- any other change of version (another process's write, compaction, an index build) is caught up
  by a diff: one scan of every column a write can change on a row (all but content and vectors),
  then the new or changed rows read by id; rows gone (a purge) make it read the whole table again.

Searches whose filter has a clause the index cannot evaluate (`Filter.ops` "sql"), and tables
larger than CHRONOMEM_READ_INDEX_ROWS (2M; the copy costs ~1.6 kB of RAM per row), go to LanceDB as before.

A copy can also start from a snapshot of itself written beside the table (search/snapshot.py: `state` gives
what it holds, `restore` makes a copy of those arrays, memory-mapped), at the table version it reflects, and is
then caught up by the same diff.

Building one puts the process's BLAS on one thread (`one_blas_thread`): the dense search is a
memory-bound matrix-vector product that a second thread barely speeds up, while OpenBLAS's idle
threads spin on the core the next query's embedding needs (onnxruntime).
"""

from __future__ import annotations

import logging
import math
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.records import UTC, MemoryRecord
from chronomem.search.densematrix import DenseMatrix, resized, top_rows
from chronomem.search.terms import query_terms
from chronomem.storage.filters import Filter, micros
from chronomem.storage.schema import TERMS_COLUMN

log = logging.getLogger(__name__)

#: BM25 parameters (the usual ones; LanceDB's full-text index uses the same).
BM25_K1 = 1.2
BM25_B = 0.75
#: Rows read by id per LanceDB query when catching up.
FETCH_BATCH = 500
#: Changed rows kept aside before they are folded into the Arrow table.
MAX_OVERRIDES = 4096
#: Rows added at once from which postings go straight into the sorted block (a build's batches).
BULK_ROWS = 1_000
#: Rows read per batch when building (bounds the memory a build needs beyond the copy itself).
BUILD_BATCH = 8_192
#: Postings of recent rows kept in per-term lists before they are merged into the sorted block.
TAIL_FOLD = 50_000
#: Records kept made (without vectors) for rows searches returned before; cleared when full.
MAX_BUILT = 5_000
#: Appended Arrow chunks (one per write) before they are combined into one.
MAX_CHUNKS = 64
#: Rows looked at on either side of a chunk for the chunk of its project written next to it (`adjacent`).
ADJACENT_SCAN = 16
#: Row masks of "live" filters kept for reuse (recall asks for the same slice, at a later `now`, call after call).
MASK_CACHE = 8

_RECORD_FIELDS = frozenset(f.name for f in fields(MemoryRecord))
_LIST_FIELDS = ("source_ids", "tags", "paths", "conflicts_with")
_OPEN = np.iinfo(np.int64).max  # NULL invalid_at / expired_at: open-ended
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TIMES = ("valid_at", "invalid_at", "created_at", "expired_at")
#: Columns compared when catching up, besides the times and salience (compared in Python). A write changes only
#: the validity of a stored row (storage/store.py refuses anything else), but a restore or a repair rewrites the
#: table with rows as a backup held them, so the copy still checks every column it serves.
_OBJECT_COLUMNS = ("reason", "tags", "supersedes", "confidence", "revision_of", "paths", "commit")
SYNC_COLUMNS = ["id", *_TIMES, "salience", *_OBJECT_COLUMNS]
#: The per-row arrays beside the times (`_<name>`), as a snapshot holds them.
_FLAG_ARRAYS = ("salience", "alive", "revision", "has_paths", "project", "kind", "lengths")


def _row_terms(terms: str | None, content: str, kind: str) -> list[str]:
    """The terms a row is searched by: its `terms` column split on spaces, as LanceDB's full-text index reads it.
    A row without (left by a rewrite by storage's own tools, storage/schema.py; LanceDB finds it once the next open
    with the tokenizer has filled it) is searched by the terms of its content meanwhile."""
    if terms is not None:
        return terms.split()
    from chronomem.search.terms import indexed_terms

    return indexed_terms(content, kind)


def _micros_column(table: Any, name: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    column = table.column(name).cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return np.asarray(pc.fill_null(column, _OPEN).to_numpy(zero_copy_only=False), dtype=np.int64)


class _Postings:
    """Term → (row, term frequency) lists: a CSR block built in bulk plus a tail of recent rows."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.ptr = np.zeros(1, dtype=np.int64)
        self.rows = np.empty(0, dtype=np.int32)
        self.tfs = np.empty(0, dtype=np.float32)
        self.tail: dict[int, list[tuple[int, int]]] = {}
        self.tail_size = 0
        self.df = np.zeros(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # bulk postings not yet merged

    def _term_id(self, term: str) -> int:
        tid = self.vocab.get(term)
        if tid is None:
            tid = self.vocab[term] = len(self.vocab)
        return tid

    def add(self, first_row: int, term_lists: Sequence[list[str]]) -> np.ndarray:
        """Index rows `first_row …` with these terms; returns each row's length in terms.

        Postings are collected in compact arrays; a large batch (a build) goes straight into the
        sorted block, a small one (a write) into the tail."""
        tids, rows, tfs = array("i"), array("i"), array("i")
        lengths = np.zeros(len(term_lists), dtype=np.float32)
        for offset, words in enumerate(term_lists):
            lengths[offset] = len(words)
            counts: dict[int, int] = {}
            for word in words:
                tid = self._term_id(word)
                counts[tid] = counts.get(tid, 0) + 1
            row = first_row + offset
            for tid, tf in counts.items():
                tids.append(tid)
                rows.append(row)
                tfs.append(tf)
        if len(self.df) < len(self.vocab):
            self.df = np.concatenate([self.df, np.zeros(len(self.vocab) - len(self.df), dtype=np.int64)])
        new_tids = np.frombuffer(tids, dtype=np.int32) if tids else np.empty(0, dtype=np.int32)
        if len(new_tids):
            self.df += np.bincount(new_tids, minlength=len(self.df))
        if len(term_lists) >= BULK_ROWS:  # merged on the next read: a build's batches are sorted in once
            self._pending.append((new_tids, np.frombuffer(rows, dtype=np.int32), np.frombuffer(tfs, dtype=np.int32)))
            return lengths
        for tid, row, tf in zip(tids, rows, tfs, strict=True):
            self.tail.setdefault(tid, []).append((row, tf))
        self.tail_size += len(tids)
        if self.tail_size > max(TAIL_FOLD, len(self.rows) // 4):
            self._fold_tail()
        return lengths

    def _fold_tail(self) -> None:
        """Merge the tail into the sorted block."""
        self.settle()
        t_tids, t_rows, t_tfs = self._tail_arrays()
        self.tail = {}
        self.tail_size = 0
        self._merge(
            np.frombuffer(t_tids, dtype=np.int32), np.frombuffer(t_rows, dtype=np.int32), np.frombuffer(t_tfs, dtype=np.int32)
        )

    def _tail_arrays(self) -> tuple[array, array, array]:
        """The tail's postings as three arrays: term ids, rows, frequencies."""
        t_tids, t_rows, t_tfs = array("i"), array("i"), array("i")
        for tid, pairs in self.tail.items():
            for row, tf in pairs:
                t_tids.append(tid)
                t_rows.append(row)
                t_tfs.append(tf)
        return t_tids, t_rows, t_tfs

    def _merge(self, tids: np.ndarray, rows: np.ndarray, tfs: np.ndarray) -> None:
        """Add postings (term id, row, frequency) to the sorted block: one stable sort by term."""
        n_terms = len(self.vocab)
        old_counts = np.diff(self.ptr)
        old_tids = np.repeat(np.arange(len(old_counts), dtype=np.int32), old_counts)
        all_tids = np.concatenate([old_tids, tids.astype(np.int32)])
        del old_tids
        order = np.argsort(all_tids, kind="stable")
        self.rows = np.concatenate([self.rows, rows.astype(np.int32)])[order]
        self.tfs = np.concatenate([self.tfs, tfs.astype(np.float32)])[order]
        self.ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_tids, minlength=n_terms), out=self.ptr[1:])

    def settle(self) -> None:
        """Merge the bulk postings added since the last read (a build's batches, all at once)."""
        if self._pending:
            pending, self._pending = self._pending, []
            self._merge(*(np.concatenate(parts) for parts in zip(*pending, strict=True)))

    def state(self) -> dict[str, Any]:
        """The postings as arrays for a snapshot (taken under the index's lock; `merged_postings` finishes it
        outside): the sorted block's arrays are replaced, never changed, by a merge; `df` and the tail are copied."""
        self.settle()
        t_tids, t_rows, t_tfs = self._tail_arrays()
        return {
            "terms": list(self.vocab),  # insertion order is term id order
            "ptr": self.ptr,
            "rows": self.rows,
            "tfs": self.tfs,
            "df": self.df.copy(),
            "tail": (np.array(t_tids, dtype=np.int32), np.array(t_rows, dtype=np.int32), np.array(t_tfs, dtype=np.float32)),
        }

    @classmethod
    def restore(
        cls, terms: list[str], ptr: np.ndarray, rows: np.ndarray, tfs: np.ndarray, df: np.ndarray
    ) -> _Postings:
        """Postings from a snapshot's arrays (the sorted block, every posting in it; no tail)."""
        postings = cls()
        postings.vocab = dict(zip(terms, range(len(terms)), strict=True))
        postings.ptr, postings.rows, postings.tfs, postings.df = ptr, rows, tfs, df
        return postings

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        tid = self.vocab.get(term)
        if tid is None:
            return None
        self.settle()
        rows, tfs = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)
        if tid + 1 < len(self.ptr):
            lo, hi = self.ptr[tid], self.ptr[tid + 1]
            rows, tfs = self.rows[lo:hi], self.tfs[lo:hi]
        tail = self.tail.get(tid)
        if tail:
            rows = np.concatenate([rows, np.fromiter((r for r, _ in tail), dtype=np.int32, count=len(tail))])
            tfs = np.concatenate([tfs, np.fromiter((t for _, t in tail), dtype=np.float32, count=len(tail))])
        return rows, tfs


class ReadIndex:
    """The copy of one table; thread-safe (one lock around syncing and searching)."""

    def __init__(self, dim: int, schema: Any, spill_dir: Path | None = None) -> None:
        import pyarrow as pa

        self.dim = dim
        self._spill_dir = spill_dir
        kept = [name for name in schema.names if name not in ("vector", TERMS_COLUMN)]  # terms: in the postings
        self._result_schema = pa.schema([schema.field(name) for name in kept])
        self._table_metadata = dict(schema.metadata or {})  # the table's (schema version, model): a snapshot's identity
        #: Called when a catch-up finds rows gone from the table (a purge): the snapshot holding them goes too.
        self.on_rows_gone: Callable[[], None] | None = None
        self._lock = threading.RLock()
        self._dataset: Any = None  # the table as a pylance dataset (`_dataset_at`)
        self._dataset_source: Any = None  # the LanceDB table it was opened from
        #: Rows the last catch-up's diff read (every row of the table, or those of its new fragments).
        self.rows_diffed = 0
        self._clear()

    def _clear(self) -> None:
        """Empty the copy (the lock and the schema stay)."""
        dim = self.dim
        self.version = -1
        self._n = 0
        #: Fragment id -> its data files, at `version`, when known (`_by_fragments`); None: not known.
        self._fragments: dict[int, tuple[str, ...]] | None = None
        self._pos: dict[str, int] = {}
        self._ids: list[str] = []  # row -> id (the same string objects as `_pos`'s keys)
        cap = 1024
        previous = getattr(self, "_dense", None)
        if previous is not None:
            previous.close()
        self._dense = DenseMatrix(dim, self._spill_dir)
        self._times = {name: np.zeros(cap, dtype=np.int64) for name in _TIMES}
        self._salience = np.zeros(cap, dtype=np.float32)
        self._alive = np.zeros(cap, dtype=bool)
        self._revision = np.zeros(cap, dtype=bool)
        self._has_paths = np.zeros(cap, dtype=bool)
        self._project = np.zeros(cap, dtype=np.int32)
        self._kind = np.zeros(cap, dtype=np.int32)
        self._codes: dict[str, dict[str, int]] = {"project": {}, "kind": {}}
        self._lengths = np.zeros(cap, dtype=np.float32)
        self._postings = _Postings()
        self._chunks: list[Any] = []
        self._payload: Any = None
        self._overrides: dict[int, dict[str, Any]] = {}
        self._built: dict[int, MemoryRecord] = {}  # rows already made into records (no vector), reused
        self._masks: dict[tuple[Any, ...], tuple[int, int, int, int, np.ndarray]] = {}  # see `mask`
        self._length_sum = 0.0  # BM25's average length is this over the documents (rows never leave the copy)
        self._documents = 0  # rows with at least one term: BM25's document count (LanceDB's index has no others)

    # ------------------------------------------------------------------ snapshots (search/snapshot.py)
    def state(self) -> dict[str, Any]:
        """What the copy holds, for a snapshot, taken under the lock in a few milliseconds: small arrays copied, large
        ones by reference (rows below the count never change in place in them: `_replace` writes the times and
        flags, which are copied), the result columns as the Arrow chunks and the changed rows not yet folded in.
        `snapshot.write` finishes it (`merged_postings`, `result_table`) without the lock."""
        with self._lock:
            n = self._n
            return {
                "version": self.version,
                "n": n,
                "dim": self.dim,
                "ids": self._ids[:n],
                "times": {name: self._times[name][:n].copy() for name in _TIMES},
                "flags": {name: getattr(self, f"_{name}")[:n].copy() for name in _FLAG_ARRAYS},
                "codes": {column: list(codes) for column, codes in self._codes.items()},
                "length_sum": self._length_sum,
                "documents": self._documents,
                "postings": self._postings.state(),
                "dense": self._dense.state(),
                "chunks": list(self._chunks),
                "overrides": dict(self._overrides),
                "schema": self._result_schema,
                "table_metadata": self._table_metadata,
            }

    @classmethod
    def restore(
        cls,
        dim: int,
        schema: Any,
        spill_dir: Path | None,
        state: dict[str, Any],
        dense: DenseMatrix,
        postings: _Postings,
        payload: Any,
    ) -> ReadIndex:
        """A copy from a snapshot: `state` as `state` gives it but with the arrays read back (times and flags of
        `n` rows or more, those after `n` free capacity), `dense` and `postings` restored, `payload` the result
        columns of the `n` rows as one Arrow table. Its version is the snapshot's: `catch_up` brings it on."""
        one_blas_thread()  # as `build`: a loaded copy searches the same way
        index = cls(dim, schema, spill_dir)
        n = int(state["n"])
        if payload.num_rows != n or len(state["ids"]) != n or dense.n != n:
            raise ValueError("the snapshot's parts disagree on the row count")
        index._dense.close()
        index._dense = dense
        index._n = n
        index._ids = list(state["ids"])
        index._pos = dict(zip(index._ids, range(n), strict=True))
        index._times = dict(state["times"])
        for name in _FLAG_ARRAYS:
            setattr(index, f"_{name}", state["flags"][name])
        index._codes = {column: {value: code for code, value in enumerate(values)} for column, values in state["codes"].items()}
        index._postings = postings
        index._length_sum = float(state["length_sum"])
        index._documents = int(state["documents"])
        index._chunks = [payload]
        index.version = int(state["version"])
        return index

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, table: Any, dim: int, scan_limit: int, spill_dir: Path | None = None) -> ReadIndex:
        """Read every row of the LanceDB `table` or pylance dataset (one scan) into a new index (float32 vectors
        spilled to an unnamed file in `spill_dir`, see `DenseMatrix`)."""
        one_blas_thread()
        index = cls(dim, table.schema, spill_dir)
        version = table.version
        with index._lock:
            index._load(table, scan_limit)
            index.version = version
            index._note_fragments(index._dataset_at(table, version))
        return index

    def _load(self, table: Any, scan_limit: int) -> None:
        """Append every row of `table`, a batch at a time."""
        import pyarrow as pa

        search = getattr(table, "search", None)  # a LanceDB table; else a pylance dataset (MemoryStore._open_quick)
        batches = (
            search().limit(scan_limit).to_batches(BUILD_BATCH)
            if search is not None
            else table.to_batches(limit=scan_limit, batch_size=BUILD_BATCH)
        )
        for batch in batches:
            if batch.num_rows:
                self._append(pa.Table.from_batches([batch]))
        self._postings.settle()
        self._chunks = [pa.concat_tables(self._chunks).combine_chunks()] if len(self._chunks) > 1 else self._chunks
        self._payload = None

    def _grow(self, need: int) -> None:
        cap = len(self._alive)
        if need <= cap:
            return
        new_cap = max(need, cap * 2)
        self._times = {k: resized(v, new_cap) for k, v in self._times.items()}
        for name in _FLAG_ARRAYS:
            setattr(self, f"_{name}", resized(getattr(self, f"_{name}"), new_cap))

    def _code(self, column: str, value: str) -> int:
        codes = self._codes[column]
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(codes)
        return code

    def _append(self, data: Any) -> None:
        """Add rows (an Arrow table with every column, vectors included) whose ids are new."""
        import pyarrow as pa

        count = data.num_rows
        if not count:
            return
        first = self._n  # the masks kept stay: `mask` evaluates the appended rows when next asked
        self._grow(first + count)
        end = first + count
        ids = data.column("id").to_pylist()
        vectors = data.column("vector")
        if vectors.null_count:
            vectors = vectors.fill_null(pa.scalar([0.0] * self.dim, type=vectors.type))
        flat = np.asarray(vectors.combine_chunks().flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        matrix = flat.reshape(count, self.dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        self._dense.append(matrix / norms)
        for name in _TIMES:
            self._times[name][first:end] = _micros_column(data, name)
        salience = data.column("salience").to_numpy(zero_copy_only=False)
        self._salience[first:end] = np.nan_to_num(np.asarray(salience, dtype=np.float32), nan=1.0)
        self._alive[first:end] = True
        self._revision[first:end] = data.column("revision_of").is_valid().to_numpy(zero_copy_only=False)
        paths = data.column("paths").to_pylist()
        self._has_paths[first:end] = [bool(p) for p in paths]
        self._project[first:end] = [self._code("project", p) for p in data.column("project").to_pylist()]
        kinds = data.column("kind").to_pylist()
        self._kind[first:end] = [self._code("kind", k) for k in kinds]
        contents = data.column("content").to_pylist()
        held = data.column(TERMS_COLUMN).to_pylist() if TERMS_COLUMN in data.column_names else [None] * count
        lists = [_row_terms(t, c, k) for t, c, k in zip(held, contents, kinds, strict=True)]
        self._lengths[first:end] = self._postings.add(first, lists)
        self._length_sum += float(self._lengths[first:end].sum(dtype=np.float64))
        self._documents += int(np.count_nonzero(self._lengths[first:end]))
        for offset, memory_id in enumerate(ids):
            self._pos[memory_id] = first + offset
        self._ids.extend(ids)
        self._n = end
        self._chunks.append(data.select(self._result_schema.names).cast(self._result_schema).combine_chunks())
        self._payload = None

    def _replace(self, rows: dict[int, dict[str, Any]]) -> None:
        """New values for rows already held (result columns as a dict per row; vectors never change)."""
        self._masks.clear()
        for row, values in rows.items():
            for name in _TIMES:
                value = values.get(name)
                self._times[name][row] = _OPEN if value is None else micros(value)
            salience = values.get("salience")
            self._salience[row] = 1.0 if salience is None else float(salience)
            self._alive[row] = True
            self._revision[row] = values.get("revision_of") is not None
            self._has_paths[row] = bool(values.get("paths"))
            self._overrides[row] = {k: v for k, v in values.items() if k != "vector"}
            self._built.pop(row, None)
        if len(self._overrides) > MAX_OVERRIDES:
            self._fold_overrides()

    def _table(self) -> Any:
        """The result columns of every row, in row order (appended chunks combined now and then)."""
        import pyarrow as pa

        if self._payload is None:
            if len(self._chunks) > MAX_CHUNKS:
                self._chunks = [pa.concat_tables(self._chunks).combine_chunks()]
            self._payload = pa.concat_tables(self._chunks) if self._chunks else self._result_schema.empty_table()
        return self._payload

    def _row_values(self, rows: list[int]) -> list[dict[str, Any]]:
        """The result columns of `rows`, in that order, as dicts: taken from each appended chunk on its own,
        because a `take` across the chunks of a ChunkedArray first concatenates them (measured: ~6 ms a
        call at 200k rows once a single write had added a second chunk, against ~0.3 ms). The four times
        come from the index's own integer columns: Arrow's conversion of tz-aware timestamps to datetimes
        was ~75% of the cost of the rest."""
        import pyarrow as pa

        if not rows:
            return []
        self._table()  # folds the chunks when there are too many
        starts = np.cumsum([0] + [chunk.num_rows for chunk in self._chunks[:-1]])
        wanted = np.asarray(rows, dtype=np.int64)
        chunk_of = np.searchsorted(starts, wanted, side="right") - 1
        names = [name for name in self._result_schema.names if name not in _TIMES and name in _RECORD_FIELDS]
        out: list[dict[str, Any]] = [{} for _ in rows]
        for chunk in np.unique(chunk_of).tolist():
            where = np.flatnonzero(chunk_of == chunk)
            local = pa.array(wanted[where] - starts[chunk], type=pa.int64())
            taken = self._chunks[chunk].select(names).take(local)
            columns = [column.to_pylist() for column in taken.columns]  # faster than a dict per row from Arrow
            for i, values in zip(where.tolist(), zip(*columns), strict=True):
                out[i] = dict(zip(names, values))
        for name in _TIMES:
            for values, stamp in zip(out, self._times[name][wanted].tolist(), strict=True):
                values[name] = None if stamp == _OPEN else _EPOCH + timedelta(microseconds=stamp)
        return out

    def _fold_overrides(self) -> None:
        """Write the changed rows into the Arrow table: one `take` over old rows and their new values."""
        import pyarrow as pa

        table = self._table()
        rows = sorted(self._overrides)
        changed = pa.Table.from_pylist([self._overrides[r] for r in rows], schema=self._result_schema)
        mapping = np.arange(self._n, dtype=np.int64)
        mapping[rows] = self._n + np.arange(len(rows), dtype=np.int64)
        self._chunks = [pa.concat_tables([table, changed]).take(pa.array(mapping)).combine_chunks()]
        self._payload = None
        self._overrides = {}

    # ------------------------------------------------------------------ keeping in step
    def apply(self, data: Any, version: int) -> None:
        """Our own committed write (`data`: the written rows, every column) that made `version`."""
        import pyarrow as pa

        with self._lock:
            ids = data.column("id").to_pylist()
            known = [i for i, memory_id in enumerate(ids) if memory_id in self._pos]
            fresh = [i for i, memory_id in enumerate(ids) if memory_id not in self._pos]
            if known:
                rows = data.take(pa.array(known)).select(self._result_schema.names).to_pylist()
                self._replace({self._pos[r["id"]]: r for r in rows})
            if fresh:
                self._append(data.take(pa.array(fresh)) if known else data)
            self.version = version

    def catch_up(self, table: Any, scan_limit: int) -> bool:
        """Bring the copy to the table's current version: a diff of every column a write can change
        (all but content and vectors, which a row never changes), then the new or changed rows read by id.

        The diff reads only the fragments that are new since the version the copy holds, when the copy knows its
        fragments (`_by_fragments`); else, or when rows went (a purge rewrote the table), every row, and rows gone
        make it read the whole table again. `table` may be a pylance dataset, which only the fragments' way reads:
        False (nothing changed) when that does not do, and the caller catches up from the LanceDB table."""
        with self._lock:
            version = table.version
            if version == self.version:
                return True
            dataset = self._dataset_at(table, version)
            if dataset is not None and self._by_fragments(dataset, scan_limit):
                self.version = version
                return True
            if not hasattr(table, "search"):
                return False
            scan = table.search().select(SYNC_COLUMNS).limit(scan_limit).to_arrow()
            self.rows_diffed = scan.num_rows
            ids = scan.column("id").to_pylist()
            rows = np.fromiter((self._pos.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
            known = rows >= 0
            gone = np.ones(self._n, dtype=bool)
            gone[rows[known]] = False
            gone &= self._alive[: self._n]
            if gone.any():
                if self.on_rows_gone is not None:
                    self.on_rows_gone()
                self._clear()
                self._load(table, scan_limit)
                self.version = version
                self._note_fragments(dataset)
                log.debug("read index rebuilt at version %d: %d rows were gone", version, int(gone.sum()))
                return True

            def by_id(part: list[str], columns: list[str] | None) -> Any:
                query = table.search().where(Filter().ids(part).sql())
                return (query if columns is None else query.select(columns)).limit(len(part)).to_arrow()

            new, changed = self._take_in(scan, ids, rows, known, by_id)
            self.version = version
            self._note_fragments(dataset)
            log.debug("read index caught up to version %d: %d new, %d changed", version, new, changed)
            return True

    def _note_fragments(self, dataset: Any) -> None:
        """Record the fragments of the version just read (`dataset`: None when there is no pylance dataset, and the
        next catch-up diffs every row)."""
        self._fragments = _fragment_files(dataset.get_fragments()) if dataset is not None else None

    def _by_fragments(self, dataset: Any, scan_limit: int) -> bool:
        """Catch up from the fragments whose data files the copy has not read: a commit adds fragments (an update
        too: Lance deletes the old row and writes the new one in a new fragment; a compaction rewrites them), so
        the rows of the others are as the copy holds them, or deleted. Deleted rows are either in a new fragment
        (updated: diffed like any other) or gone, which the row count tells: then False, nothing changed, and the
        full diff decides. On a shared store this is what keeps a read from costing a request per fragment of the
        table each time another writer commits (issue 48)."""
        if self._fragments is None:
            return False
        fragments = dataset.get_fragments()
        current = _fragment_files(fragments)
        fresh = [f for f in fragments if self._fragments.get(f.fragment_id) != current[f.fragment_id]]
        # A few rows (another writer's commits since the last read): every column at once, no second read by id.
        whole = sum(f.metadata.physical_rows for f in fresh) <= FETCH_BATCH
        scan = (
            dataset.scanner(columns=None if whole else SYNC_COLUMNS, fragments=fresh, limit=scan_limit).to_table()
            if fresh
            else None
        )
        ids = scan.column("id").to_pylist() if scan is not None else []
        rows = np.fromiter((self._pos.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
        known = rows >= 0
        if int(dataset.count_rows()) != int(self._alive[: self._n].sum()) + int((~known).sum()):
            return False
        self.rows_diffed = 0 if scan is None else scan.num_rows
        if scan is not None:
            import pyarrow as pa
            import pyarrow.compute as pc

            def by_id(part: list[str], columns: list[str] | None) -> Any:
                if whole:
                    taken = scan.filter(pc.is_in(scan.column("id"), value_set=pa.array(part)))
                    return taken if columns is None else taken.select(columns)
                return dataset.scanner(columns=columns, fragments=fresh, filter=Filter().ids(part).sql()).to_table()

            new, changed = self._take_in(scan, ids, rows, known, by_id)
            log.debug("read index caught up from %d fragments: %d new, %d changed", len(fresh), new, changed)
        self._fragments = current
        return True

    def _take_in(
        self, scan: Any, ids: list[str], rows: np.ndarray, known: np.ndarray,
        by_id: Callable[[list[str], list[str] | None], Any],
    ) -> tuple[int, int]:
        """Of the scanned rows (their ids, positions in the copy, whether it holds them), append those the copy lacks
        and put in the values of those it holds that differ, each read `FETCH_BATCH` ids at a time by `by_id(ids,
        columns)` (None: every column); how many of each."""
        changed = self._changed(scan, rows, known)
        new_ids, changed_ids = [ids[i] for i in np.flatnonzero(~known)], [ids[i] for i in np.flatnonzero(changed)]
        for part in _batches(new_ids):
            self._append(by_id(part, None))
        names = self._result_schema.names
        for part in _batches(changed_ids):
            self._replace({self._pos[r["id"]]: r for r in by_id(part, names).to_pylist()})
        return len(new_ids), len(changed_ids)

    def _dataset_at(self, table: Any, version: int) -> Any:
        """The table as a pylance dataset at `version` (a LanceDB table's is opened once, then moved version to
        version: only the manifest is read); None when it cannot be had (the full diff then does without)."""
        if hasattr(table, "get_fragments"):
            return table
        try:
            if self._dataset is None or self._dataset_source is not table:
                self._dataset, self._dataset_source = table.to_lance(), table
            if self._dataset.version != version:
                self._dataset = self._dataset.checkout_version(version)
        except Exception as exc:  # noqa: BLE001  (the full diff reads through LanceDB and says what failed)
            log.debug("read index: no pylance dataset of the table (%s); diffing every row", exc)
            self._dataset = self._dataset_source = None
        return self._dataset

    def _changed(self, scan: Any, rows: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Which scanned rows (of those held: `known`) differ from the copy in any column of SYNC_COLUMNS."""
        held = rows[known]
        differs = np.zeros(int(known.sum()), dtype=bool)
        for name in _TIMES:
            differs |= _micros_column(scan, name)[known] != self._times[name][held]
        salience = np.asarray(scan.column("salience").to_numpy(zero_copy_only=False), dtype=np.float32)
        differs |= ~np.isclose(np.nan_to_num(salience, nan=1.0)[known], self._salience[held])
        # The object columns are compared by Arrow, column against column (a Python loop over every row's values was
        # ~0.6 s of a catch-up at 100k rows); the rows changed since the last fold, whose values are in `_overrides`
        # and not in the Arrow table yet, in Python.
        import pyarrow as pa

        positions = np.flatnonzero(known)
        names = list(_OBJECT_COLUMNS)
        mine = self._table().select(names).take(pa.array(held, type=pa.int64()))
        theirs = scan.select(names).take(pa.array(positions, type=pa.int64()))
        pending = np.flatnonzero(np.isin(held, np.fromiter(self._overrides, dtype=np.int64, count=len(self._overrides))))
        objects = np.zeros(len(held), dtype=bool)
        for name in names:
            objects |= _column_differs(mine.column(name), theirs.column(name))
        if len(pending):
            values = theirs.take(pa.array(pending, type=pa.int64())).to_pylist()
            for j, now in zip(pending.tolist(), values, strict=True):
                held_values = self._overrides[int(held[j])]
                objects[j] = any(now[name] != held_values.get(name) for name in names)
        differs |= objects
        changed = np.zeros(len(rows), dtype=bool)
        changed[known] = differs
        return changed

    @property
    def rows(self) -> int:
        return self._n

    def project_counts(self) -> dict[str, int]:
        """Rows per project, as `MemoryStore.projects` counts them (every row, whatever its validity)."""
        with self._lock:
            codes = self._project[: self._n][self._alive[: self._n]]
            counts = np.bincount(codes, minlength=len(self._codes["project"]))
            return {name: int(counts[code]) for name, code in self._codes["project"].items() if counts[code]}

    # ------------------------------------------------------------------ searching
    def mask(self, flt: Filter) -> np.ndarray | None:
        """Rows passing `flt` (read-only), or None when it has a clause the index cannot evaluate.

        A filter with one "live" clause (the slice at a moment) is kept with the span of moments over
        which no row's times change its answer: the next call for the same slice at a later moment in
        that span (recall's `now`, a moment later) reuses it, evaluating only the rows appended since. A change
        to rows held (`_replace`) drops what is kept."""
        live = [op for op in flt.ops if op[0] == "live"]
        if len(live) != 1 or any(op[0] in ("ids", "sql") for op in flt.ops):
            return self._evaluate(flt.ops)
        at, known_at = live[0][1], live[0][2]
        key = tuple(("live",) if op[0] == "live" else op for op in flt.ops)
        kept = self._masks.get(key)
        if kept is not None:
            at_from, at_until, known_from, known_until, keep = kept
            if at_from <= at < at_until and known_from <= known_at < known_until:
                if len(keep) == self._n:
                    return keep
                # Rows appended since: rows held change only in `_replace`, which drops every kept mask. Only the
                # new rows are evaluated, at this moment, and the span holds from here to where any row changes.
                start = len(keep)
                extra = self._evaluate(flt.ops, start)
                assert extra is not None  # the clauses the rows before were evaluated with
                new_at_until, new_known_until = self._spans(start, at, known_at)
                span = (at, min(at_until, new_at_until), known_at, min(known_until, new_known_until))
                return self._kept(key, np.concatenate([keep, extra]), span)
        keep = self._evaluate(flt.ops)
        if keep is None:
            return None
        at_until, known_until = self._spans(0, at, known_at)
        return self._kept(key, keep, (at, at_until, known_at, known_until))

    def _spans(self, start: int, at: int, known_at: int) -> tuple[int, int]:
        """For rows `start:`, the first moment after `at` at which some row's validity changes, and the first
        after `known_at` at which some row is recorded or expired: a mask holds for moments before them."""
        t = {name: self._times[name][start : self._n] for name in _TIMES}
        return (
            min(_next_after(t["valid_at"], at), _next_after(t["invalid_at"], at)),
            min(_next_after(t["created_at"], known_at), _next_after(t["expired_at"], known_at)),
        )

    def _kept(self, key: tuple[Any, ...], keep: np.ndarray, span: tuple[int, int, int, int]) -> np.ndarray:
        """Keep `keep` (made read-only) for the filter `key` over `span` (at_from, at_until, known_from, known_until)."""
        keep.flags.writeable = False
        self._masks.pop(key, None)
        if len(self._masks) >= MASK_CACHE:
            self._masks.pop(next(iter(self._masks)))
        self._masks[key] = (*span, keep)
        return keep

    def _evaluate(self, ops: tuple[tuple[Any, ...], ...], start: int = 0) -> np.ndarray | None:
        """Which of rows `start:` pass the clauses `ops` (None: one the index cannot evaluate)."""
        n = self._n
        keep = self._alive[start:n].copy()
        t = {name: self._times[name][start:n] for name in _TIMES}
        for op in ops:
            name = op[0]
            if name == "live":
                at, known_at = op[1], op[2]
                keep &= (t["valid_at"] <= at) & (t["invalid_at"] > at)
                keep &= (t["created_at"] <= known_at) & (t["expired_at"] > known_at)
            elif name == "known":
                keep &= (t["created_at"] <= op[1]) & (t["expired_at"] > op[1])
            elif name == "began_by":
                keep &= t["valid_at"] <= op[1]
            elif name == "ended_by":
                keep &= t["invalid_at"] <= op[1]
            elif name == "created_since":
                keep &= t["created_at"] >= op[1]
            elif name in ("projects", "kinds"):
                column = "project" if name == "projects" else "kind"
                known = self._codes[column]
                wanted = np.zeros(len(known) + 1, dtype=bool)  # a lookup by code: faster than np.isin
                wanted[[known[v] for v in op[1] if v in known]] = True
                keep &= wanted[getattr(self, f"_{column}")[start:n]]
            elif name == "ids":
                chosen = np.zeros(n - start, dtype=bool)
                chosen[[self._pos[i] - start for i in op[1] if self._pos.get(i, -1) >= start]] = True
                keep &= chosen
            elif name == "revisions":
                keep &= self._revision[start:n]
            elif name == "originals":
                keep &= ~self._revision[start:n]
            elif name == "with_paths":
                keep &= self._has_paths[start:n]
            else:
                return None
        return keep

    def vector_search(
        self, vector: Sequence[float], flt: Filter, limit: int, with_vectors: bool = False, as_arrays: bool = False
    ) -> list[tuple[MemoryRecord, float]] | None:
        """Nearest rows by cosine among those passing `flt` (exact), or None if `flt` is not evaluable.

        `as_arrays`: vectors as read-only NumPy views of the index's (normalised) rows, not lists — for ranking,
        which compares a few of them; never write such records back."""
        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            return self._nearest(keep, vector, limit, with_vectors, as_arrays)

    def nearest_ids(self, vector: Sequence[float], flt: Filter, limit: int) -> list[tuple[str, float]] | None:
        """`vector_search`'s ids and scores alone, no record built (or None if `flt` is not evaluable)."""
        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            rows, scores, _ = self._dense.top(_unit(vector), keep, limit)
            return [(self._ids[row], score) for row, score in zip(rows.tolist(), scores.tolist(), strict=True)]

    def text_search(
        self, text: str, flt: Filter, limit: int, with_vectors: bool = False
    ) -> list[tuple[MemoryRecord, float]] | None:
        """BM25 matches of the query's terms among rows passing `flt`, or None if `flt` is not evaluable."""
        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            return self._matching(keep, text, limit, with_vectors)

    def hybrid_search(
        self, vector: Sequence[float], text: str, flt: Filter, limit: int
    ) -> tuple[list[tuple[MemoryRecord, float]], list[tuple[MemoryRecord, float]], dict[str, frozenset[str]]] | None:
        """`vector_search` (vectors as arrays) and `text_search` over one evaluation of `flt`, or None; and for
        each row either found, the query's terms its text contains (read off the postings the search walks
        anyway: ranking would otherwise tokenize every candidate's text again; no row's past 64 query terms)."""
        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            dense = self._nearest(keep, vector, limit, False, True)
            scores, asked, holds = self._bm25(keep, text, with_terms=True)
            lexical = self._top_matches(scores, limit, False)
            contains: dict[str, frozenset[str]] = {}
            if holds is not None:
                for record, _ in (*dense, *lexical):
                    bits = int(holds[self._pos[record.id]])
                    contains[record.id] = frozenset(t for j, t in enumerate(asked) if bits >> j & 1)
            return dense, lexical, contains

    def _nearest(
        self, keep: np.ndarray, vector: Sequence[float], limit: int, with_vectors: bool, as_arrays: bool
    ) -> list[tuple[MemoryRecord, float]]:
        rows, scores, vectors = self._dense.top(_unit(vector), keep, limit)
        return self._records(rows, scores, with_vectors, as_arrays, vectors=vectors)

    def _matching(
        self, keep: np.ndarray, text: str, limit: int, with_vectors: bool
    ) -> list[tuple[MemoryRecord, float]]:
        scores, _, _ = self._bm25(keep, text)
        return self._top_matches(scores, limit, with_vectors)

    def _bm25(
        self, keep: np.ndarray, text: str, with_terms: bool = False
    ) -> tuple[np.ndarray, list[str], np.ndarray | None]:
        """Each row's BM25 score for the terms of `text` (0 where `keep` is false), those terms, and with
        `with_terms` each row's bit set of the terms it contains (bit j: term j; None past 64 terms)."""
        n = self._n
        scores = np.zeros(n, dtype=np.float32)
        # Counted over the rows that hold a term, as LanceDB's full-text index counts (a row with none is no document)
        documents = self._documents
        alive = max(documents, 1)
        avg_length = (self._length_sum / documents if documents else 1.0) or 1.0
        asked = query_terms(text)
        holds = np.zeros(n, dtype=np.uint64) if with_terms and len(asked) <= 64 else None
        for j, term in enumerate(asked):
            found = self._postings.postings(term)
            if found is None:
                continue
            rows, tfs = found
            df = int(self._postings.df[self._postings.vocab[term]])
            idf = math.log(1.0 + (alive - df + 0.5) / (df + 0.5))
            lengths = self._lengths[rows]
            weight = tfs * (BM25_K1 + 1) / (tfs + BM25_K1 * (1 - BM25_B + BM25_B * lengths / avg_length))
            scores[rows] += idf * weight  # a term lists each row once: plain fancy indexing adds right
            if holds is not None:
                holds[rows] |= np.uint64(1 << j)
        scores *= keep
        return scores, asked, holds

    def _top_matches(self, scores: np.ndarray, limit: int, with_vectors: bool) -> list[tuple[MemoryRecord, float]]:
        matched = np.flatnonzero(scores)  # scores are > 0 where a term matched: the top is among those rows
        rows = matched[top_rows(scores[matched], limit, len(matched))]
        return self._records(rows, scores[rows], with_vectors)

    def adjacent(
        self, ids: Sequence[str], flt: Filter, gap: timedelta, min_cosine: float
    ) -> dict[str, tuple[str, ...]] | None:
        """For each of `ids` that is a chunk, the chunks of its project written just before and just after it
        (the nearest such row within ADJACENT_SCAN rows either way) that pass `flt`, were valid and recorded
        within `gap` of it, and whose vectors have a cosine of at least `min_cosine` with its own (estimated
        from the int8 codes). Revision rows have none. None when the index cannot evaluate `flt`."""
        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            chunk = self._codes["kind"].get("chunk")
            asked = np.fromiter((self._pos.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
            if chunk is None or not self._n:
                return {}
            which = np.flatnonzero(asked >= 0)
            rows = asked[which]
            plain = (self._kind[rows] == chunk) & ~self._revision[rows]
            which, rows = which[plain], rows[plain]
            gap_us = int(gap / timedelta(microseconds=1))
            valid, created = self._times["valid_at"], self._times["created_at"]
            found: dict[str, list[str]] = {}
            for step in (-1, 1):
                around = rows[:, None] + step * np.arange(1, ADJACENT_SCAN + 1)[None, :]
                inside = (around >= 0) & (around < self._n)
                around = np.clip(around, 0, self._n - 1)
                same = inside & (self._kind[around] == chunk) & ~self._revision[around]
                same &= self._project[around] == self._project[rows][:, None]
                nearest = around[np.arange(len(rows)), same.argmax(axis=1)]
                near = same.any(axis=1) & keep[nearest]
                near &= np.abs(valid[nearest] - valid[rows]) <= gap_us
                near &= np.abs(created[nearest] - created[rows]) <= gap_us
                if not near.any():
                    continue
                alike = self._dense.pair_products(rows[near], nearest[near]) >= min_cosine
                for i, row in zip(which[near][alike].tolist(), nearest[near][alike].tolist(), strict=True):
                    found.setdefault(ids[i], []).append(self._ids[row])
            return {key: tuple(value) for key, value in found.items()}

    def slot_keys(self, flt: Filter) -> set[tuple[str, str]] | None:
        """Distinct (subject, predicate) of the rows passing `flt` (a row never changes either), or None if `flt`
        is not evaluable."""
        import pyarrow as pa

        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            pairs = self._table().select(["subject", "predicate"]).filter(pa.array(keep[: self._n]))
            subjects, predicates = (column.to_pylist() for column in pairs.columns)
            return {(s, p) for s, p in zip(subjects, predicates, strict=True) if s is not None and p is not None}

    def find(self, flt: Filter, limit: int, with_vectors: bool = False) -> list[MemoryRecord] | None:
        """Rows passing `flt` in the order they were added (as a LanceDB scan), or None if `flt` is not evaluable."""
        with self._lock:
            keep = self.mask(flt)
            if keep is None:
                return None
            rows = np.flatnonzero(keep)[:limit]
            ordered = self._records(rows, np.zeros(len(rows), dtype=np.float32), with_vectors, sort=False)
            return [record for record, _ in ordered]

    def _records(
        self,
        rows: np.ndarray,
        scores: np.ndarray,
        with_vectors: bool,
        as_arrays: bool = False,
        sort: bool = True,
        vectors: np.ndarray | None = None,
    ) -> list[tuple[MemoryRecord, float]]:
        """The rows as records (each a fresh copy: callers may change them) with their scores (aligned with
        `rows`), best first. `vectors`: the rows' float32 vectors when the caller has them already."""
        wanted = rows.tolist()
        if len(self._built) + len(wanted) > MAX_BUILT:
            self._built.clear()
        missing = [row for row in dict.fromkeys(wanted) if row not in self._built]
        if missing:
            fresh = [row for row in missing if row not in self._overrides]
            values = self._row_values(fresh)
            for row, data in zip(fresh, values, strict=True):
                for name in _LIST_FIELDS:  # `_row_values` gives the record fields the table has, times as UTC datetimes
                    data[name] = data.get(name) or []
                self._built[row] = MemoryRecord(**data)
            for row in missing:
                if row in self._overrides:
                    self._built[row] = MemoryRecord.from_row(self._overrides[row])
        if (as_arrays or with_vectors) and vectors is None:
            vectors = self._dense.rows(rows)
        if as_arrays and vectors is not None:
            vectors.flags.writeable = False
        out = []
        for i, row in enumerate(wanted):
            record = _fresh_copy(self._built[row])
            if as_arrays:
                record.vector = vectors[i]  # type: ignore[assignment,index]
            elif with_vectors:
                record.vector = vectors[i].tolist()  # type: ignore[index]
            out.append((record, float(scores[i])))
        if sort:
            out.sort(key=lambda pair: (-pair[1], pair[0].id))
        return out


def _fragment_files(fragments: Iterable[Any]) -> dict[int, tuple[str, ...]]:
    """Each of a pylance dataset's fragments by id, with its data files (from the manifest: no request)."""
    return {f.fragment_id: tuple(d.path for d in f.metadata.files) for f in fragments}


def _column_differs(mine: Any, theirs: Any) -> np.ndarray:
    """Where two Arrow columns of one type differ, as Python's `!=` on their values would say (null equals only
    null; a list is compared by its items, an empty one differing from null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_list(mine.type) or pa.types.is_large_list(mine.type):
        mine, theirs = pc.binary_join(mine, "\x1f"), pc.binary_join(theirs, "\x1f")
    same = pc.or_(pc.fill_null(pc.equal(mine, theirs), False), pc.and_(pc.is_null(mine), pc.is_null(theirs)))
    return ~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)


def merged_postings(state: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of a `_Postings.state` as one sorted block (ptr, rows, tfs): its tail merged in (no lock needed)."""
    ptr, rows, tfs = state["ptr"], state["rows"], state["tfs"]
    t_tids, t_rows, t_tfs = state["tail"]
    n_terms = len(state["terms"])
    if not len(t_tids) and len(ptr) == n_terms + 1:
        return ptr, rows, tfs
    old_counts = np.diff(ptr)
    all_tids = np.concatenate([np.repeat(np.arange(len(old_counts), dtype=np.int32), old_counts), t_tids])
    order = np.argsort(all_tids, kind="stable")
    merged_ptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_tids, minlength=n_terms), out=merged_ptr[1:])
    return merged_ptr, np.concatenate([rows, t_rows])[order], np.concatenate([tfs, t_tfs])[order]


def result_table(state: dict[str, Any]) -> Any:
    """The result columns of a `ReadIndex.state`'s rows as one Arrow table, changed rows folded in (no lock needed)."""
    import pyarrow as pa

    schema, n = state["schema"], state["n"]
    chunks = state["chunks"]
    table = pa.concat_tables(chunks) if chunks else schema.empty_table()
    table = table.slice(0, n)
    overrides = {row: values for row, values in state["overrides"].items() if row < n}
    if overrides:
        rows = sorted(overrides)
        changed = pa.Table.from_pylist([overrides[r] for r in rows], schema=schema)
        mapping = np.arange(n, dtype=np.int64)
        mapping[rows] = n + np.arange(len(rows), dtype=np.int64)
        table = pa.concat_tables([table, changed]).take(pa.array(mapping))
    return table.combine_chunks()


def _fresh_copy(record: MemoryRecord) -> MemoryRecord:
    """A copy of `record` with its own lists (`copy.copy` and three `setattr`s took three times as long)."""
    out = object.__new__(MemoryRecord)
    values = out.__dict__
    values.update(record.__dict__)
    for name in _LIST_FIELDS:
        values[name] = list(values[name])
    values["anchors"] = dict(values["anchors"])
    return out


def one_blas_thread() -> None:
    """Limit NumPy's BLAS to one thread, unless the user chose a count (OPENBLAS/OMP/MKL_NUM_THREADS).

    Measured on 2 cores, recall at 200k rows (in-process medians): query embedding 7.3 -> 3.4 ms,
    the product 13.2 -> 10.2 ms, the whole recall 26.0 -> 19.1 ms."""
    import os

    if any(os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")):
        return
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1, user_api="blas")
    except Exception:  # a BLAS threadpoolctl cannot drive only costs speed
        log.debug("could not limit BLAS threads", exc_info=True)


def _unit(vector: Sequence[float]) -> np.ndarray:
    """`vector` as float32 scaled to unit length (a zero vector as it is)."""
    query = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(query))
    return query / norm if norm else query


def _next_after(times: np.ndarray, moment: int) -> int:
    """The earliest of `times` later than `moment` (open-ended when there is none)."""
    return int(np.min(times, where=times > moment, initial=_OPEN))


def _batches(items: list[str], size: int = FETCH_BATCH) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
