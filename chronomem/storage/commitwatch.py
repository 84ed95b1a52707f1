"""`CommitWatch`: tells, from one `stat`, that a table has had no commit since the last version check.

Every LanceDB commit adds a manifest file to the table's `_versions` folder, which moves the
folder's modification time. Asking LanceDB for the latest version lists that folder (1–5 ms
per read, more with many kept versions), so a read first compares the folder's mtime with the
one taken just before the last full check. Equal, and that stamp was already older than
`SETTLE` when taken, means no commit since: a later commit would stamp the folder at a later
time. The settle covers filesystems that keep coarse timestamps (a commit in the same tick as
the check would otherwise leave the stamp unchanged). Anything unexpected (no such folder, a
`stat` error, a stamp from the future) means "check fully", never "nothing changed".

For a store on a local filesystem, which is what chronomem opens.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

#: How much older than the check a folder stamp must be before an equal stamp is trusted.
SETTLE_NS = 2_000_000_000


class CommitWatch:
    """The `_versions` folder of one table, and the stamp seen at its last full version check."""

    def __init__(self, versions_dir: Path, settle_ns: int = SETTLE_NS) -> None:
        self.versions_dir = versions_dir
        self.settle_ns = settle_ns
        self._lock = threading.Lock()
        self._trusted: int | None = None  # a stamp no newer commit can share

    def stamp(self) -> int | None:
        """The folder's mtime in ns now, or None when it cannot be read. Take it before a full check."""
        try:
            return os.stat(self.versions_dir).st_mtime_ns
        except OSError:
            return None

    def unchanged(self, stamp: int | None) -> bool:
        """True when `stamp` proves no commit happened since the last `checked`."""
        with self._lock:
            return stamp is not None and stamp == self._trusted

    def checked(self, stamp: int | None) -> None:
        """A full version check just ran, with `stamp` taken before it."""
        age = None if stamp is None else time.time_ns() - stamp
        trusted = stamp if age is not None and age > self.settle_ns else None
        with self._lock:
            self._trusted = trusted

    def forget(self) -> None:
        """Check fully next time (after our own commit, or anything that may move the table)."""
        with self._lock:
            self._trusted = None
