"""Store health: recognise a damaged or foreign store directory, check one, and repair what can be.

LanceDB commits are atomic (a new manifest appears whole or not at all), so a killed
process never damages a store; disks, sync tools and hand edits can. `check` opens the
table, reads every row of the newest version and runs a full-text query. `repair`
never deletes: an unreadable newest manifest is moved to `<store>/quarantine/<time>/`,
the table is rolled back (LanceDB `restore`, a new version) to the newest version whose
rows all read, and an unreadable full-text index is rebuilt. What a repair cannot save
needs the directory moved aside and an export imported (`chronomem import`).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from chronomem.errors import StoreError
from chronomem.records import utcnow
from chronomem.storage.schema import SCHEMA_VERSION_KEY, TABLE_NAME

log = logging.getLogger(__name__)

#: Files chronomem itself keeps beside the table (locks, the consolidator's state, quarantined manifests);
#: any other entry, hidden files aside, makes a directory foreign.
OWN_ENTRIES = {f"{TABLE_NAME}.lance", "quarantine"}
OWN_PREFIXES = (".", "consolidate-state")
QUARANTINE = "quarantine"
_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+:\d+")
_DAMAGE_MARKERS = ("lance error", "LanceError", "Not found:", "failed to fill whole buffer", "Corrupt", "corrupt")


def error_line(exc: BaseException) -> str:
    """The first line of a LanceDB error without the Rust source locations it carries."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _RUST_LOCATION.sub("", text).strip()


def recovery_hint(path: Path | str) -> str:
    return f"run `chronomem doctor --store {path} --repair`, or move the directory aside and `chronomem import` an export"


def is_damage(exc: BaseException) -> bool:
    """True when a LanceDB failure says the files on disk are missing or unreadable."""
    if isinstance(exc, StoreError):
        return False
    text = str(exc)
    return isinstance(exc, RuntimeError | OSError | ValueError) and any(m in text for m in _DAMAGE_MARKERS)


def damage_error(path: Path | str, exc: BaseException) -> StoreError:
    """The one-line error a tool or command reports for a damaged store."""
    return StoreError(f"the store at {path} is damaged ({error_line(exc)}): {recovery_hint(path)}")


def foreign_entries(path: Path) -> list[str]:
    """Entries of `path` that a chronomem store does not hold (empty for a store or an empty directory)."""
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
    problems: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fail(self, problem: str) -> None:
        self.ok = False
        self.problems.append(problem)

    def text(self) -> str:
        lines = [f"store {self.path}: " + ("healthy" if self.ok else "DAMAGED")]
        if self.version is not None:
            rows = f", {self.rows} rows" if self.rows is not None else ""
            kept = f"{self.versions} version{'s' if self.versions != 1 else ''} kept"
            lines.append(f"  table version {self.version} ({kept}){rows}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  problem: {p}" for p in self.problems]
        lines += [f"  repaired: {a}" for a in self.actions]
        if not self.ok:
            lines.append(f"  next: {recovery_hint(self.path) if not self.actions else 'move the directory aside and `chronomem import` an export'}")
        return "\n".join(lines)


def _connect(path: Path) -> Any:
    import lancedb

    os.environ.setdefault("LANCE_LOG", "error")
    return lancedb.connect(str(path), read_consistency_interval=timedelta(0))


def _read_all(table: Any) -> int:
    """Read every column of every row (vectors included); return the row count."""
    return int(table.to_arrow().num_rows)


def _fts_works(table: Any) -> bool:
    from lancedb.query import MatchQuery

    if not any(idx.name == "content_idx" for idx in table.list_indices()):
        return True  # created again on the next open
    table.search(MatchQuery("chronomem", "content"), query_type="fts").limit(1).to_list()
    return True


def check(path: Path | str) -> Checkup:
    """Open the store read-only and read all of it; say what is wrong, if anything."""
    path = Path(path)
    report = Checkup(str(path))
    if not path.exists():
        report.notes.append("no store here yet (one is created on first use)")
        return report
    if not path.is_dir():
        report.fail("the store path is a file, not a directory")
        return report
    foreign = foreign_entries(path)
    if foreign:
        report.fail(f"not a chronomem store: it holds {', '.join(foreign[:5])}{' …' if len(foreign) > 5 else ''}")
        return report
    if not (path / f"{TABLE_NAME}.lance").exists():
        report.notes.append("empty (a store is created on first use)")
        return report
    try:
        table = _connect(path).open_table(TABLE_NAME)
    except Exception as exc:
        report.fail(f"the table does not open: {error_line(exc)}")
        return report
    if (table.schema.metadata or {}).get(SCHEMA_VERSION_KEY) is None:
        report.fail(f"the `{TABLE_NAME}` table here was not written by chronomem")
        return report
    report.version = int(table.version)
    report.versions = len(table.list_versions())
    try:
        report.rows = _read_all(table)
    except Exception as exc:
        report.fail(f"version {report.version} does not read: {error_line(exc)}")
        return report
    try:
        _fts_works(table)
    except Exception as exc:
        report.fail(f"the full-text index does not read: {error_line(exc)}")
    return report


def repair(path: Path | str) -> Checkup:
    """Make the store open and read again, losing as little as possible; never delete a file."""
    path = Path(path)
    before = check(path)
    if before.ok or not (path / f"{TABLE_NAME}.lance").exists():
        return before
    actions: list[str] = []
    table = _open_quarantining(path, actions)
    if table is not None:
        _roll_back_to_readable(table, actions)
        try:
            _fts_works(table)
        except Exception:
            from lancedb.index import FTS

            table.create_index("content", config=FTS(), replace=True)
            actions.append("rebuilt the full-text index")
    after = check(path)
    after.actions = actions
    return after


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


def _roll_back_to_readable(table: Any, actions: list[str]) -> None:
    try:
        _read_all(table)
        return
    except Exception as exc:
        latest, reason = int(table.version), error_line(exc)
    for info in sorted(table.list_versions(), key=lambda v: v["version"], reverse=True):
        version = int(info["version"])
        if version >= latest:
            continue
        try:
            table.checkout(version)
            rows = _read_all(table)
        except Exception:
            continue
        table.checkout_latest()
        table.restore(version)
        actions.append(f"rolled back from version {latest} ({reason}) to version {version} ({rows} rows)")
        return
    table.checkout_latest()
    actions.append(f"no older version reads either ({reason})")
