"""Store health: recognise a damaged or foreign store directory, check one, and repair what can be.

LanceDB commits are atomic (a new manifest appears whole or not at all), so a killed
process never damages a store; disks, sync tools and hand edits can. `check` opens the
table, reads every row of the newest version, runs a full-text query, and compares the
table with what was acknowledged (storage/ledger.py: a lost newest manifest opens the table
at an older version, silently, otherwise) and with the newest backup (storage/backup.py).
`repair` salvages rather than rolls back, and never deletes: an unreadable newest manifest is
moved to `<store>/quarantine/<time>/`, every row that still reads is kept (row by row around a
damaged data file), merged with the newest backup and the rows of data files no surviving manifest
references (storage/salvage.py; latest state of each row wins), written as a new version, and what
could not be recovered is named by id. Failures that are the machine's (full disk, quota, read-only
or forbidden store) are named as such and never called damage. Where a repair cannot help, the way out
named is another: a store whose table folder is gone while a backup reads is brought back by `chronomem
restore` of that backup (`table_gone_hint`), and a store path that is a file needs another `--store`
(`file_hint`). `restore_backup` (for `chronomem restore`) reports what a replace leaves out: the memories
written after the backup (`Restored`, `left_out_of`). A store in object storage (`check_remote`) has no local
ledger: its table is compared with the acknowledgement record in the bucket (storage/groupcommit.py), every
acknowledged id not purged since present, a missing one named.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from chronomem.config import is_remote
from chronomem.errors import StoreError
from chronomem.records import utcnow
from chronomem.storage import salvage
from chronomem.storage.schema import (
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    TABLE_NAME,
    USAGE_TABLE,
    memories_schema,
    schema_version,
    stored_model,
    with_terms,
)

log = logging.getLogger(__name__)

#: Files chronomem itself keeps beside the table (locks, the consolidator's state, quarantined manifests);
#: any other entry, hidden files aside, makes a directory foreign.
OWN_ENTRIES = {f"{TABLE_NAME}.lance", f"{USAGE_TABLE}.lance", "quarantine", "backups"}
OWN_PREFIXES = (".", "consolidate-state")
QUARANTINE = "quarantine"
_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+:\d+")
_DAMAGE_MARKERS = ("lance error", "LanceError", "Not found:", "failed to fill whole buffer", "Corrupt", "corrupt")


def error_line(exc: BaseException) -> str:
    """The first line of a LanceDB error without the Rust source locations it carries."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _RUST_LOCATION.sub("", text).strip()


def recovery_hint(path: Path | str) -> str:
    """What to run for a store that does not open or read: `restore` when its table folder is gone and a backup
    can bring the memories back (a repair has nothing to read then), else `doctor --repair`."""
    if not is_remote(path):
        gone = table_gone_hint(Path(path))
        if gone is not None:
            return f"its `{TABLE_NAME}.lance` folder is gone: {gone}"
    return f"run `chronomem doctor --store {path} --repair`, or move the directory aside and `chronomem import` an export"


def restore_command(path: Path | str, backup: Path | str, replace: bool = False) -> str:
    """The restore to run, quoted for a shell (a path with spaces copies as one argument)."""
    return f"`chronomem restore --store {shlex.quote(str(path))}{' --replace' if replace else ''} {shlex.quote(str(backup))}`"


def table_gone_hint(path: Path) -> str | None:
    """For a store directory whose table folder is missing while a backup reads: the restore that brings the
    backup's memories back (with what it holds and how old it is); None otherwise."""
    from chronomem.storage.backup import describe_age, latest_backup

    if not path.is_dir() or (path / f"{TABLE_NAME}.lance").exists():
        return None
    newest = latest_backup(path)
    if newest is None:
        return None
    try:
        rows = newest.rows
    except Exception:
        return None
    return (
        f"run {restore_command(path, newest.path)} to bring back the newest backup's {rows} "
        f"row{'s' if rows != 1 else ''} (version {newest.version}, taken {describe_age(newest.age())} ago; what was "
        "written after it is in no backup); `doctor --repair` has no table to read"
    )


def file_hint(path: Path) -> str:
    """What to do when the store path is a file: no repair makes a file a store."""
    if path.suffix == ".parquet" and path.name.startswith("backup-"):
        return (f"it looks like a chronomem backup: {restore_command('DIR', path)} loads it into a store directory; "
                "--store names the store's directory, not a file in it")
    return ("--store (or CHRONOMEM_HOME) must name a directory: point it at the store's directory, or move the file "
            "aside; `doctor --repair` cannot make a file a store")


