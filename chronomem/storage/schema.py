"""The Arrow schema of the `memories` table and its recorded version."""

from __future__ import annotations

import pyarrow as pa

TABLE_NAME = "memories"
SCHEMA_VERSION = 1
SCHEMA_VERSION_KEY = b"chronomem.schema_version"
EMBED_MODEL_KEY = b"chronomem.embed_model"

_TIME = pa.timestamp("us", tz="UTC")


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
        ],
        metadata={SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode(), EMBED_MODEL_KEY: embed_model.encode()},
    )


#: Columns returned by searches: everything but the vector, which no caller reads back.
RESULT_COLUMNS = [f for f in memories_schema(1, "").names if f != "vector"]


def stored_model(schema: pa.Schema) -> tuple[str, int]:
    """(model name, vector dimension) a `memories` table records: the model its vectors are from
    (set at creation, and by `chronomem reembed`); `?` when its metadata names none."""
    name = (schema.metadata or {}).get(EMBED_MODEL_KEY, b"?").decode() or "?"
    return name, int(schema.field("vector").type.list_size)
