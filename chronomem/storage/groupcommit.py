"""Group commit on a shared store (object storage): the write lock of a store in a bucket, and how notes that wait
for it are committed together — one LanceDB commit for every note queued while another writer held the lease.

The service takes the store's write lock (`store_lock(…, WRITE_LOCK_NAME)`, which for a shared store is a
`WriteLock` here) around each logical write. Taking it is *deferred*: no request is made until the write needs
the cross-machine lease (storage/remote.py). The first read of the store, or the first commit other than a small
append, under the lock takes the lease there and then (`WriteLock.upgrade`, called by `MemoryStore`): a
read-modify-write (slot resolution, forget, the consolidator) holds the lease from its first read, as before.
A small append that comes first (a plain `remember`: its row was made from nothing read under the lock) goes
through `append` instead:

- the writer looks at the lease once; free (a lone writer): it takes the lease and commits its rows, together
  with whatever is queued, at once — no waiting for a batch to fill;
- held: it uploads its prepared rows (Arrow IPC, terms already made) as one object `_chronomem/queue/<stem>.arrow`
  and waits, looking at the lease's folder (one LIST a look): whenever the lease changes hands it looks whether
  its entry is still queued (one HEAD), and when the lease is free it takes it and commits the queue itself. It
  returns only once its rows are committed: its entry is gone from the queue (the holder deletes an entry only
  after its commit is read back and acknowledged), or its own commit was read back;
- the holder of the lease (`fold`) lists the queue, reads every entry, and commits them, with its own rows, in
  one LanceDB commit; then, in this order: the commit read back, its acknowledgement written
  (`_chronomem/acks/<stem>.json`: the version and every id in it), the entries and its fold intent deleted (one
  bulk delete). Any holder of the write lease folds the queue before releasing it (`WriteLock.release`), so a
  queued note never waits behind holders that do not append.

Exactly once. A queued entry may hold rows the table already has, in two ways: its holder committed it and then
failed before deleting it (crashed, lost its lease, or its commit failed without saying whether it landed — a
request timed out), or its writer's upload came back after it was committed and deleted — the HTTP client retries
a PUT whose answer was lost (a timeout, a reset), and that retry may land after the holder's commit and delete,
putting the entry back in the queue (seen under injected faults: issue 48). So the holder looks up every queued
entry's ids in the table (`MemoryStore.ids_exist`, under the lease, at the newest version) before committing: one
whose rows are there is acknowledged at the table's version and deleted, never committed again; only the others
are appended. An entry's rows are committed in one commit, so a note is either wholly visible or not at all; a
writer killed after uploading leaves an entry that the next holder commits (present, never acknowledged to anyone).
The holder still writes a fold intent `_chronomem/queue/~fold-….json` naming the entries before its commit (deleted
with them): older versions look up only the entries an intent names. What remains is the lease's own
(storage/remote.py): a holder paused longer than its lease had left between its fence and its commit's request.

A commit whose answer was lost (`_commit`). A fold's commit can land and still fail: a request after Lance's manifest
PUT (the read back, the acknowledgement's PUT) gives up on a 503, a timeout or a reset. (Lance settles a lost answer
to the manifest PUT itself: it finds its own transaction committed; tests/s3/test_lost_answer.py.) Refusing then
would tell the holder's caller its note failed although it is in the table — and a caller that retries stores it
twice. So after a failed commit (not a lost lease: the fence refuses before any request) the holder looks the batch's
ids up in the table at its newest version (`MemoryStore.ids_at_newest`, LanceDB itself, not the read index): the rows
found are acknowledged at that version and never committed again; only the missing ones are committed again, up to
`COMMIT_ATTEMPTS` commits. The caller is refused only when its own rows are still missing, or the lookup or the
acknowledgement itself fails (then whether they landed is not known, or cannot be recorded: said as before). Entries
whose rows are missing stay queued, with their intent, for the next holder; the deletion of acknowledged entries is
not a reason to refuse (a next holder finds their rows and deletes them, once).

Acknowledgements (`_chronomem/acks/`) are the store's remote acknowledgement record: every commit of new rows on
a shared store writes one (a fold's, a direct commit's: `MemoryStore._acknowledge`), and `chronomem doctor`
checks that every id they name is in the table (storage/doctor.py). The consolidator's `optimize` folds those older
than an hour into one object once there are 64 of them (`compact_record`).
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from chronomem.config import StoreURI
from chronomem.errors import StoreError
from chronomem.records import utcnow
from chronomem.storage.remote import META_PREFIX, Lease, LeaseLost, LeaseTimeout, Objects, explain


class MemoryStore(Protocol):
    """What the group commit needs of `store.MemoryStore` (which imports this module, not the reverse)."""

    fence: Callable[[], None]

    def ids_exist(self, ids: Sequence[str]) -> set[str]: ...

    def ids_at_newest(self, ids: Sequence[str]) -> set[str]: ...

    def current_version(self) -> int: ...

    def write_schema(self) -> Any: ...

    def commit_rows(self, data: Any, acknowledged: Sequence[str]) -> int: ...

log = logging.getLogger(__name__)

#: Where waiting writers put their prepared rows, and where acknowledgements go.
QUEUE = f"{META_PREFIX}/queue"
ACKS = f"{META_PREFIX}/acks"
#: An append of at most this many rows (and `GROUP_MAX_BYTES`) may be grouped; larger ones (an import) take the lease.
GROUP_MAX_ROWS = 64
GROUP_MAX_BYTES = 4 * 2**20
#: At most this many queued entries go into one commit (the rest wait for the next).
FOLD_MAX_ENTRIES = 256
#: Longest pause between two looks of a waiting writer at the lease (each a LIST).
MAX_WAIT_POLL = 0.1
#: A waiter looks for its acknowledgement at least this often even if the lease's folder did not change.
ACK_CHECK_SECONDS = 1.0
#: How often a fold commits its batch: after a commit that failed, its rows found in the table are acknowledged and
#: only the missing ones are committed again, up to this many commits in all.
COMMIT_ATTEMPTS = 3

_held = threading.local()  # uri -> the WriteLock this thread holds (deferred or not)


def held_write_lock(location: Any) -> WriteLock | None:
    """The shared store's write lock that the calling thread holds on `location`, if any."""
    locks = getattr(_held, "locks", None)
    if not locks or not isinstance(location, StoreURI):
        return None
    return locks.get(location.uri)


