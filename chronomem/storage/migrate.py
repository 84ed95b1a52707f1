"""Bring a store of an older schema forward (forward only), at open (`MemoryStore.open`).

Version 1 → 2 (issue 23): the internal marks version 1 kept in `tags` under the prefix `cm:` get their
typed homes, and are stripped from `tags` (user tags stay):

- `cm:anchor:<path>=<blob>` → the `anchors` column (path → blob id; the path is everything before the
  last `=`, blob ids being hex);
- `cm:conflict:<id>` → the `conflicts_with` column (version 1 marked both rows; both keep their mark,
  readers join the two ends anyway);
- `cm:seen:<time>` → a row of the `usage` side table (seen_at, one hit; the salience the hits added is
  already in the row's `salience`, which stays).

Steps, each safe to run again if the process is killed mid-way: (1) a backup of the version-1 table
(storage/backup.py; skipped when one of this very version exists), (2) the `usage` rows written by
overwriting that table with what the marks say (the same rows however often it runs), (3) the `memories`
table overwritten with the converted rows under the version-2 schema — one LanceDB commit, so the table is
either still version 1 (and the next open migrates again) or wholly version 2. The overwrite drops the
table's indexes: the full-text one is built again at once (`ensure_indexes`), a vector index by upkeep.

Version 2 → 3 (issue 26): the encoding gate's nullable columns (`novelty`, `event_salience`, `prediction_error`,
`gate`) are added, null on every existing row (nobody measured those writes); the same steps do it — the rows
pass through `convert_rows` unchanged (a version-2 row has no `cm:` marks) and the overwrite under the new schema
fills the new columns with nulls.

Version 3 → 4 (issue 28): the `terms` column (storage/schema.py), the row's content as the lexical channel reads
it, and the full-text index moves from `content` to it. The same steps: the overwrite under the new schema writes
each row's terms, made by the function the search component handed `MemoryStore.open` (`row_terms`). Opened
without one (storage's own tools: reembed, a check), the rows get none and the table is marked
(`schema.TERMS_PENDING_KEY`); the next open that has the function fills them (`fill_terms`: a backup, then one
overwrite of the same rows with their terms, the mark cleared — the same guarantees: a kill before the commit
leaves the rows as they were and the next open does it again). A restore of an older backup, a salvage from old
data files or a repair that brings such rows back marks the table the same way.

`pending` tells a caller (the CLI, which asks first on a terminal) whether opening a store will migrate it.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from chronomem.config import is_remote
from chronomem.records import UTC, Usage
from chronomem.storage.schema import (
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    TABLE_NAME,
    TERMS_COLUMN,
    USAGE_TABLE,
    RowTerms,
    memories_schema,
    schema_version,
    stored_model,
    usage_schema,
    with_terms,
)

log = logging.getLogger(__name__)

#: The prefix version 1 reserved in `tags` for internal marks.
V1_PREFIX = "cm:"
_CONFLICT, _SEEN, _ANCHOR = "cm:conflict:", "cm:seen:", "cm:anchor:"


def pending(path: Path | str) -> int | None:
    """The schema version of the store at `path` when opening it will migrate it (older than this code's),
    else None (no store, or already current, or newer: `MemoryStore.open` refuses that). A store in object storage
    is shared by a team: it is migrated when it opens, under the write lease, without a question (None)."""
    if is_remote(path):
        return None
    table_dir = Path(path) / f"{TABLE_NAME}.lance"
    if not table_dir.is_dir():
        return None
    import lance  # pylance reads the schema; LanceDB's import is ~0.8 s of CPU (storage/lazy_imports.py)

    try:
        schema = lance.dataset(str(table_dir)).schema
    except Exception:  # a damaged store is for `open` to report
        return None
    if (schema.metadata or {}).get(SCHEMA_VERSION_KEY) is None:
        return None
    found = schema_version(schema)
    return found if found < SCHEMA_VERSION else None


def split_marks(tags: list[str]) -> tuple[list[str], dict[str, str], list[str], datetime | None]:
    """A version-1 `tags` list as (user tags, anchors, conflict ids, last seen)."""
    user: list[str] = []
    anchors: dict[str, str] = {}
    conflicts: list[str] = []
    seen: datetime | None = None
    for tag in tags:
        if tag.startswith(_ANCHOR):
            path, sep, blob = tag[len(_ANCHOR) :].rpartition("=")
            if sep and path:
                anchors[path] = blob
        elif tag.startswith(_CONFLICT):
            conflicts.append(tag[len(_CONFLICT) :])
        elif tag.startswith(_SEEN):
            try:
                seen = datetime.fromisoformat(tag[len(_SEEN) :].replace("Z", "+00:00")).astimezone(UTC)
            except ValueError:
                pass
        elif not tag.startswith(V1_PREFIX):
            user.append(tag)
    return user, anchors, list(dict.fromkeys(conflicts)), seen


def convert_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Usage]]:
    """Version-1 rows (every column) as version-2 rows, and the usage states their seen marks held."""
    out: list[dict[str, Any]] = []
    usage: list[Usage] = []
    for row in rows:
        user, anchors, conflicts, seen = split_marks(list(row.get("tags") or []))
        known = dict(row.get("anchors") and {a["path"]: a["blob"] for a in row["anchors"]} or {})
        known.update(anchors)
        new = dict(row)
        new["tags"] = user
        new["anchors"] = [{"path": p, "blob": b} for p, b in sorted(known.items())]
        new["conflicts_with"] = list(dict.fromkeys([*(row.get("conflicts_with") or []), *conflicts]))
        out.append(new)
        if seen is not None:
            usage.append(Usage(id=row["id"], at=seen, seen_at=seen, hits=1))
    return out, usage


def upgrade_rows(rows: Any) -> Any:
    """An Arrow table of an older schema's rows (a backup taken before an upgrade) as rows of this schema; the
    recall marks they held are left out (a repair merges rows, not usage). Rows of this schema pass as they are."""
    import pyarrow as pa

    if schema_version(rows.schema) >= SCHEMA_VERSION:
        return rows
    model, dim = stored_model(rows.schema)
    converted, _ = convert_rows(rows.to_pylist())
    return with_terms(pa.Table.from_pylist(converted, schema=memories_schema(dim, model)), None)


def _backed_up(path: Path, table: Any) -> Any:
    """Every row of `table` (Arrow), after a backup of them unless one of this very version exists."""
    from chronomem.storage.backup import list_backups, write_backup

    version = int(table.version)
    current = table.to_arrow()
    if not any(b.version == version for b in list_backups(path)):
        write_backup(path, current, version)
    return current


def fill_terms(path: Path, db: Any, table: Any, row_terms: RowTerms) -> None:
    """Give every row of the current-schema `table` that has no `terms` its terms (see the module)."""
    from chronomem.storage import ledger

    missing = int(table.count_rows(f"{TERMS_COLUMN} IS NULL"))
    log.info("writing the terms of %d rows of the store at %s", missing, path)
    current = _backed_up(path, table)
    data = with_terms(current.cast(table.schema), row_terms)  # the mark goes with the last row without terms
    filled = db.create_table(TABLE_NAME, data=data, schema=data.schema, mode="overwrite")
    ledger.rebase(path, int(filled.version), int(filled.count_rows()))


def migrate(path: Path, db: Any, table: Any, row_terms: RowTerms | None = None) -> None:
    """Migrate the open older `table` of the store at `path` to this code's schema (see the module); each row's
    terms from `row_terms` (None: none, filled by a later open)."""
    import pyarrow as pa

    from chronomem.storage import ledger
    from chronomem.storage.usage import _row

    found = schema_version(table.schema)
    log.info("migrating the store at %s from schema %d to %d", path, found, SCHEMA_VERSION)
    current = _backed_up(path, table)
    rows, usage = convert_rows(current.to_pylist())
    model, dim = stored_model(table.schema)
    # (2) usage: the same rows however often this runs (kept when there are none to add).
    if usage:
        exists = USAGE_TABLE in db.list_tables().tables
        previous = db.open_table(USAGE_TABLE).to_arrow().to_pylist() if exists else []
        mine = {u.id for u in usage}
        kept = [r for r in previous if r["id"] not in mine]
        data = pa.Table.from_pylist(kept + [_row(u) for u in usage], schema=usage_schema())
        if exists:
            db.open_table(USAGE_TABLE).add(data, mode="overwrite")
        else:
            db.create_table(USAGE_TABLE, data=data, schema=usage_schema())
    # (3) memories: one commit under the new schema.
    schema = memories_schema(dim, model)
    data = with_terms(pa.Table.from_pylist(rows, schema=schema), row_terms)
    migrated = db.create_table(TABLE_NAME, data=data, schema=data.schema, mode="overwrite")
    ledger.rebase(path, int(migrated.version), int(migrated.count_rows()))
    log.info("store at %s migrated to schema %d (%d rows, %d usage rows)", path, SCHEMA_VERSION, len(rows), len(usage))
