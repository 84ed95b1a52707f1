"""The `usage` side table: what happens to a memory after it is written, kept beside it.

A memory row is written once; afterwards only its validity is set (storage/schema.py). What changes on
reads — the last recall hit, the count of hits, the salience they add — what a restatement of a fact
adds (its salience step, the chunk that restated it, refreshed code anchors, more paths), and the later
facts found to disagree with it (the other end of the `conflicts_with` column of those later rows) is appended here,
one row per change, each row carrying the memory's whole state (`records.Usage`): readers take the latest
row per id. Appends happen under the store's write lock (`MemoryService.writing`), so each append reads
the state it extends. Upkeep (`compact`, run by `MemoryStore.optimize`) rewrites the table down to that
latest row per id; a purge erases the rows of what it purges (`erase`).

`UsageLog.latest` keeps the latest state per id in memory, read again when the table has moved (a `stat`
or two, `CommitWatch`), so attaching usage to the rows a search returns (`MemoryStore.answer`) costs a dict
lookup per row. The table is created at the first append: a store nobody recalled from has none.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chronomem.config import StoreLocation, is_remote
from chronomem.records import UTC, Usage, anchor_map
from chronomem.storage.commitwatch import CommitWatch
from chronomem.storage.schema import USAGE_TABLE, usage_schema

#: On a shared store, how long an absent usage table is taken as still absent: looking is a listing of the bucket
#: (~20-30 ms on the local S3 server) that every read made until another writer's first recall created it, and
#: usage only adjusts ranking, so a few seconds' lag in seeing the first usage row costs nothing (issue 48).
ABSENT_FOR_SECONDS = 5.0


class UsageLog:
    """The `usage` table of one store directory."""

    def __init__(self, path: StoreLocation, connect: Any) -> None:
        self.path = path
        self._connect = connect  # () -> LanceDB connection of the store directory
        self._db: Any = None
        self._table: Any = None
        self._version: int | None = None
        self._latest: dict[str, Usage] = {}
        self._absent_since: float | None = None  # when a shared store's table was last looked for and not there
        self._lock = threading.Lock()
        self._watch = CommitWatch.of(path, f"{USAGE_TABLE}.lance")

    # ------------------------------------------------------------------ reading
    def _exists(self) -> bool:
        if is_remote(self.path):  # one listing, only until the table is there (then `_table` is kept)
            from chronomem.storage.remote import objects_of

            there = bool(objects_of(self.path).names(f"{USAGE_TABLE}.lance/_versions"))  # type: ignore[arg-type]
            self._absent_since = None if there else time.monotonic()
            return there
        return (Path(self.path) / f"{USAGE_TABLE}.lance").is_dir()

    def _exists_for_reading(self) -> bool:
        """`_exists`, but a shared store's table found absent is not looked for again for ABSENT_FOR_SECONDS (reads
        only: a purge or an upkeep looks every time)."""
        if self._absent_since is not None and time.monotonic() - self._absent_since < ABSENT_FOR_SECONDS:
            return False
        return self._exists()

    def _handle(self, create: bool = False) -> Any:
        if self._table is None:
            if self._db is None:
                self._db = self._connect()
            if USAGE_TABLE in self._db.list_tables().tables:
                self._table = self._db.open_table(USAGE_TABLE)
            elif create:
                self._table = self._db.create_table(USAGE_TABLE, schema=usage_schema(), exist_ok=True)
            else:
                return None
            self._watch.v2_names = _uses_v2_names(self._table)
        return self._table

    def latest(self) -> dict[str, Usage]:
        """Memory id → its latest usage state (read again only when the table has moved)."""
        with self._lock:
            if self._version is not None and not self._watch.moved(self._version):
                return self._latest
            if self._table is None and not self._exists_for_reading():
                return self._latest
            if self._table is None and not is_remote(self.path):
                return self._read_quickly()
            table = self._handle()
            if table is None:
                return self._latest
            table.checkout_latest()
            self._latest = _latest_states(table.to_arrow().to_pylist())
            self._version = int(table.version)
            return self._latest

    def _read_quickly(self) -> dict[str, Usage]:
        """The latest states read through pylance, without opening LanceDB (a starting server's first recall,
        see `MemoryStore._open_quick`); the LanceDB handle opens at the first append."""
        import lance

        dataset = lance.dataset(str(Path(self.path) / f"{USAGE_TABLE}.lance"))
        version = int(dataset.version)
        self._watch = CommitWatch.detect(self.path, f"{USAGE_TABLE}.lance", version)
        self._latest = _latest_states(dataset.to_table().to_pylist())
        self._version = version
        return self._latest

    def get(self, ids: Iterable[str]) -> dict[str, Usage]:
        latest = self.latest()
        return {i: latest[i] for i in ids if i in latest}

    def rows(self) -> int:
        """Rows in the table (one per change until `compact`)."""
        table = self._handle() if self._exists() else None
        if table is None:
            return 0
        table.checkout_latest()
        return int(table.count_rows())

    # ------------------------------------------------------------------ writing
    def append(self, states: Sequence[Usage]) -> None:
        """Record new states (each the memory's whole state, `at` its time) in one commit."""
        if not states:
            return
        import pyarrow as pa

        data = pa.Table.from_pylist([_row(s) for s in states], schema=usage_schema())
        with self._lock:
            table = self._handle(create=True)
            table.checkout_latest()
            table.add(data)
            self._version = None  # read again, with our rows, at the next `latest`

    def compact(self, retention: timedelta) -> int:
        """Rewrite the table down to the latest row per id and drop old versions; rows removed."""
        if not self._exists():
            return 0
        with self._lock:
            table = self._handle()
            if table is None:
                return 0
            table.checkout_latest()
            rows = table.to_arrow().to_pylist()
            states = _latest_states(rows)
            removed = len(rows) - len(states)
            if removed:
                self._overwrite(table, states.values())
            table.optimize(cleanup_older_than=retention)
            self._version = None
            return removed

    def erase(self, ids: Iterable[str]) -> int:
        """Remove every row of `ids` for good (a purge): rewrite the table and drop every old version."""
        gone = set(ids)
        if not gone or not self._exists():
            return 0
        import warnings

        with self._lock:
            table = self._handle()
            if table is None:
                return 0
            table.checkout_latest()
            states = _latest_states(table.to_arrow().to_pylist())
            kept = [s for i, s in states.items() if i not in gone]
            self._overwrite(table, kept)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # a shared store's other writers may have a commit in flight: keep unreferenced young files
                table.optimize(cleanup_older_than=timedelta(0), delete_unverified=not is_remote(self.path))
            self._version = None
            return len(states) - len(kept)

    @staticmethod
    def _overwrite(table: Any, states: Iterable[Usage]) -> None:
        import pyarrow as pa

        table.add(pa.Table.from_pylist([_row(s) for s in states], schema=usage_schema()), mode="overwrite")


def _row(state: Usage) -> dict[str, Any]:
    return {
        "id": state.id,
        "at": state.at,
        "seen_at": state.seen_at,
        "hits": state.hits,
        "boost": state.boost,
        "restated_by": list(state.restated_by),
        "paths": list(state.paths),
        "anchors": [{"path": p, "blob": b} for p, b in sorted(state.anchors.items())],
        "conflicts_with": list(state.conflicts_with),
    }


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


def _latest_states(rows: list[dict[str, Any]]) -> dict[str, Usage]:
    """The latest state per id: the greatest `at`, and of equal ones the row appended last."""
    out: dict[str, Usage] = {}
    for row in rows:
        at = _utc(row["at"])
        held = out.get(row["id"])
        if held is not None and at is not None and at < held.at:
            continue
        out[row["id"]] = Usage(
            id=row["id"],
            at=at,  # type: ignore[arg-type]
            seen_at=_utc(row.get("seen_at")),
            hits=int(row.get("hits") or 0),
            boost=float(row.get("boost") or 0.0),
            restated_by=list(row.get("restated_by") or []),
            paths=list(row.get("paths") or []),
            anchors=anchor_map(row.get("anchors")),
            conflicts_with=list(row.get("conflicts_with") or []),
        )
    return out


def _uses_v2_names(table: Any) -> bool:
    try:
        return bool(table.uses_v2_manifest_paths())
    except Exception:
        return True