class WriteLock:
    """The write lock of a store in object storage: the `write` lease, taken only when needed (module docstring).

    Answers `acquire(timeout)` / `release()` like a `FileLock` (reentrant within a thread), and `ensure_held()`
    (the fence before each commit). As a context manager it takes the lease at once."""

    def __init__(self, objects: Objects, seconds: float | None = None) -> None:
        self.objects = objects
        self.lease = Lease(objects, "write", seconds)
        self.timeout = -1.0
        self._depth = 0
        self._store: MemoryStore | None = None
        #: Set while `append` runs the store's fence for the checks beside the write lease (the consolidator's).
        self._grouping = False

    @property
    def is_locked(self) -> bool:
        return self._depth > 0

    @property
    def leased(self) -> bool:
        """Whether this holder has taken the lease (not only the deferred lock)."""
        return self.lease.is_locked

    def acquire(self, timeout: float = -1) -> WriteLock:
        """Hold the lock in this thread; the lease itself is taken by `upgrade` (or an append's group commit)."""
        self._depth += 1
        if self._depth == 1:
            self.timeout = timeout
            locks = getattr(_held, "locks", None)
            if locks is None:
                locks = _held.locks = {}
            locks[self.objects.location.uri] = self
        return self

    def bind(self, store: MemoryStore) -> None:
        """The store whose commits this lock's holder makes (its queue is folded into it at release)."""
        self._store = store

    def upgrade(self) -> None:
        """Take the lease now, if this holder has not (a read or a commit under the lock needs it)."""
        if self._depth == 0 or self.lease.is_locked:
            return
        try:
            self.lease.acquire(timeout=self.timeout)
        except LeaseTimeout:
            raise StoreError(
                f"another process has held the write lock of {self.objects.location} for {self.timeout:.0f} s; "
                "retry, or check for a stuck chronomem process"
            ) from None

    def ensure_held(self) -> None:
        """The fence before a commit: the lease taken, and still ours (`Lease.ensure_held`)."""
        if self._grouping and not self.lease.is_locked:
            return  # an append's group commit: its own path takes the lease or waits for an acknowledgement
        self.upgrade()
        self.lease.ensure_held()

    def release(self) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth:
            return
        locks = getattr(_held, "locks", {})
        locks.pop(self.objects.location.uri, None)
        if self.lease.is_locked:
            try:
                if self._store is not None:
                    fold(self._store, self.objects, self.lease, None)
            except Exception:  # the queue waits for the next holder (its writers keep looking)
                log.warning("could not commit the queued notes before releasing the write lease", exc_info=True)
            finally:
                self.lease.release()
        self._store = None

    def __enter__(self) -> WriteLock:
        self.acquire()
        self.upgrade()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # ------------------------------------------------------------------ the group commit
    def append(self, store: MemoryStore, data: Any) -> int | None:
        """Commit `data` (new rows, terms made) in a group commit; return once they are committed and acknowledged.
        The version they were committed in (None: by another writer, at the version its acknowledgement says)."""
        self.bind(store)
        self._grouping = True
        try:
            store.fence()  # the checks beside the write lease (a consolidator's): a lapsed one refuses the write
        finally:
            self._grouping = False
        lease = self.lease
        try:
            if lease.is_locked or lease.try_acquire():
                return fold(store, self.objects, lease, data)
        except StoreError:
            raise
        except Exception as exc:
            raise explain(self.objects.location, exc) from exc
        stem = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        try:
            self.objects.put(f"{QUEUE}/{stem}.arrow", to_ipc(data))
        except Exception as exc:
            raise explain(self.objects.location, exc) from exc
        return self._wait(store, stem)

    def _wait(self, store: MemoryStore, stem: str) -> int | None:
        """Wait until entry `stem` is acknowledged (its version) or this writer takes the lease and commits it."""
        lease = self.lease
        entry = f"{QUEUE}/{stem}.arrow"
        timeout = self.timeout
        deadline = None if timeout < 0 else time.monotonic() + timeout
        seen: frozenset[str] | None = None
        checked = time.monotonic()
        pause = 0.01
        while True:
            try:
                look = lease.look()
                names = frozenset(n for n in look.names if not n.startswith("want-"))
                if names != seen or time.monotonic() - checked >= ACK_CHECK_SECONDS:
                    if seen is not None and deadline is not None and names != seen:
                        deadline = time.monotonic() + timeout  # the lease changed hands: the line moves
                    seen, checked = names, time.monotonic()
                    if not self.objects.exists(entry):  # gone from the queue: committed and acknowledged
                        return None
                if lease.take_if_free(look):
                    version, acknowledged = fold_batch(store, self.objects, lease, None)
                    if stem in acknowledged:
                        return version
                    if self.objects.exists(entry):  # left in the queue (it did not parse): never acknowledged
                        raise StoreError(
                            f"a queued note of {self.objects.location} ({stem}) could not be committed: it is not "
                            "acknowledged; retry it"
                        )
                    return None  # committed by another holder meanwhile
            except StoreError:
                raise
            except Exception as exc:
                raise explain(self.objects.location, exc) from exc
            if deadline is not None and time.monotonic() >= deadline:
                raise StoreError(
                    f"another process has held the write lock of {self.objects.location} for {timeout:.0f} s "
                    "without committing the queued notes; this note was not acknowledged (it may still be committed "
                    "by the next holder): retry, or check for a stuck chronomem process"
                )
            time.sleep(pause)
            pause = min(pause * 1.5, MAX_WAIT_POLL)