#: errno → what it is and what to do, for failures that are the machine's, not the store's: nothing is damaged.
_RESOURCE_ERRORS = {
    errno.ENOSPC: ("the disk is full", "free some space and retry"),
    errno.EDQUOT: ("the disk quota is used up", "free some space or raise the quota, and retry"),
    errno.EFBIG: ("a file grew past the size limit of this process or file system", "raise the limit (ulimit -f) and retry"),
    errno.EROFS: ("the store is on a read-only file system", "mount it read-write or point --store elsewhere"),
    errno.EACCES: ("permission denied", "give this user write access to the store directory"),
    errno.EPERM: ("operation not permitted", "give this user write access to the store directory"),
}
#: The same errors as LanceDB's Rust core words them ("… (os error 28)") when it does not pass an errno on.
_OS_ERROR = re.compile(r"os error (\d+)")
_RESOURCE_WORDS = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "File too large": errno.EFBIG,
    "Read-only file system": errno.EROFS,
    "Permission denied": errno.EACCES,
}


def resource_errno(exc: BaseException) -> int | None:
    """The errno when `exc` (or what caused it) is a full disk, a quota, a read-only or forbidden store."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _RESOURCE_ERRORS:
            return current.errno
        text = str(current)
        for number in _OS_ERROR.findall(text):
            if int(number) in _RESOURCE_ERRORS:
                return int(number)
        for words, number in _RESOURCE_WORDS.items():
            if words in text:
                return number
        current = current.__cause__ or current.__context__
    return None


def resource_error(path: Path | str, exc: BaseException, doing: str = "write to") -> StoreError | None:
    """The one-line error for a full disk, quota, read-only or permission failure (the store is not damaged);
    for a store in object storage, the object store's failure said plainly (storage/remote.py)."""
    if is_remote(path):
        from chronomem.storage.remote import explain

        if isinstance(exc, (NameError, TypeError, AttributeError, AssertionError, KeyError, IndexError)):
            return None  # a bug of ours, not the object store's answer
        return explain(path, exc)  # type: ignore[arg-type]
    number = resource_errno(exc)
    if number is None:
        return None
    what, fix = _RESOURCE_ERRORS[number]
    return StoreError(
        f"cannot {doing} the store at {path}: {what} ({errno.errorcode.get(number, number)}); {fix}. "
        "The store is not damaged: every acknowledged memory is still there"
    )


def is_damage(exc: BaseException) -> bool:
    """True when a LanceDB failure says the files on disk are missing or unreadable."""
    if isinstance(exc, StoreError) or resource_errno(exc) is not None:
        return False
    text = str(exc)
    return isinstance(exc, RuntimeError | OSError | ValueError) and any(m in text for m in _DAMAGE_MARKERS)


def damage_error(path: Path | str, exc: BaseException) -> StoreError:
    """The one-line error a tool or command reports for a damaged store."""
    return StoreError(f"the store at {path} is damaged ({error_line(exc)}): {recovery_hint(path)}")


def foreign_entries(path: Path) -> list[str]:
    """Entries of `path` that a chronomem store does not hold (empty for a store or an empty directory)."""
    if is_remote(path):
        return []
    if not path.is_dir() or (path / f"{TABLE_NAME}.lance").exists():
        return []
    return sorted(name for name in os.listdir(path) if name not in OWN_ENTRIES and not name.startswith(OWN_PREFIXES))


