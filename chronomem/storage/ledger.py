"""The acknowledgement ledger: the last table version (and row count) this store acknowledged, kept
where a lost manifest cannot take it with it.

LanceDB opens a table at its newest manifest that is still on disk: delete the newest one (a sync
tool, a careless `rm`, a restored file-system snapshot) and the table silently opens one version
earlier, the last write gone. So every acknowledged write also records, in `<store>/.acked.json`
(beside the table, not inside `memories.lance/`), the version it committed, the table's row count
then, and the ids it wrote — the last `RECENT_COMMITS` commits' worth.

The file is a journal of JSON lines: a first line holding the whole ledger (what a ledger written
before the journal holds too), then one line per acknowledgement, appended under an `flock` so two
processes writing the same store do not undo each other's entry. Reading folds the lines in order.
Appending one short line is what keeps a write cheap: rewriting the whole ~100 KB ledger on every
write cost as much as the LanceDB append itself (eval/results/latency_ab.md). Once the journal has grown
`COMPACT_BYTES` past that first line it is rewritten as one line, to a temporary file renamed over the
old one (atomic: a crash leaves the old journal or the new one). A line torn by a crash mid-append
is the acknowledgement of a write that never returned: reading skips it.

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
#: How far the journal may grow past the ledger's own line before the next acknowledgement rewrites it as one
#: line: a rewrite per ~1,000 single-memory writes, and reading the journal's lines at open (one `json.loads`)
#: stays ~2 ms.
COMPACT_BYTES = 128 * 1024
#: Per ledger file, (inode, size) of the one this process last wrote whole: appends go only to a file known to
#: parse. A rewrite by another process renames a new file in, with another inode: the next write here reads it.
_checked: dict[str, tuple[int, int]] = {}


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
    """The journal folded into one ledger, or None when there is none (a new store, or one written before
    ledgers) or its first line does not parse."""
    try:
        first, *appended = ledger_path(store).read_bytes().split(b"\n")
        data = json.loads(first)
        ledger = Ledger(
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
    lines = [line for line in appended if line.strip()]
    try:
        entries = json.loads(b"[" + b",".join(lines) + b"]")  # one parse for all; per line only if one is torn
    except ValueError:
        entries = []
        for line in lines:
            with contextlib.suppress(ValueError):  # torn by a crash mid-append: that write was never acknowledged
                entries.append(json.loads(line))
    for entry in entries:
        try:
            version, rows, at, ids = entry
            if isinstance(ids, list):
                _fold(ledger, int(version), int(rows), str(at), ids, trim=False)
        except (ValueError, TypeError):
            continue  # not an acknowledgement's [version, rows, at, ids]
    _trim(ledger)
    return ledger


def _fold(ledger: Ledger, version: int, rows: int, at: str, ids: Sequence[str], trim: bool = True) -> None:
    """Apply one acknowledgement to `ledger`: a version older than the recorded one (another process got
    further meanwhile) only adds its ids. `trim` False: the caller trims once after folding many."""
    if version >= ledger.version:
        ledger.version, ledger.rows, ledger.at = version, rows, at
    if ids:
        ledger.recent.append([version, list(ids)[-RECENT_IDS:]])
        if trim:
            _trim(ledger)


def _trim(ledger: Ledger) -> None:
    """Keep the newest `RECENT_COMMITS` commits' ids, at most `RECENT_IDS` of them (a commit past that whole)."""
    ledger.recent.sort(key=lambda entry: entry[0])
    del ledger.recent[:-RECENT_COMMITS]
    total, cut = sum(len(entry[1]) for entry in ledger.recent), 0
    while cut < len(ledger.recent) - 1 and total > RECENT_IDS:
        total -= len(ledger.recent[cut][1])
        cut += 1
    del ledger.recent[:cut]


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
        handle.write(body + "\n")
    os.replace(tmp, target)
    written = os.stat(target)
    _checked[str(target)] = (written.st_ino, written.st_size)


def acknowledge(store: Path, version: int, rows: int, ids: Sequence[str] = ()) -> None:
    """Record that `version` (holding `rows` rows) is committed and read back, with the ids it wrote: one line
    appended to the journal; or the whole ledger rewritten when the journal has grown `COMPACT_BYTES` past it, is
    missing, or is not the file this process last wrote (read whole first: one that does not parse starts afresh)."""
    at = utcnow().isoformat()
    line = json.dumps([version, rows, at, list(ids)[-RECENT_IDS:]], separators=(",", ":")).encode() + b"\n"
    target = ledger_path(store)
    with _locked(store):
        try:
            stat = target.stat()
        except FileNotFoundError:
            stat = None
        ino, size = _checked.get(str(target), (None, 0))
        if stat is not None and stat.st_ino == ino and stat.st_size < size + COMPACT_BYTES:
            with open(target, "r+b") as handle:
                handle.seek(stat.st_size - 1)
                handle.write(line if handle.read(1) == b"\n" else b"\n" + line)  # one written whole may end without
            return
        ledger = read(store) or Ledger()
        _fold(ledger, version, rows, at, ids)
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