def can_group(data: Any) -> bool:
    """Whether an append of `data` is small enough to go through the queue."""
    return 0 < data.num_rows <= GROUP_MAX_ROWS and data.nbytes <= GROUP_MAX_BYTES


def to_ipc(data: Any) -> bytes:
    import pyarrow as pa

    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    return sink.getvalue()


def from_ipc(raw: bytes) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(raw).read_all()


def record_ack(objects: Objects, stem: str, version: int, ids: Sequence[str], by: str = "") -> None:
    """Write the acknowledgement `stem` of rows `ids` committed in `version` (overwrites: writing one twice is
    harmless)."""
    body = {"version": int(version), "ids": list(ids), "at": utcnow().isoformat(), "by": by}
    objects.put(f"{ACKS}/{stem}.json", json.dumps(body, separators=(",", ":")).encode())


def new_stem() -> str:
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"


def fold(store: MemoryStore, objects: Objects, lease: Lease, own: Any) -> int | None:
    """Under the write lease: commit `own` rows (or None) and every queued entry in one LanceDB commit, then
    acknowledge them and delete the entries (module docstring for the order). The version committed (None when
    nothing was)."""
    return fold_batch(store, objects, lease, own)[0]


def fold_batch(store: MemoryStore, objects: Objects, lease: Lease, own: Any) -> tuple[int | None, set[str]]:
    """`fold`: (the version committed, None when nothing was; the queued entries this fold acknowledged)."""
    import pyarrow as pa

    names = sorted(objects.names(QUEUE))
    queued = [n[: -len(".arrow")] for n in names if n.endswith(".arrow")]
    stems = queued[:FOLD_MAX_ENTRIES]
    left = set(queued[FOLD_MAX_ENTRIES:])  # still queued after this fold
    intents: dict[str, set[str] | None] = {}  # name -> the entries it names (None: unreadable, so never deleted)
    fold_names = [n for n in names if n.startswith("~fold-")]
    for name, raw in zip(fold_names, _get_all(objects, [f"{QUEUE}/{n}" for n in fold_names]), strict=True):
        if raw is None:
            continue
        try:
            intents[name] = set(json.loads(raw)["entries"])
        except (ValueError, KeyError, TypeError):
            intents[name] = None
    entries: dict[str, Any] = {}
    for stem, raw in zip(stems, _get_all(objects, [f"{QUEUE}/{s}.arrow" for s in stems]), strict=True):
        if raw is None:
            continue  # folded and deleted meanwhile (a holder whose lease we took over finishing late)
        try:
            entries[stem] = from_ipc(raw)
        except Exception:  # a PUT is whole or absent, so this is not an upload cut short: never commit it
            log.warning("queued entry %s of %s does not parse; left in the queue", stem, objects.location)
            left.add(stem)
    # Every entry is looked up by id, not only those an intent names: one put back in the queue by its writer's
    # retried upload after a fold committed and deleted it has no intent left (module docstring, "Exactly once").
    recovered: dict[str, list[str]] = {}
    if entries:
        present = store.ids_exist([i for s in entries for i in entries[s].column("id").to_pylist()])
        for stem in list(entries):
            ids = entries[stem].column("id").to_pylist()
            if any(i in present for i in ids):  # committed already (its rows are in one commit): never again
                recovered[stem] = ids
                del entries[stem]
    done = [f"{QUEUE}/{stem}.arrow" for stem in [*entries, *recovered]]
    version: int | None = None
    if recovered:
        log.debug("queued entries %s of %s are committed already: acknowledged, not committed again",
                  sorted(recovered), objects.location)
        record_ack(objects, new_stem(), store.current_version(), [i for ids in recovered.values() for i in ids],
                   lease.owner)
    parts = ([own] if own is not None else []) + list(entries.values())
    failed: BaseException | None = None  # the commit's error, when rows of this batch are still not in the table
    if parts:
        schema = store.write_schema()
        data = pa.concat_tables([p.cast(schema) for p in parts]) if len(parts) > 1 else parts[0].cast(schema)
        intent = ""
        if entries:
            intent = f"~fold-{new_stem()}.json"
            objects.put(f"{QUEUE}/{intent}", json.dumps({"entries": sorted(entries), "by": lease.owner}).encode())
        # fenced, read back, and its acknowledgement (every id in it) recorded before anything is deleted
        version, missing, failed = _commit(store, objects, lease, data)
        unsure = {stem for stem, rows in entries.items() if missing & set(rows.column("id").to_pylist())}
        done = [d for d in done if d[len(QUEUE) + 1 : -len(".arrow")] not in unsure]
        left |= unsure  # not in the table: left in the queue (and its intent kept) for the next holder
        if intent and not unsure:
            done.append(f"{QUEUE}/{intent}")
        if failed is not None and (own is None or not missing & set(own.column("id").to_pylist())):
            log.warning("rows of a fold of %s are not committed (%s); their entries stay queued",
                        objects.location, failed)
            failed = None  # this caller's own rows are in (or it had none): the others' writers keep waiting
    done += [f"{QUEUE}/{name}" for name, named in intents.items() if named is not None and not named & left]
    acknowledged = {d[len(QUEUE) + 1 : -len(".arrow")] for d in done if d.endswith(".arrow")}
    if done:
        try:
            objects.delete_many(done)
        except Exception:  # acknowledged already: the next holder finds these entries' rows in the table, once
            log.warning("could not delete the committed entries of %s from its queue", objects.location,
                        exc_info=True)
    if failed is not None:
        raise failed
    return version, acknowledged