@dataclass
class Checkup:
    """What `check` or `repair` found and did."""

    path: str
    ok: bool = True
    version: int | None = None
    versions: int = 0
    rows: int | None = None
    #: The schema version the table records (storage/schema.py; an older one is migrated when the store opens).
    schema: int | None = None
    #: The model the table records its vectors are from (`chronomem reembed` changes it), and their dimension.
    model: str | None = None
    dim: int | None = None
    #: Rows per model that made their vector (each row's `embed_model`), when the table reads.
    row_models: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: What a failure is when it is not damage (a store in object storage that cannot be reached, or that does
    #: not honour conditional creates), with what to do: said instead of DAMAGED and the repair hint.
    verdict: str | None = None
    next_step: str | None = None
    #: The newest backup that reads (`chronomem restore` of it is the way back when a repair cannot do it).
    backup: str | None = None

    def fail(self, problem: str) -> None:
        self.ok = False
        self.problems.append(problem)

    def text(self) -> str:
        lines = [f"store {self.path}: " + ("healthy" if self.ok else self.verdict or "DAMAGED")]
        if self.version is not None:
            rows = f", {self.rows} rows" if self.rows is not None else ""
            kept = f"{self.versions} version{'s' if self.versions != 1 else ''} kept"
            lines.append(f"  table version {self.version} ({kept}){rows}")
        if self.schema is not None:
            if self.schema < SCHEMA_VERSION:
                lines.append(f"  schema {self.schema} (this chronomem upgrades it to {SCHEMA_VERSION} when it opens the store)")
            elif self.schema > SCHEMA_VERSION:
                lines.append(f"  schema {self.schema}, newer than this chronomem ({SCHEMA_VERSION}): upgrade chronomem")
            else:
                lines.append(f"  schema {self.schema}")
        if self.model is not None:
            lines.append(f"  vectors from {self.model} ({self.dim}-d)")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  problem: {p}" for p in self.problems]
        lines += [f"  repaired: {a}" for a in self.actions]
        if not self.ok and self.next_step:
            lines.append(f"  next: {self.next_step}")
        elif not self.ok and self.actions and self.backup:  # a repair did not do it: the newest backup can
            lines.append(f"  next: {restore_command(self.path, self.backup, replace=True)} makes the store that backup "
                         "(its current state is backed up first; it lists the memories the backup lacks), or "
                         "move the directory aside and `chronomem import` an export")
        elif not self.ok:
            lines.append(f"  next: {recovery_hint(self.path) if not self.actions else 'move the directory aside and `chronomem import` an export'}")
        return "\n".join(lines)


def _connect(path: Any) -> Any:
    import lancedb

    os.environ.setdefault("LANCE_LOG", "error")
    options = path.storage_options() if is_remote(path) else None
    return lancedb.connect(str(path), read_consistency_interval=timedelta(0), storage_options=options or None)


def _fts_works(table: Any) -> bool:
    from lancedb.query import MatchQuery

    from chronomem.storage.schema import FTS_INDEX, TERMS_COLUMN

    if not any(idx.name == FTS_INDEX for idx in table.list_indices()):
        return True  # created again on the next open (a store of schema 1-3: after its migration)
    table.search(MatchQuery("chronomem", TERMS_COLUMN), query_type="fts").limit(1).to_list()
    return True


def check(path: Path | str) -> Checkup:
    """Open the store read-only and read all of it, compare it with what was acknowledged (the ledger and the
    newest backup); say what is wrong, if anything, and how old the last backup is. A store in object storage
    gets `check_remote` instead."""
    if is_remote(path):
        return check_remote(path)  # type: ignore[arg-type]
    path = Path(path)
    report = Checkup(str(path))
    if not path.exists():
        report.notes.append("no store here yet (one is created on first use)")
        return report
    if not path.is_dir():
        report.fail("the store path is a file, not a directory")
        report.verdict, report.next_step = "NOT A STORE", file_hint(path)
        return report
    foreign = foreign_entries(path)
    if foreign:
        report.fail(f"not a chronomem store: it holds {', '.join(foreign[:5])}{' …' if len(foreign) > 5 else ''}")
        return report
    if not (path / f"{TABLE_NAME}.lance").exists():
        gone = table_gone_hint(path)
        if gone is None:
            report.notes.append("empty (a store is created on first use)")
        else:  # backups but no table: the folder was deleted or moved, not a new store
            report.fail(f"the table folder `{TABLE_NAME}.lance` is missing, and backups of it exist")
            report.next_step = gone
        _note_acknowledged(path, report, None, set())
        return report
    try:
        table = _connect(path).open_table(TABLE_NAME)
    except Exception as exc:
        report.fail(f"the table does not open: {error_line(exc)}")
        _note_backup(path, report)
        return report
    if (table.schema.metadata or {}).get(SCHEMA_VERSION_KEY) is None:
        report.fail(f"the `{TABLE_NAME}` table here was not written by chronomem")
        return report
    report.version = int(table.version)
    report.versions = len(table.list_versions())
    report.model, report.dim = stored_model(table.schema)
    report.schema = schema_version(table.schema)
    try:
        everything = table.to_arrow()
        report.rows = int(everything.num_rows)
        ids = set(everything.column("id").to_pylist())
        for made_by in everything.column("embed_model").to_pylist():
            key = made_by or "?"
            report.row_models[key] = report.row_models.get(key, 0) + 1
    except Exception as exc:
        report.fail(f"version {report.version} does not read: {error_line(exc)}")
        try:
            rows, unreadable = salvage_rows(table)
        except Exception as salvage_exc:
            report.notes.append(f"its rows cannot be counted either ({error_line(salvage_exc)})")
            return report
        report.notes.append(f"{rows.num_rows} of {rows.num_rows + unreadable} rows still read; `--repair` keeps them")
        ids = set(rows.column("id").to_pylist())
    else:
        try:
            _fts_works(table)
        except Exception as exc:
            report.fail(f"the full-text index does not read: {error_line(exc)}")
    _note_acknowledged(path, report, int(table.count_rows()), ids)
    return report


def check_remote(location: Any) -> Checkup:
    """A store in object storage: is the bucket reachable with these credentials, does it honour conditional
    creates (`If-None-Match: *`: without them concurrent writers silently lose commits, unless LanceDB commits
    through a DynamoDB table, `s3+ddb://`), does the table open and read, and does it hold every id its
    acknowledgement record names (the missing ones named)?"""
    from chronomem.storage.remote import conditional_create_holds, explain, objects_of

    report = Checkup(str(location))
    objects = objects_of(location)
    try:
        objects.names("")
    except Exception as exc:
        report.verdict, report.next_step = "UNREACHABLE", "fix what the problem line says, then run doctor again"
        report.fail(str(explain(location, exc)))
        return report
    report.notes.append("reachable, and the credentials may list it")
    try:
        honoured = conditional_create_holds(objects)
    except Exception as exc:
        report.verdict, report.next_step = "NOT WRITABLE", "give these credentials write access to the prefix"
        report.fail(f"cannot write a probe object: {explain(location, exc)}")
        return report
    if honoured:
        report.notes.append("honours conditional create (If-None-Match): several writers are safe")
    elif location.scheme == "s3+ddb":
        report.notes.append("ignores conditional create, but commits go through the DynamoDB commit table")
    else:
        report.verdict = "UNSAFE FOR SEVERAL WRITERS"
        report.next_step = (
            "use a store that honours If-None-Match (AWS S3, MinIO, R2 do), or `s3+ddb://…?ddbTableName=…` "
            "with a DynamoDB commit table; until then let one process write"
        )
        report.fail("the store ignores conditional create (If-None-Match: *): concurrent writers would silently lose "
                    "commits and the write lease would not hold")
    try:
        db = _connect(location)
        if TABLE_NAME not in db.list_tables().tables:
            report.notes.append("empty (a store is created on first use)")
            return report
        table = db.open_table(TABLE_NAME)
        report.version = int(table.version)
        report.versions = len(table.list_versions())
        report.model, report.dim = stored_model(table.schema)
        report.schema = schema_version(table.schema)
        report.rows = int(table.count_rows())
        everything = table.to_arrow()
        for made_by in everything.column("embed_model").to_pylist():
            report.row_models[made_by or "?"] = report.row_models.get(made_by or "?", 0) + 1
        present = set(everything.column("id").to_pylist())
    except Exception as exc:
        report.fail(f"the table does not read: {explain(location, exc)}")
        return report
    _note_remote_acks(location, objects, report, present)
    return report


def _note_remote_acks(location: Any, objects: Any, report: Checkup, present: set[str]) -> None:
    """Compare the table with the shared store's acknowledgement record (`_chronomem/acks/`, storage/groupcommit.py):
    every acknowledged id not purged since must be in the table; a missing one is named."""
    from chronomem.storage.groupcommit import queued_count, read_record
    from chronomem.storage.remote import explain

    try:
        acked, purged, records = read_record(objects)
        waiting = queued_count(objects)
    except Exception as exc:
        report.fail(f"the acknowledgement record does not read: {explain(location, exc)}")
        return
    expected = acked - purged
    missing = sorted(expected - present)
    if missing:
        report.fail(f"{len(missing)} acknowledged memor{'y is' if len(missing) == 1 else 'ies are'} missing from the "
                    f"table: {', '.join(missing[:20])}{' …' if len(missing) > 20 else ''}")
    elif records:
        report.notes.append(f"all {len(expected)} acknowledged memories are present ({records} acknowledgement records"
                            f"{f', {len(acked & purged)} purged since' if acked & purged else ''})")
    if waiting:
        report.notes.append(f"{waiting} note{'s wait' if waiting != 1 else ' waits'} in the commit queue for the next "
                            "writer (not acknowledged yet)")


def _note_acknowledged(path: Path, report: Checkup, rows: int | None, ids: set[str]) -> None:
    """Compare the table with the ledger and the newest backup: a regression is damage, named by its ids."""
    from chronomem.storage import ledger as ledger_mod

    acked = ledger_mod.read(path)
    if acked is not None:
        version = report.version or 0
        lost = ledger_mod.regression(path, version, rows or 0)
        if lost is not None:
            missing = [i for i in acked.ids_after(version) if i not in ids]
            known = f": {', '.join(missing[:20])}{' …' if len(missing) > 20 else ''}" if missing else ""
            report.fail(f"{lost}{known}")
        for loss in acked.losses[-3:]:
            n = len(loss.get("ids", [])) or int(loss.get("rows", 0))
            report.notes.append(f"a repair at {str(loss.get('at'))[:19]} could not recover {n} memories")
    compare = report.version is not None and (acked is None or latest_backup_version(path) >= acked.based)
    _note_backup(path, report, ids if compare else None)


def latest_backup_version(path: Path) -> int:
    from chronomem.storage.backup import latest_backup

    newest = latest_backup(path)
    return newest.version if newest is not None else -1


def _note_backup(path: Path, report: Checkup, ids: set[str] | None = None) -> None:
    from chronomem.storage.backup import BACKUP_INTERVAL, describe_age, latest_backup

    newest = latest_backup(path)
    if newest is None:
        report.notes.append(
            f"no backup yet (the consolidator takes one every {int(BACKUP_INTERVAL.total_seconds() // 3600)} h of "
            "changes; `chronomem backup` takes one now)"
        )
        return
    try:
        rows = newest.rows
    except Exception as exc:
        report.notes.append(f"the last backup, {newest.path.name}, does not read ({error_line(exc)})")
        return
    report.notes.append(
        f"last backup {describe_age(newest.age())} ago (version {newest.version}, {rows} rows): {newest.path}"
    )
    report.backup = str(newest.path)
    if ids is not None and report.ok:
        from chronomem.storage.backup import read_backup

        try:
            backed = read_backup(newest.path).column("id").to_pylist()
        except Exception:
            return
        missing = [i for i in backed if i not in ids]
        if missing:
            report.fail(
                f"{len(missing)} memories of the last backup are not in the table: "
                f"{', '.join(missing[:20])}{' …' if len(missing) > 20 else ''}"
            )


#: Rows one `take` of a salvage reads; a failing batch is split in halves down to single rows.
SALVAGE_BATCH = 1024


def salvage_rows(table: Any) -> tuple[Any, int]:
    """Every row of the table's current version that still reads, and how many do not.

    The row count comes from the manifest; rows are read by offset (`take_offsets`), a batch at a time, and a
    batch that fails is split until the unreadable rows are singled out — so one damaged data file costs
    its own rows, not every row after it."""
    import pyarrow as pa

    total = int(table.count_rows())
    parts: list[Any] = []
    unreadable = 0

    def read(lo: int, hi: int) -> None:
        nonlocal unreadable
        try:
            parts.append(table.take_offsets(list(range(lo, hi))).to_arrow())
        except Exception:
            if hi - lo == 1:
                unreadable += 1
                return
            mid = (lo + hi) // 2
            read(lo, mid)
            read(mid, hi)

    for lo in range(0, total, SALVAGE_BATCH):
        read(lo, min(lo + SALVAGE_BATCH, total))
    schema = table.schema
    rows = pa.concat_tables([p.select(schema.names).cast(schema) for p in parts]) if parts else schema.empty_table()
    return rows, unreadable


def repair(path: Path | str) -> Checkup:
    """Make the store open and read again, keeping every row that still reads; never delete a file.

    Unreadable newest manifests are moved to `quarantine/`; then every row of the newest version that
    opens is read on its own terms (`salvage_rows`), merged by id with the newest backup and with the rows of
    data files no surviving manifest references (storage/salvage.py; the latest state of each row wins), and
    — when that differs from what the table reads — written as a new version (the old versions stay). What
    none holds is reported by id: the ids the ledger acknowledged or the backup held that are nowhere; ids a
    purge erased or a restore left out (the drop record) are never brought back. The ledger is then rebased
    on the repaired table."""
    from chronomem.storage import ledger as ledger_mod
    from chronomem.storage.backup import latest_backup, read_backup

    if is_remote(path):
        report = check_remote(path)
        if not report.ok and report.verdict is None:
            report.notes.append("--repair works on a local store only: `chronomem export` what reads, then import it")
        return report
    path = Path(path)
    before = check(path)
    if before.ok or not (path / f"{TABLE_NAME}.lance").exists():
        return before
    actions: list[str] = []
    table = _open_quarantining(path, actions)
    if table is None:  # every manifest gone: the table made again from its data files (storage/salvage.py)
        table = salvage.rebuild(path, actions, _connect, QUARANTINE)
    if table is None:
        after = check(path)
        after.actions = actions
        return after
    opened = int(table.version)
    rows, unreadable = salvage_rows(table)
    sources = [rows]
    newest = latest_backup(path)
    backup_rows = None
    if newest is not None:
        try:
            backup_rows = read_backup(newest.path)
        except Exception as exc:
            actions.append(f"the backup {newest.path.name} does not read ({error_line(exc)})")
        else:
            from chronomem.storage.migrate import upgrade_rows

            backup_rows = upgrade_rows(backup_rows)  # taken before the store's schema upgrade: its rows upgraded
            backup_dim = backup_rows.schema.field("vector").type.list_size
            if backup_dim == rows.schema.field("vector").type.list_size:
                # not what a purge erased or a restore left out on purpose (a restore backs up what it replaces)
                backup_rows, _ = salvage.without_dropped(backup_rows, path)
                sources.append(backup_rows)
            else:  # taken before `chronomem reembed` moved the store: its vectors do not fit the table
                actions.append(
                    f"the backup {newest.path.name} holds {backup_dim}-d vectors of another model: not merged "
                    f"(`chronomem restore {newest.path}` makes the store that backup, model included)"
                )
                backup_rows = None
    orphans = salvage.read_orphans(path, opened, rows.schema)  # files no surviving manifest references
    if orphans.row_count:
        sources.append(orphans.rows)
    merged = salvage.merge_latest(*sources) if len(sources) > 1 else rows
    acked = ledger_mod.read(path)
    wanted = set(acked.recent_ids() if acked else []) | set(
        backup_rows.column("id").to_pylist() if backup_rows is not None else []
    )
    if not orphans.blocked:
        wanted -= salvage.dropped_ids(path)  # purged on purpose: not lost
    have = set(merged.column("id").to_pylist())
    lost = sorted(wanted - have)
    table_ids = set(rows.column("id").to_pylist())
    backup_ids = set(backup_rows.column("id").to_pylist()) if backup_rows is not None else set()
    from_backup = len((have - table_ids) & backup_ids)
    from_orphans = sorted(have - table_ids - backup_ids)
    changed = (unreadable > 0 or from_backup > 0 or bool(from_orphans) or merged.num_rows != rows.num_rows
               or _state_differs(rows, merged))
    if changed:
        # rows brought back from an older backup or data file may have no terms: the table is marked for the next open
        table.add(with_terms(merged.cast(table.schema), None), mode="overwrite")
        source = f" and {from_backup} from the backup {newest.path.name}" if from_backup and newest else ""
        actions.append(
            f"salvaged {rows.num_rows} rows that still read in version {opened}"
            + (f" ({unreadable} did not)" if unreadable else "")
            + source
            + (f" and {len(from_orphans)} from data files no manifest references" if from_orphans else "")
            + f": wrote {merged.num_rows} rows as version {int(table.version)} (older versions kept)"
        )
    actions += salvage.describe(orphans, from_orphans, wanted)
    try:
        _fts_works(table)
    except Exception:
        from chronomem.storage.schema import create_fts_index

        create_fts_index(table)
        actions.append("rebuilt the full-text index")
    if lost:
        actions.append(
            f"{len(lost)} acknowledged memor{'y' if len(lost) == 1 else 'ies'} could not be recovered: {', '.join(lost)}"
        )
    elif unreadable:
        actions.append(f"{unreadable} unreadable rows could not be recovered (their ids are not known)")
    ledger_mod.rebase(path, int(table.version), int(table.count_rows()), lost, 0 if lost else unreadable)
    after = check(path)
    after.actions = actions
    return after


def _state_differs(rows: Any, merged: Any) -> bool:
    """Whether a merge changed the state (expired / invalidated) of a row the table holds."""
    return salvage.state_rank(rows.sort_by("id")) != salvage.state_rank(merged.filter(_in(merged, rows)).sort_by("id"))


def _in(merged: Any, rows: Any) -> Any:
    import pyarrow.compute as pc

    return pc.is_in(merged.column("id"), value_set=rows.column("id"))


def _open_quarantining(path: Path, actions: list[str]) -> Any:
    """Open the table, moving unreadable newest manifests aside until it opens (or none are left)."""
    versions_dir = path / f"{TABLE_NAME}.lance" / "_versions"
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    for _ in range(1000):
        try:
            return _connect(path).open_table(TABLE_NAME)
        except Exception as exc:
            manifests = sorted(versions_dir.glob("*.manifest"), key=_manifest_version, reverse=True)
            if not manifests:
                actions.append(f"no readable table version is left ({error_line(exc)})")
                return None
            target = path / QUARANTINE / stamp / "_versions"
            target.mkdir(parents=True, exist_ok=True)
            hint = versions_dir / "latest_version_hint.json"
            if hint.exists():
                shutil.move(str(hint), str(target / hint.name))
            shutil.move(str(manifests[0]), str(target / manifests[0].name))
            actions.append(
                f"moved unreadable manifest of version {_manifest_version(manifests[0])} to {target.relative_to(path)}"
            )
    return None


def _manifest_version(manifest: Path) -> int:
    """Lance names manifests `<version>.manifest`, or `<u64::MAX - version>.manifest` (its V2 scheme)."""
    number = int(manifest.stem)
    return (2**64 - 1) - number if number > 2**63 else number


#: Most memories a restore lists among those it leaves out (all are counted).
MAX_LEFT_OUT_LISTED = 10
#: Characters of a left-out memory's text shown beside its id.
LEFT_OUT_CHARS = 80


@dataclass(frozen=True)
class LeftOut:
    """A memory the store holds and the backup does not: written after the backup was taken."""

    id: str
    kind: str
    project: str
    created_at: str
    start: str  # its first words

    def line(self) -> str:
        return f"{self.id} {self.kind} [{self.project}] {self.start}"


@dataclass
class Restored:
    """What `restore_backup` did: the rows and version it wrote, and what it left out of the replaced state."""

    rows: int
    version: int
    #: Memories (notes and facts) written after the backup, newest first, at most `MAX_LEFT_OUT_LISTED`.
    left_out: list[LeftOut] = field(default_factory=list)
    notes_left_out: int = 0
    facts_left_out: int = 0
    #: Rows restating older memories after the backup (a forget, an ended fact): those go back to the backup's state.
    changes_left_out: int = 0
    #: The backup of the replaced state (it still holds what was left out), when one was taken.
    replaced_backup: str | None = None

    @property
    def left_out_count(self) -> int:
        return self.notes_left_out + self.facts_left_out

    def summary(self) -> str:
        """`3 notes and 1 fact written after the backup, and 2 later changes to older memories`, or ''."""
        parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in
                 ((self.notes_left_out, "note"), (self.facts_left_out, "fact")) if n]
        said = " and ".join(parts) + " written after the backup" if parts else ""
        if self.changes_left_out:
            n = self.changes_left_out
            said += (", and " if said else "") + f"{n} later change{'s' if n != 1 else ''} to older memories (forgets, ended facts)"
        return said


