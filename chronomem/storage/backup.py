"""Backups: a compact snapshot file of the whole table, taken on a schedule and by `chronomem backup`.

A backup is one Parquet file (zstd) of every row and every column — vectors included, so a restore
or a repair needs no model and gives back exactly the rows — at one table version, in
`<store>/backups/backup-<UTC time>-v<version>.parquet`, written to a temporary name and renamed, the
newest `BACKUP_KEEP` kept. A file rather than a LanceDB tag: a tag only pins a version's manifest,
and that version reads the same data files as the newest one, so a damaged or deleted data file
takes the tagged version down with it; a file of its own does not share them. Not an export
(`chronomem export`): that leaves the vectors out, to be recomputed, and is for moving stores.

The consolidator takes one when the last is older than `BACKUP_INTERVAL` and the table has changed
since (consolidate/runner.py); `doctor` reports the age of the last one; `repair` merges the newest
one with what still reads (doctor.py, which also holds `restore_backup`). A purge deletes every backup (they
hold the purged text) and takes a new one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chronomem.records import UTC, utcnow

BACKUP_DIR = "backups"
#: Backups kept (the oldest beyond these are deleted when a new one is written).
BACKUP_KEEP = 4
#: The consolidator takes a backup when the newest is older than this and the table has changed since.
BACKUP_INTERVAL = timedelta(hours=6)
#: Rows read and written per step of a scheduled backup: ~2 MB of 384-d vectors and text, a few ms of zstd on
#: one core, so a call arriving meanwhile shares the CPU with one batch at most (`take_backup`'s `pause`).
BACKUP_BATCH_ROWS = 1024
_NAME = re.compile(r"^backup-(\d{8}T\d{6}(?:\d{6})?Z)-v(\d+)\.parquet$")


@dataclass(frozen=True)
class Backup:
    path: Path
    taken: datetime
    version: int

    @property
    def rows(self) -> int:
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(self.path).metadata.num_rows)

    def age(self, now: datetime | None = None) -> timedelta:
        return (now or utcnow()) - self.taken


def backup_dir(store: Path | str) -> Path:
    return Path(store) / BACKUP_DIR


def list_backups(store: Path | str) -> list[Backup]:
    """The store's backups, oldest first."""
    folder = backup_dir(store)
    found = []
    if folder.is_dir():
        for entry in folder.iterdir():
            match = _NAME.match(entry.name)
            if match:
                stamp = match.group(1)
                fmt = "%Y%m%dT%H%M%S%fZ" if len(stamp) > 16 else "%Y%m%dT%H%M%SZ"
                taken = datetime.strptime(stamp, fmt).replace(tzinfo=UTC)
                found.append(Backup(entry, taken, int(match.group(2))))
    return sorted(found, key=lambda b: (b.taken, b.version))


def latest_backup(store: Path | str) -> Backup | None:
    backups = list_backups(store)
    return backups[-1] if backups else None


def write_backup(
    store: Path | str,
    rows: Any,
    version: int,
    keep: int = BACKUP_KEEP,
    now: datetime | None = None,
    schema: Any = None,
) -> Backup:
    """Write `rows` (an Arrow table of the whole table at `version`, or its record batches in order with their
    `schema`) as the newest backup; keep the newest `keep`. Batches are written as they come: a backup of a
    large table never holds it all in memory."""
    import pyarrow.parquet as pq

    folder = backup_dir(store)
    folder.mkdir(parents=True, exist_ok=True)
    taken = (now or utcnow()).astimezone(UTC)
    target = folder / f"backup-{taken.strftime('%Y%m%dT%H%M%S%fZ')}-v{version}.parquet"
    tmp = folder / f".{target.name}.tmp"
    try:
        if schema is None:
            pq.write_table(rows, tmp, compression="zstd")
        else:
            with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
                for batch in rows:
                    writer.write_batch(batch)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for old in list_backups(store)[:-keep] if keep > 0 else []:
        old.path.unlink(missing_ok=True)
    return Backup(target, taken, version)


def read_backup(path: Path | str) -> Any:
    """A backup's rows as an Arrow table."""
    import pyarrow.parquet as pq

    return pq.read_table(path)


def drop_backups(store: Path | str) -> int:
    """Delete every backup (a purge: they hold what was purged); how many there were."""
    backups = list_backups(store)
    for b in backups:
        b.path.unlink(missing_ok=True)
    return len(backups)


def describe_age(age: timedelta) -> str:
    seconds = max(int(age.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def take_backup(store: Any, keep: int = BACKUP_KEEP, pause: Callable[[], None] | None = None) -> Backup:
    """Snapshot the table of an open `MemoryStore` at its current version (a read: no write lock needed), a batch
    of `BACKUP_BATCH_ROWS` at a time; `pause`, called before each batch, may wait (the consolidator's waits
    while tool calls flow, so a backup of a large table does not take the cores from them)."""
    dataset = store._table.to_lance()  # pinned to this version: commits made meanwhile are not read
    version = int(dataset.version)

    def batches() -> Iterable[Any]:
        for batch in dataset.to_batches(batch_size=BACKUP_BATCH_ROWS):
            if pause is not None:
                pause()
            yield batch

    return write_backup(store.path, batches(), version, keep=keep, schema=dataset.schema)


def backup_due(store: Any, interval: timedelta = BACKUP_INTERVAL, now: datetime | None = None) -> bool:
    """Whether the schedule wants a backup: the newest is older than `interval` (or there is none) and the table
    has changed since it (a newer version, and rows to back up)."""
    newest = latest_backup(store.path)
    if newest is not None and newest.age(now) < interval:
        return False
    version = int(store._table.version)
    if newest is not None and newest.version >= version:
        return False
    return store.count() > 0