def _commit(store: MemoryStore, objects: Objects, lease: Lease, data: Any) -> tuple[int | None, set[str],
                                                                                     BaseException | None]:
    """Commit `data` (`store.commit_rows`: fenced, read back, acknowledged). A commit that fails may have landed all
    the same — its request applied and its answer lost, or a step after it failing (the read back, the
    acknowledgement's PUT) — so its ids are then looked up in the table at its newest version: those found are
    acknowledged (at that version, never committed again), and only the missing ones are committed again, up to
    `COMMIT_ATTEMPTS` commits. (the version, None if nothing was committed; the ids still missing; the last error,
    None when none is missing). A lost lease (the fence) refuses at once: nothing was sent."""
    import pyarrow as pa
    import pyarrow.compute as pc

    version: int | None = None
    error: BaseException | None = None
    for _ in range(COMMIT_ATTEMPTS):
        ids = data.column("id").to_pylist()
        try:
            return store.commit_rows(data, ids), set(), None
        except LeaseLost:
            raise
        except Exception as exc:
            error = exc
        try:
            present = store.ids_at_newest(ids)
        except Exception:
            log.debug("looking up the rows of a failed commit of %s failed", objects.location, exc_info=True)
            break  # whether they landed is unknown: the error stands
        if present:
            version = store.current_version()
            log.info("a commit of %s failed (%s) but %d of its %d rows are in the table at version %d: acknowledged",
                     objects.location, error, len(present), len(ids), version)
            record_ack(objects, new_stem(), version, [i for i in ids if i in present], lease.owner)
        if len(present) == len(ids):
            return version, set(), None
        found = pa.array(sorted(present), data.column("id").type)
        data = data.filter(pc.invert(pc.is_in(data.column("id"), value_set=found)))  # the missing rows, again
    return version, set(data.column("id").to_pylist()), error


