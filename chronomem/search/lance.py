"""LanceDB's own searches on the `memories` table: its vector search (the ANN index once the consolidator
built one, else flat) and its full-text index (BM25) on the `terms` column — the reference the in-memory read
index caches: the same tokens (`terms.row_terms`, split on spaces, folded no further) and the same scores. They
answer when the read index cannot (not built yet, past its row limit, or a filter it cannot evaluate).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from chronomem.records import MemoryRecord
from chronomem.search.terms import query_terms
from chronomem.storage import Filter
from chronomem.storage.schema import RESULT_COLUMNS, TERMS_COLUMN

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
    """Full-text (BM25) matches of the query's terms (`terms.query_terms`) on `terms` among rows passing `flt`.

    The terms, joined by spaces, go in a match query: tokenized by the index's own tokenizer (split on spaces),
    never parsed as query syntax, so quotes, parentheses, `/ . - :` in paths and names are only characters of a
    term; a query without terms (stop words, punctuation) finds nothing."""
    from lancedb.query import MatchQuery

    asked = query_terms(text)
    if not asked:
        return []
    query = table.search(MatchQuery(" ".join(asked), TERMS_COLUMN), query_type="fts").limit(limit)
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