def left_out_of(current: Any, backup: Any, restored: Restored) -> None:
    """Fill `restored` with the rows of `current` that `backup` lacks (notes and facts listed, changes counted)."""
    import pyarrow.compute as pc

    missing = current.filter(pc.invert(pc.is_in(current.column("id"), value_set=backup.column("id"))))
    if missing.num_rows == 0:
        return
    wanted = ["id", "kind", "project", "content", "created_at", "revision_of"]
    rows = missing.select([c for c in wanted if c in missing.column_names]).to_pylist()
    fresh = [r for r in rows if not r.get("revision_of")]
    restored.changes_left_out = len(rows) - len(fresh)
    restored.notes_left_out = sum(1 for r in fresh if r["kind"] != "fact")
    restored.facts_left_out = len(fresh) - restored.notes_left_out
    fresh.sort(key=lambda r: (r["kind"] == "fact", -(r["created_at"].timestamp() if r["created_at"] else 0), r["id"]))
    restored.left_out = [
        LeftOut(
            id=r["id"], kind="fact" if r["kind"] == "fact" else "note", project=r["project"],
            created_at=r["created_at"].isoformat() if r["created_at"] else "", start=_start(r["content"] or ""),
        )
        for r in fresh[:MAX_LEFT_OUT_LISTED]
    ]


