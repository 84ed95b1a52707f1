"""The acknowledgement ledger: the last table version (and row count) this store acknowledged, kept
where a lost manifest cannot take it with it.

LanceDB opens a table at its newest manifest that is still on disk: delete the newest one (a sync
tool, a careless `rm`, a restored file-system snapshot) and the table silently opens one version
earlier, the last write gone. So every acknowledged write also records, in `<store>/.acked.json`
(beside the table, not inside `memories.lance/`), the version it committed, the table's row count
then, and the ids it wrote — the last `RECENT_COMMITS` commits' worth — written to a temporary file
and renamed over the old one (atomic: a crash leaves the old ledger or the new one). The file is
rewritten under an `flock` so two processes writing the same store do not undo each other's entry.

A store whose table opens at an older version, or with fewer rows, than the ledger says has lost
acknowledged writes: `MemoryStore.open` refuses it in one line (one small read and one compare at every
start), and `chronomem doctor` names the missing ids it knows. Only a purge (fewer rows by intent), a
repair or a restore rebase the ledger on the table as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronomem.records import utcnow

LEDGER_NAME = ".acked.json"
LOCK_NAME = ".acked.lock"
#: Commits whose ids the ledger keeps, so a regression can name what it lost (older ones: see the backups),
RECENT_COMMITS = 256
#: ... and at most this many ids in all (a bulk import's commit keeps its last ones): the ledger stays ~100 KB.
RECENT_IDS = 4096


@dataclass
class Ledger:
    """What `<store>/.acked.json` holds."""

    version: int = 0
    rows: int = 0
    at: str | None = None
    #: [version, [ids written]] of the last commits, oldest first.
    recent: list[list[Any]] = field(default_factory=list)
    #: What repairs could not recover: [{"at", "ids", "rows"}], for doctor to keep saying.
    losses: list[dict[str, Any]] = field(default_factory=list)
    #: The version the last purge, repair or restore accepted as it was: backups older than it are not compared.
    based: int = 0

    def ids_after(self, version: int) -> list[str]:
        """Ids acknowledged in commits newer than `version`."""
        return [i for v, ids in self.recent if v > version for i in ids]

    def recent_ids(self) -> list[str]:
        return [i for _, ids in self.recent for i in ids]


def ledger_path(store: Path) -> Path:
    return Path(store) / LEDGER_NAME


def read(store: Path) -> Ledger | None:
    """The ledger, or None when there is none (a new store, or one written before ledgers) or it does not parse."""
    try:
        data = json.loads(ledger_path(store).read_text(encoding="utf-8"))
        return Ledger(
            version=int(data["version"]),
            rows=int(data["rows"]),
            at=data.get("at"),
            recent=[[int(v), [str(i) for i in ids]] for v, ids in data.get("recent", [])],
            losses=list(data.get("losses", [])),
            based=int(data.get("based", 0)),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def _locked(store: Path) -> Iterator[None]:
    fd = os.open(Path(store) / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(store: Path, ledger: Ledger) -> None:
    target = ledger_path(store)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    body = json.dumps(
        {"version": ledger.version, "rows": ledger.rows, "at": ledger.at, "recent": ledger.recent, "losses": ledger.losses,
         "based": ledger.based},
        separators=(",", ":"),
    )
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(body)
    os.replace(tmp, target)


def acknowledge(store: Path, version: int, rows: int, ids: Sequence[str] = ()) -> None:
    """Record that `version` (holding `rows` rows) is committed and read back, with the ids it wrote.

    A version older than the recorded one (another process got further meanwhile) only adds its ids."""
    with _locked(store):
        ledger = read(store) or Ledger()
        if version >= ledger.version:
            ledger.version, ledger.rows, ledger.at = version, rows, utcnow().isoformat()
        if ids:
            ledger.recent.append([version, list(ids)[-RECENT_IDS:]])
            ledger.recent.sort(key=lambda entry: entry[0])
            del ledger.recent[:-RECENT_COMMITS]
            while len(ledger.recent) > 1 and sum(len(e[1]) for e in ledger.recent) > RECENT_IDS:
                del ledger.recent[0]
        _write(store, ledger)


def rebase(store: Path, version: int, rows: int, lost: Sequence[str] = (), lost_rows: int = 0) -> None:
    """Accept the table as it is now (after a purge, a repair or a restore); remember what a repair lost."""
    with _locked(store):
        ledger = read(store) or Ledger()
        ledger.version, ledger.rows, ledger.at, ledger.based = version, rows, utcnow().isoformat(), version
        ledger.recent = [[v, ids] for v, ids in ledger.recent if v <= version]
        if lost or lost_rows:
            ledger.losses.append({"at": ledger.at, "ids": list(lost), "rows": int(lost_rows)})
        _write(store, ledger)


def regression(store: Path, version: int, rows: int) -> str | None:
    """One line saying what the table lost against the ledger, or None when it holds what was acknowledged."""
    ledger = read(store)
    if ledger is None or (version >= ledger.version and rows >= ledger.rows):
        return None
    missing = ledger.rows - rows
    what = (
        f"{missing} memor{'y' if missing == 1 else 'ies'} missing"
        if missing > 0
        else "no memory is missing, but the changes of the lost versions (forgets, supersessions, upkeep) are gone"
    )
    return (
        f"the store opens at version {version} ({rows} rows) but version {ledger.version} ({ledger.rows} rows) "
        f"was acknowledged: {what}"
    )
