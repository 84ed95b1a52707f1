"""The Arrow schemas of the `memories` table (and its recorded version) and of the `usage` side table.

Version 2 (issue 23) gave the internal marks that version 1 packed into `tags` (`cm:` strings) typed homes:
`anchors` and `conflicts_with` are columns of `memories`; recall hits, last-seen times and the reinforcement
of a restated fact live in `usage` (storage/usage.py), so a memory row is written once and afterwards only
its validity (`invalid_at`, `expired_at`, `reason`) is ever set — the one declared exception being
`chronomem reembed`, which rewrites `vector` and `embed_model` of every row (storage/reembed.py).
Version 3 (issue 26) adds the encoding gate's write-time signals of a chunk (consolidate/gate.py): `novelty`,
`event_salience` (shown as `salience`; the `salience` column stays the reinforced ranking weight), `prediction_error`
and the decision `gate` (`kept` or `demoted`; a skipped write leaves no row). All nullable: rows written before
version 3, and facts, have none.
Version 4 (issue 28) adds `terms`: the row's content as the lexical channel reads it (`search.terms`, a fact's
terms once, joined by spaces), written with every row and indexed by LanceDB's full-text index split on spaces
with no folding of its own (`FTS_INDEX`), so LanceDB's BM25 and the read index's score the same tokens alike.
Storage does not tokenize: the search component hands `MemoryStore.open` the function (`RowTerms`), and a store
opened without it refuses to write new rows. Nullable: a rewrite of the whole table by storage's own tools
(a migration, reembed, a restore, a salvage or repair) leaves rows it cannot tokenize without terms and marks the
table's metadata (`TERMS_PENDING_KEY`); the next open that has the function fills them and clears the mark — no
scan of the column at every open (~0.1-0.5 s at 200k rows).

storage/migrate.py brings a store of version 1, 2 or 3 forward.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a schema is built: a starting server answers `initialize` before needing Arrow
    import pyarrow as pa

TABLE_NAME = "memories"
SCHEMA_VERSION = 4
USAGE_TABLE = "usage"
SCHEMA_VERSION_KEY = b"chronomem.schema_version"
EMBED_MODEL_KEY = b"chronomem.embed_model"
#: Set in the metadata of a table some of whose rows have no `terms` yet (see the module).
TERMS_PENDING_KEY = b"chronomem.terms_pending"

#: The only columns a write may change on an existing row (MemoryStore.upsert refuses anything else).
VALIDITY_COLUMNS = ("invalid_at", "expired_at", "reason")
#: What `chronomem reembed` rewrites on every row: the declared exception to write-once.
REEMBED_COLUMNS = ("vector", "embed_model")
#: The column the full-text index reads, and that index's name (the index on `content` of versions 1-3 was
#: `content_idx`; nothing reads it any more, and opening a store drops it).
TERMS_COLUMN = "terms"
FTS_INDEX = "terms_idx"
OLD_FTS_INDEX = "content_idx"


#: The `memories` table's columns in order: (name, type, nullable), the types named for `_arrow_type` (Arrow is
#: imported where a schema is built, so the names need no Arrow).
MEMORY_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("id", "string", False),
    ("kind", "string", False),
    ("project", "string", False),
    ("content", "string", False),
    ("subject", "string", True),
    ("predicate", "string", True),
    ("object", "string", True),
    ("vector", "vector", True),
    ("embed_model", "string", True),
    ("valid_at", "time", False),
    ("invalid_at", "time", True),
    ("created_at", "time", False),
    ("expired_at", "time", True),
    ("supersedes", "string", True),
    ("revision_of", "string", True),
    ("source_ids", "strings", True),
    ("source", "string", True),
    ("tags", "strings", True),
    ("salience", "float32", True),
    ("confidence", "float32", True),
    ("paths", "strings", True),
    ("commit", "string", True),
    ("reason", "string", True),
    ("anchors", "anchors", True),
    ("conflicts_with", "strings", True),
    ("novelty", "float32", True),
    ("event_salience", "float32", True),
    ("prediction_error", "float32", True),
    ("gate", "string", True),
    (TERMS_COLUMN, "string", True),
)
#: The `usage` side table's columns, as `MEMORY_FIELDS`.
USAGE_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("id", "string", False),
    ("at", "time", False),
    ("seen_at", "time", True),
    ("hits", "int64", True),
    ("boost", "float32", True),
    ("restated_by", "strings", True),
    ("paths", "strings", True),
    ("anchors", "anchors", True),
    ("conflicts_with", "strings", True),
)


def _arrow_type(name: str, dim: int = 0) -> pa.DataType:
    import pyarrow as pa

    if name == "vector":
        return pa.list_(pa.float32(), dim)
    if name == "anchors":
        return pa.list_(pa.struct([pa.field("path", pa.string()), pa.field("blob", pa.string())]))
    return {
        "string": pa.string(), "strings": pa.list_(pa.string()), "float32": pa.float32(), "int64": pa.int64(),
        "time": pa.timestamp("us", tz="UTC"),
    }[name]


def _schema(fields: tuple[tuple[str, str, bool], ...], metadata: dict[bytes, bytes], dim: int = 0) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [pa.field(name, _arrow_type(kind, dim), nullable=nullable) for name, kind, nullable in fields], metadata=metadata
    )


@lru_cache(maxsize=8)  # every write asks for it; an Arrow schema is immutable, so one object serves them all
def memories_schema(dim: int, embed_model: str) -> pa.Schema:
    """The table layout of DESIGN.md, with the schema version and model in its metadata."""
    return _schema(
        MEMORY_FIELDS, {SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode(), EMBED_MODEL_KEY: embed_model.encode()}, dim
    )


@lru_cache(maxsize=1)
def usage_schema() -> pa.Schema:
    """The `usage` side table: one row per change, the latest per `id` is the state (records.Usage)."""
    return _schema(USAGE_FIELDS, {SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()})


def schema_version(schema: pa.Schema) -> int:
    """The version a `memories` table records (1 when it records none)."""
    try:
        return int((schema.metadata or {}).get(SCHEMA_VERSION_KEY, b"1").decode())
    except ValueError:
        return 1


#: Columns returned by searches: everything but the vector and the terms, which no caller reads back.
RESULT_COLUMNS = [name for name, _, _ in MEMORY_FIELDS if name not in ("vector", TERMS_COLUMN)]


def stored_model(schema: pa.Schema) -> tuple[str, int]:
    """(model name, vector dimension) a `memories` table records: the model its vectors are from
    (set at creation, and by `chronomem reembed`); `?` when its metadata names none."""
    name = (schema.metadata or {}).get(EMBED_MODEL_KEY, b"?").decode() or "?"
    return name, int(schema.field("vector").type.list_size)


def create_fts_index(table: Any) -> None:
    """(Re)build LanceDB's full-text index on `terms`: split on spaces (`whitespace`), no case folding,
    stemming, stop words, ASCII folding or length limit of its own, so its tokens are exactly the terms the
    search component wrote and its BM25 scores what the read index scores (eval/results/engines.md)."""
    from lancedb.index import FTS

    config = FTS(
        base_tokenizer="whitespace",
        lower_case=False,
        stem=False,
        remove_stop_words=False,
        ascii_folding=False,
        max_token_length=None,
    )
    table.create_index(TERMS_COLUMN, config=config, replace=True, name=FTS_INDEX)


#: A row's terms from its (content, kind): `search.terms.row_terms`, handed to `MemoryStore.open` by the search
#: component (storage does not tokenize).
RowTerms = Callable[[str, str], str]


def with_terms(data: pa.Table, row_terms: RowTerms | None) -> pa.Table:
    """`data` (rows of this schema, or of an older one without the column) with `terms` set on every row that has
    none, from its content and kind (without `row_terms` those rows keep none); its schema's metadata, when it has
    any, marks whether rows without terms remain (`TERMS_PENDING_KEY`)."""
    import pyarrow as pa

    if TERMS_COLUMN not in data.column_names:
        data = data.append_column(pa.field(TERMS_COLUMN, pa.string()), pa.nulls(data.num_rows, pa.string()))
    column = data.column(TERMS_COLUMN)
    if row_terms is not None and column.null_count:
        held = column.to_pylist()
        contents, kinds = data.column("content").to_pylist(), data.column("kind").to_pylist()
        filled = [row_terms(c, k) if t is None else t for t, c, k in zip(held, contents, kinds, strict=True)]
        position = data.schema.get_field_index(TERMS_COLUMN)
        data = data.set_column(position, data.schema.field(TERMS_COLUMN), pa.array(filled, type=pa.string()))
    metadata = dict(data.schema.metadata or {})
    if not metadata:
        return data
    metadata.pop(TERMS_PENDING_KEY, None)
    if data.column(TERMS_COLUMN).null_count:
        metadata[TERMS_PENDING_KEY] = b"1"
    return data.replace_schema_metadata(metadata)


def terms_pending(schema: pa.Schema) -> bool:
    """Whether a table of this schema has rows without `terms` (marked by `with_terms`)."""
    return TERMS_PENDING_KEY in (schema.metadata or {})