def _get_all(objects: Objects, names: list[str]) -> list[bytes | None]:
    """The objects `names` (None for one that is gone), read concurrently."""
    if len(names) <= 1:
        return [objects.get(n) for n in names]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        return list(pool.map(objects.get, names))


# ---------------------------------------------------------------------------------------------- the record, read
def record_purged(objects: Objects, ids: Sequence[str]) -> None:
    """Say that `ids` were purged on purpose (storage/portable.py): the record no longer expects them."""
    if ids:
        body = {"purged": list(ids), "at": utcnow().isoformat()}
        objects.put(f"{ACKS}/{new_stem()}.json", json.dumps(body, separators=(",", ":")).encode())


def _union_of_records(objects: Objects, paths: list[str]) -> tuple[set[str], set[str]]:
    """The acknowledged and the purged ids the acknowledgement objects at `paths` name (gone or unreadable ones skipped)."""
    acked: set[str] = set()
    purged: set[str] = set()
    for raw in _get_all(objects, paths):
        if raw is None:
            continue
        try:
            body = json.loads(raw)
        except ValueError:
            continue
        acked.update(body.get("ids", []))
        purged.update(body.get("purged", []))
    return acked, purged


def read_record(objects: Objects) -> tuple[set[str], set[str], int]:
    """The remote acknowledgement record: (every acknowledged id, the ids purged since, how many records)."""
    names = [f"{ACKS}/{n}" for n in objects.names(ACKS) if n.endswith(".json")]
    acked, purged = _union_of_records(objects, names)
    return acked, purged, len(names)


def queued_count(objects: Objects) -> int:
    """Notes waiting in the queue for the next holder of the write lease."""
    return sum(1 for n in objects.names(QUEUE) if n.endswith(".arrow"))


#: The acknowledgement record is compacted (`compact_record`) once this many of its objects are older than
#: `COMPACT_AGE_SECONDS`: doctor reads one object per commit otherwise.
COMPACT_RECORDS = 64
COMPACT_AGE_SECONDS = 3600.0


def compact_record(objects: Objects, min_records: int = COMPACT_RECORDS, age: float = COMPACT_AGE_SECONDS) -> int:
    """Under the write lease (the consolidator's upkeep): fold the acknowledgement objects older than `age` seconds
    into one, once there are `min_records` of them — the union written first, then the old ones deleted (a crash in
    between leaves ids recorded twice, which reads the same). How many objects were folded."""
    now = time.time()
    old = sorted(n for n, modified in objects.entries(ACKS).items() if n.endswith(".json") and now - modified >= age)
    if len(old) < min_records:
        return 0
    acked, purged = _union_of_records(objects, [f"{ACKS}/{n}" for n in old])
    body = {"ids": sorted(acked), "purged": sorted(purged), "at": utcnow().isoformat(), "folded": len(old)}
    objects.put(f"{ACKS}/{new_stem()}.json", json.dumps(body, separators=(",", ":")).encode())
    objects.delete_many([f"{ACKS}/{n}" for n in old])
    return len(old)
