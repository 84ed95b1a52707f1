"""The search component's one interface: candidates for (filter, query) — dense, lexical, exact names —
with their scores, answered by the in-memory read index (readindex.py) when it is built and can evaluate the
filter, else by LanceDB's own indexes (lance.py). `MemoryStore.answer` picks which, and keeps the read index
in step with the table's version; this module never ranks.

`Search` is a query's slice (a store and a filter) as ranking sees it (`candidates.Searcher`): the pool,
conversational neighbours, rows by id, lexical lookups for the second hop and for names the pool lacks.
The module's functions serve the other readers (the consolidator's slot and near-fact lookups).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from chronomem.config import DEFAULT_READ_INDEX_ROWS
from chronomem.records import MemoryRecord
from chronomem.search import lance
from chronomem.search.candidates import CANDIDATE_POOL, Candidate
from chronomem.search.terms import mentioned, row_terms
from chronomem.storage import Filter, MemoryStore
from chronomem.config import is_remote

#: search/snapshot.py's switch (kept here too: that module, NumPy-heavy, is imported only when snapshots are on).
SNAPSHOT_ENV = "CHRONOMEM_READ_INDEX_SNAPSHOT"
_OFF = ("0", "false", "no", "off")

Found = list[tuple[MemoryRecord, float]]


def open_store(
    path: Path | str, dim: int, embed_model: str, read_index_rows: int = DEFAULT_READ_INDEX_ROWS
) -> MemoryStore:
    """`MemoryStore.open` with this component's read index (built when the table has at most
    `read_index_rows` rows; 0 turns it off) and its tokenizer, which writes each row's `terms`.

    A local store's read index starts from its snapshot when it has one it can trust (search/snapshot.py): loaded
    here, at open, so the first search is answered by the index; its `Keeper` writes the next ones."""
    keeper = None
    if read_index_rows > 0 and not is_remote(path) and os.environ.get(SNAPSHOT_ENV, "1").strip().lower() not in _OFF:
        from chronomem.search.snapshot import Keeper

        keeper = Keeper(Path(path))
    store = MemoryStore.open(
        path,
        dim,
        embed_model,
        read_index_rows,
        build_read_index=partial(_build_read_index, keeper),
        row_terms=row_terms,
        quick_at_any_size=keeper is not None and keeper.present(),  # LanceDB opens at the first write, not here
    )
    if keeper is not None:
        keeper.preload(store)
    return store


def _build_read_index(keeper: Any, table: object, dim: int, scan_limit: int, spill_dir: Path | None) -> object:
    from chronomem.search.readindex import ReadIndex  # NumPy-heavy: imported off the start-up path

    index = keeper.take(table, dim, spill_dir) if keeper is not None and spill_dir is not None else None
    if index is None:
        index = ReadIndex.build(table, dim, scan_limit, spill_dir=spill_dir)
    if keeper is not None:
        index.on_rows_gone = keeper.rows_gone
    return index


def vector_search(store: MemoryStore, vector: Sequence[float], flt: Filter, limit: int, with_vectors: bool = False) -> Found:
    """Nearest rows by cosine similarity among those passing `flt` (applied before the search)."""
    return store.answer(
        lambda index: index.vector_search(vector, flt, limit, with_vectors),
        lambda: lance.vector_search(store.table, vector, flt, limit, with_vectors),
    )


def nearest_ids(store: MemoryStore, vector: Sequence[float], flt: Filter, limit: int) -> list[tuple[str, float]]:
    """`vector_search`'s ids and cosines alone, best first: for a caller that needs how close, not the rows."""
    return store.answer(
        lambda index: index.nearest_ids(vector, flt, limit),
        lambda: [(record.id, score) for record, score in lance.vector_search(store.table, vector, flt, limit)],
    )


def text_search(store: MemoryStore, text: str, flt: Filter, limit: int, with_vectors: bool = False) -> Found:
    """Lexical (BM25) matches of the terms of `text` among rows passing `flt` (the read index and LanceDB answer
    alike); any text is safe (never parsed as syntax)."""
    return store.answer(
        lambda index: index.text_search(text, flt, limit, with_vectors),
        lambda: lance.text_search(store.table, text, flt, limit, with_vectors),
    )


def hybrid_search(
    store: MemoryStore, vector: Sequence[float], text: str, flt: Filter, limit: int
) -> tuple[Found, Found, dict[str, frozenset[str]] | None]:
    """`vector_search` (with vectors) and `text_search` of one query over the same table version, and from the
    read index, for each row found, the terms of `text` (`terms.terms`) its content holds (None from LanceDB,
    and no entry past 64 query terms: ranking tokenizes those rows itself)."""
    return store.answer(
        lambda index: index.hybrid_search(vector, text, flt, limit),
        lambda: (
            lance.vector_search(store.table, vector, flt, limit, True),
            lance.text_search(store.table, text, flt, limit),
            None,
        ),
    )


class Search:
    """One query's slice of one store: the `candidates.Searcher` that ranking (retrieval/pipeline.py) reads."""

    def __init__(self, store: MemoryStore, flt: Filter) -> None:
        self.store = store
        self.flt = flt

    def candidates(self, text: str, vector: Sequence[float], pool: int = CANDIDATE_POOL) -> list[Candidate]:
        """Union of the dense and full-text top-`pool` rows of the slice.

        Dense candidates carry their vectors (ranking compares them); reading vectors for the
        full-text ones as well would cost more than it changes.
        """
        dense, lexical, contains = hybrid_search(self.store, vector, text, self.flt, pool)
        found: dict[str, Candidate] = {}
        for rank, (record, score) in enumerate(dense, start=1):
            found[record.id] = Candidate(record, score, dense_rank=rank)
        for rank, (record, score) in enumerate(lexical, start=1):
            candidate = found.get(record.id)
            if candidate is None:
                candidate = found[record.id] = Candidate(record, None)
            candidate.lexical = score
            candidate.lexical_rank = rank
        if contains is not None:
            for candidate in found.values():
                candidate.terms = contains.get(candidate.record.id)
        return list(found.values())

    def lexical(self, text: str, limit: int, with_vectors: bool = False) -> Found:
        return text_search(self.store, text, self.flt, limit, with_vectors)

    def absent(self, names: Sequence[str], verbatim: dict[str, bool | None]) -> list[str]:
        """The `names` that a full-text search of the whole slice for the name does not find mentioned
        (`verbatim[name]`: an identifier, matched as written)."""
        absent = []
        for name in names:
            found = self.lexical(name, 10)
            if not any(mentioned(name, record.content.lower(), verbatim[name]) for record, _ in found):
                absent.append(name)
        return absent

    def adjacent(self, ids: Sequence[str], gap: timedelta, min_cosine: float) -> dict[str, tuple[str, ...]]:
        """For each chunk among `ids`, the ids of the chunks of its project written just before and after it,
        when they are in the slice, within `gap` of it in valid and transaction time and alike in vector
        (`ReadIndex.adjacent`). Row order is write order only in the read index: without one, nothing."""
        return self.store.answer(lambda index: index.adjacent(ids, self.flt, gap, min_cosine), dict)

    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        return {r.id: r for r in self.store.find(Filter().ids(list(ids)), limit=len(ids))} if ids else {}
