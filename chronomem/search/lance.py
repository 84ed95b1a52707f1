"""LanceDB's own searches on the `memories` table: its vector search (the ANN index once the consolidator
built one, else flat) and its full-text index on `content` (BM25). They answer when the in-memory read index
cannot (not built yet, past its row limit, or a filter it cannot evaluate).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from chronomem.records import MemoryRecord
from chronomem.storage import Filter
from chronomem.storage.schema import RESULT_COLUMNS

log = logging.getLogger(__name__)


def vector_search(
    table: Any, vector: Sequence[float], flt: Filter, limit: int, with_vectors: bool = False
) -> list[tuple[MemoryRecord, float]]:
    """Nearest rows by cosine similarity among those passing `flt` (applied before the search)."""
    columns = RESULT_COLUMNS + (["vector"] if with_vectors else [])
    query = (
        table.search(list(vector), vector_column_name="vector")
        .distance_type("cosine")
        .limit(limit)
        .select(columns + ["_distance"])
    )
    sql = flt.sql()
    if sql:
        query = query.where(sql, prefilter=True)
    out = []
    for row in query.to_list():
        distance = row.pop("_distance")
        out.append((MemoryRecord.from_row(row), 1.0 - float(distance)))
    out.sort(key=lambda pair: (-pair[1], pair[0].id))
    return out


def text_search(
    table: Any, text: str, flt: Filter, limit: int, with_vectors: bool = False
) -> list[tuple[MemoryRecord, float]]:
    """Full-text (BM25) matches on `content` among rows passing `flt`. The query is a plain match query,
    never parsed as query syntax, so any text is safe."""
    from lancedb.query import MatchQuery

    query = table.search(MatchQuery(text, "content"), query_type="fts").limit(limit)
    sql = flt.sql()
    if sql:
        query = query.where(sql, prefilter=True)
    query = query.select(RESULT_COLUMNS + (["vector"] if with_vectors else []) + ["_score"])
    try:
        rows = query.to_list()
    except Exception as exc:  # an FTS query LanceDB cannot tokenize is no lexical evidence
        log.debug("full-text search failed: %s", exc)
        return []
    out = []
    for row in rows:
        score = row.pop("_score")
        out.append((MemoryRecord.from_row(row), float(score)))
    out.sort(key=lambda pair: (-pair[1], pair[0].id))  # equal BM25 scores come back in varying order
    return out