def _start(text: str) -> str:
    """The first words of `text` on one line, at most `LEFT_OUT_CHARS` characters."""
    flat = " ".join(text.split())
    if len(flat) <= LEFT_OUT_CHARS:
        return flat
    cut = flat[: LEFT_OUT_CHARS - 1].rsplit(" ", 1)[0]
    return cut + "…"


def restore_backup(store_path: Path | str, file: Path | str, replace: bool = False) -> Restored:
    """Make the table exactly the backup's rows, as a new version (old versions kept).

    The table takes the backup's schema, so its model too: a backup from before `chronomem reembed` moves the
    store back to the model it was then.

    A table that holds rows is replaced only with `replace` (its current state is backed up first when it
    reads); the result lists the memories that state holds and the backup lacks — written after the backup —
    and the refusal without `replace` counts them. A table that does not open is moved to `quarantine/` whole
    and created again from the backup."""
    from chronomem.errors import InvalidInput
    from chronomem.storage import ledger, salvage
    from chronomem.storage.backup import BACKUP_KEEP, read_backup, write_backup

    store_path = Path(store_path)
    try:
        rows = read_backup(file)
    except FileNotFoundError:
        raise InvalidInput(f"no such backup: {file}") from None
    except Exception as exc:
        raise InvalidInput(f"{file} is not a chronomem backup ({error_line(exc)})") from None
    store_path.mkdir(parents=True, exist_ok=True)
    db = _connect(store_path)
    table = None
    done = Restored(rows.num_rows, 0)
    if (store_path / f"{TABLE_NAME}.lance").exists():
        try:
            table = db.open_table(TABLE_NAME)
            held = int(table.count_rows())
        except Exception:
            stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
            aside = store_path / QUARANTINE / stamp
            aside.mkdir(parents=True, exist_ok=True)
            shutil.move(str(store_path / f"{TABLE_NAME}.lance"), str(aside / f"{TABLE_NAME}.lance"))
            table, held = None, 0
            db = _connect(store_path)
        if table is not None and held and not replace:
            would = Restored(rows.num_rows, 0)
            try:
                left_out_of(table.to_arrow(), rows, would)
            except Exception:  # a state that does not read: the refusal still stands, without the count
                pass
            lacks = f"; it would leave out {would.summary()}" if would.summary() else ""
            named = ", ".join(m.id for m in would.left_out[:3]) + (" …" if would.left_out_count > 3 else "")
            raise StoreError(
                f"the store at {store_path} holds {held} rows: pass --replace to make it the backup's "
                f"{rows.num_rows} rows (its current state is backed up first){lacks}"
                f"{' (' + named + ')' if named else ''}; or restore into a new --store"
            )
        if table is not None and held:
            try:
                current = table.to_arrow()
                done.replaced_backup = str(
                    write_backup(store_path, current, int(table.version), keep=BACKUP_KEEP + 1).path
                )
                # rows the restore leaves out on purpose: orphan salvage must not bring them back
                salvage.record_dropped(
                    store_path, set(current.column("id").to_pylist()) - set(rows.column("id").to_pylist())
                )
                left_out_of(current, rows, done)
            except Exception:  # a state that does not read cannot be backed up: the restore still goes on
                pass
    if (rows.schema.metadata or {}).get(SCHEMA_VERSION_KEY) is not None:
        # the backup's own model and dimension: restoring one taken before `chronomem reembed` undoes the move
        from chronomem.storage.migrate import upgrade_rows

        model, dim = stored_model(rows.schema)
        rows = upgrade_rows(rows)  # a backup taken before the store's schema upgrade comes back upgraded
        rows = rows.select(memories_schema(dim, model).names).cast(memories_schema(dim, model))
        rows = with_terms(rows, None)  # rows without terms (an older backup): marked, filled by the next open
    if table is None:
        table = db.create_table(TABLE_NAME, data=rows)
    elif (rows.schema.metadata or {}).get(SCHEMA_VERSION_KEY) is not None:
        table.add(rows, mode="overwrite")
    else:
        table.add(rows.select(table.schema.names).cast(table.schema), mode="overwrite")
    salvage.readmit(store_path, rows.column("id").to_pylist())
    ledger.rebase(store_path, int(table.version), int(table.count_rows()))
    done.rows, done.version = rows.num_rows, int(table.version)
    return done
