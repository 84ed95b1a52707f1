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
(which sorts newest first). On a local filesystem the probes are `stat`s; in object storage (`CommitWatch.of`
a `StoreURI`) they are HEAD requests for the same manifest names (~1 ms on a local S3 server, tens of ms on a
cloud one), still cheaper than LanceDB's list-and-read of the newest manifest.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronomem.config import StoreLocation, is_remote

_MAX_U64 = 2**64 - 1


class CommitWatch:
    """The `_versions` folder of one table, and the layout its manifests are named by."""

    def __init__(
        self, versions_dir: Path | str, v2_names: bool = True, exists: Callable[[Any], bool | None] | None = None
    ) -> None:
        self.versions_dir = versions_dir
        self.v2_names = v2_names
        self._exists = exists or _exists

    @classmethod
    def of(cls, location: StoreLocation, table_dir: str, v2_names: bool = True) -> CommitWatch:
        """The watch of table folder `table_dir` (`memories.lance`) of the store at `location`."""
        if not is_remote(location):
            return cls(Path(location) / table_dir / "_versions", v2_names)
        from chronomem.storage.remote import objects_of

        objects = objects_of(location)  # type: ignore[arg-type]

        def exists(name: str) -> bool | None:
            try:
                return objects.exists(name)
            except Exception:
                return None

        return cls(f"{table_dir}/_versions", v2_names, exists)

    @classmethod
    def detect(cls, location: StoreLocation, table_dir: str, version: int) -> CommitWatch:
        """The watch of `table_dir`, in the layout its manifest of `version` (a version it has) is named in —
        for a reader without LanceDB's handle to ask (`MemoryStore._open_quick`)."""
        watch = cls.of(location, table_dir)
        if version > 0:  # version 0 (not created yet): LanceDB creates tables in the V2 layout
            watch.v2_names = watch._exists(watch.manifest(version)) is not False
        return watch

    def manifest(self, version: int) -> Any:
        """The manifest file of `version` (a path; in object storage, its name under the store's prefix)."""
        name = f"{_MAX_U64 - version:020d}" if self.v2_names else str(version)
        if isinstance(self.versions_dir, str):
            return f"{self.versions_dir}/{name}.manifest"
        return self.versions_dir / f"{name}.manifest"

    def moved(self, version: int | None) -> bool:
        """True unless the table is provably still at `version` (None: not known, so moved)."""
        if version is None:
            return True
        if version == 0:  # a table not created yet (`MemoryStore._open_quick`): until its first manifest exists
            return self._exists(self.manifest(1)) is not False
        return self._exists(self.manifest(version + 1)) is not False or self._exists(self.manifest(version)) is not True


def _exists(path: Path) -> bool | None:
    """Whether `path` exists; None when the `stat` failed for another reason than its absence."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    return True
