"""`CommitWatch`: tells, from a `stat` or two, whether a table has had a commit since a given version.

LanceDB commits version v+1 by creating v+1's manifest in the table's `_versions` folder only if no
such file exists yet (that put-if-absent is how concurrent writers take turns), so "a commit since
v" is exactly "v+1's manifest exists". Old versions are cleaned up oldest first and the newest is
never removed, so v's own manifest gone also means the table moved on. Anything unexpected (a
`stat` error other than "no such file") means "moved", so the caller reloads rather than serves a
stale snapshot.

Asking LanceDB on every operation instead (`read_consistency_interval=0`) lists the folder and
reads the newest manifest: ~1.3 ms of each append on a 100k-row store, against microseconds here.

Manifest names: `{v}.manifest` in the first layout, `{2^64-1-v:020d}.manifest` in LanceDB's V2 layout
(which sorts newest first). For a store on a local filesystem, which is what chronomem opens.
"""

from __future__ import annotations

import os
from pathlib import Path

_MAX_U64 = 2**64 - 1


class CommitWatch:
    """The `_versions` folder of one table, and the layout its manifests are named by."""

    def __init__(self, versions_dir: Path, v2_names: bool = True) -> None:
        self.versions_dir = versions_dir
        self.v2_names = v2_names

    def manifest(self, version: int) -> Path:
        """The manifest file of `version`."""
        name = f"{_MAX_U64 - version:020d}" if self.v2_names else str(version)
        return self.versions_dir / f"{name}.manifest"

    def moved(self, version: int | None) -> bool:
        """True unless the table is provably still at `version` (None: not known, so moved)."""
        if version is None:
            return True
        return _exists(self.manifest(version + 1)) is not False or _exists(self.manifest(version)) is not True


def _exists(path: Path) -> bool | None:
    """Whether `path` exists; None when the `stat` failed for another reason than its absence."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    return True
