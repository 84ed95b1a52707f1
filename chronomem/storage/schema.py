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

storage/migrate.py brings a version-1 or version-2 store forward.
"""

from __future__ import annotations

import pyarrow as pa

TABLE_NAME = "memories"
SCHEMA_VERSION = 3
USAGE_TABLE = "usage"
SCHEMA_VERSION_KEY = b"chronomem.schema_version"
EMBED_MODEL_KEY = b"chronomem.embed_model"

_TIME = pa.timestamp("us", tz="UTC")
ANCHOR_TYPE = pa.list_(pa.struct([pa.field("path", pa.string()), pa.field("blob", pa.string())]))
#: The only columns a write may change on an existing row (MemoryStore.upsert refuses anything else).
VALIDITY_COLUMNS = ("invalid_at", "expired_at", "reason")
#: What `chronomem reembed` rewrites on every row: the declared exception to write-once.
REEMBED_COLUMNS = ("vector", "embed_model")


def memories_schema(dim: int, embed_model: str) -> pa.Schema:
    """The table layout of DESIGN.md, with the schema version and model in its metadata."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("project", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            pa.field("subject", pa.string()),
            pa.field("predicate", pa.string()),
            pa.field("object", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("embed_model", pa.string()),
            pa.field("valid_at", _TIME, nullable=False),
            pa.field("invalid_at", _TIME),
            pa.field("created_at", _TIME, nullable=False),
            pa.field("expired_at", _TIME),
            pa.field("supersedes", pa.string()),
            pa.field("revision_of", pa.string()),
            pa.field("source_ids", pa.list_(pa.string())),
            pa.field("source", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("salience", pa.float32()),
            pa.field("confidence", pa.float32()),
            pa.field("paths", pa.list_(pa.string())),
            pa.field("commit", pa.string()),
            pa.field("reason", pa.string()),
            pa.field("anchors", ANCHOR_TYPE),
            pa.field("conflicts_with", pa.list_(pa.string())),
            pa.field("novelty", pa.float32()),
            pa.field("event_salience", pa.float32()),
            pa.field("prediction_error", pa.float32()),
            pa.field("gate", pa.string()),
        ],
        metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode(), EMBED_MODEL_KEY: embed_model.encode()},
    )


def usage_schema() -> pa.Schema:
    """The `usage` side table: one row per change, the latest per `id` is the state (records.Usage)."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("at", _TIME, nullable=False),
            pa.field("seen_at", _TIME),
            pa.field("hits", pa.int64()),
            pa.field("boost", pa.float32()),
            pa.field("restated_by", pa.list_(pa.string())),
            pa.field("paths", pa.list_(pa.string())),
            pa.field("anchors", ANCHOR_TYPE),
            pa.field("conflicts_with", pa.list_(pa.string())),
        ],
        metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode()},
    )


def schema_version(schema: pa.Schema) -> int:
    """The version a `memories` table records (1 when it records none)."""
    try:
        return int((schema.metadata or {}).get(SCHEMA_VERSION_KEY, b"1").decode())
    except ValueError:
        return 1


#: Columns returned by searches: everything but the vector, which no caller reads back.
RESULT_COLUMNS = [f for f in memories_schema(1, "").names if f != "vector"]


def stored_model(schema: pa.Schema) -> tuple[str, int]:
    """(model name, vector dimension) a `memories` table records: the model its vectors are from
    (set at creation, and by `chronomem reembed`); `?` when its metadata names none."""
    name = (schema.metadata or {}).get(EMBED_MODEL_KEY, b"?").decode() or "?"
    return name, int(schema.field("vector").type.list_size)
