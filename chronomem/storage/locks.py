"""The store's named locks, across processes and machines: a file lock in a local store's directory, a lease
(storage/remote.py, conditional creates in the bucket) for a store in object storage.

Both answer `acquire(timeout=…)` (raising `filelock.Timeout` when held elsewhere past the timeout; 0: try once)
and `release()`, and work as context managers. A shared store's write lock (`groupcommit.WriteLock`) takes its lease
only when the write needs it, and lets small appends that wait for it be committed together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronomem.config import StoreLocation, StoreURI, is_remote

#: Lock names (a file `<name>` in a local store; a lease `<name>` in a remote one).
WRITE_LOCK_NAME = ".write.lock"
CONSOLIDATE_LOCK_NAME = ".consolidate.lock"


def store_lock(location: StoreLocation, name: str) -> Any:
    """The lock `name` of the store at `location` (not taken yet)."""
    if is_remote(location):
        from chronomem.storage.remote import Lease, objects_of

        assert isinstance(location, StoreURI)
        if name == WRITE_LOCK_NAME:  # deferred, with group commit of small appends (storage/groupcommit.py)
            from chronomem.storage.groupcommit import WriteLock

            return WriteLock(objects_of(location))
        return Lease(objects_of(location), name.strip(".").replace(".lock", ""))
    from filelock import FileLock

    return FileLock(str(Path(location) / name))
