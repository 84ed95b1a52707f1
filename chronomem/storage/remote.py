"""A store in object storage (s3://, s3+ddb://, gs://, az://): its objects, its errors said plainly, and the
lease that coordinates writers on several machines.

LanceDB reads and writes the tables itself (`lancedb.connect(uri, storage_options=…)`); this module reaches
the same bucket through `obstore` (Python bindings of the Rust `object_store` crate that Lance uses, so the
same environment — AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, keys, region — and the same storage options apply) for
what chronomem keeps beside the tables: the consolidator's state object and the leases.

`Lease` is a lock that holds across machines, built on one primitive the store guarantees: create an object
only if it does not exist (`If-None-Match: *` on S3, the same put-if-absent Lance commits with). Holders take
numbered generations `<gen>.lease` under `_chronomem/leases/<name>/`:
- to acquire, list the generations; if the newest is released (`<gen>.done` exists) or its holder let it
  expire (its `expires` has passed), create `<gen+1>.lease` — only one creator wins; then list again: a newer
  generation than ours means we raced with an old listing, and we back off;
- a holder renews by creating the next generation itself before its lease expires (a background thread);
  a crashed holder's lease expires after `LEASE_SECONDS`, and the next acquirer takes over;
- to release, create `<gen>.done`; a next holder deletes the generations older than the one before its own,
  once `CLEAN_AFTER_OBJECTS` of them have gathered;
- a waiter queues (`want-<start time>-<owner>`, refreshed while it waits) and a free lease goes to the oldest
  fresh waiter, so no writer starves behind others that happen to poll at the right moments; a waiter's
  timeout counts only while the line ahead of it does not move: a writer's wait for its turn behind others is
  not a stuck holder (4 writers x 200 on two loaded cores refused one remember after 30 s of waiting in all:
  eval/results/s3.md);
- `look` and `take_if_free` (`try_acquire`: both) take a free lease in one look, without queueing or waiting: a
  group commit's waiter (storage/groupcommit.py) waits for its note's commit, not for the lease. A held
  generation's expiry is read once (one GET) and kept: a generation's expiry never changes;
- fencing: right before each commit the holder calls `ensure_held()`. With more than a third of its lease
  left (the renewal thread keeps it so) that is a clock read; nearer its expiry — the process was paused, its
  renewal did not run — it renews there and then, and creating `<gen+1>.lease` succeeds only if nobody took
  over (a taker creates that very object): otherwise `LeaseLost`, and the write is refused. What is left is
  a pause between that check and the commit's own request longer than the lease had left (at least a third
  of it, 5 s): the commit itself is not conditional on the lease. A purge needs no more (storage/portable.py:
  its commits are ones Lance checks against concurrent ones); two current facts in one slot would.
Expiry compares wall clocks of different machines: they are assumed to agree within seconds (NTP).
A store that ignores conditional creates breaks this (and Lance's own commits): `doctor` probes for it.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from filelock import Timeout

from chronomem.config import StoreURI
from chronomem.errors import StoreError

log = logging.getLogger(__name__)

#: How long a lease holds without renewal: a crashed holder blocks others at most this long. A write under the
#: lease takes ~0.1-1 s on S3 (DESIGN.md: an append is 4 requests, optimize ~300); renewal every third of it.
LEASE_SECONDS = 15.0
#: A waiter's place in the queue lasts this long without being refreshed (a waiter killed while waiting holds
#: the others back at most this long); waiters refresh it every third of it.
WANT_SECONDS = 5.0
#: Longest pause between two looks at a held lease (each look is one LIST request).
MAX_POLL_SECONDS = 0.2
#: How often a conditional create whose answer was lost is looked at and tried again (`Objects.create`).
CREATE_ATTEMPTS = 5
#: A lease's old generations (a `.lease` and a `.done` object each) are deleted once this many objects of them
#: have gathered: one bulk delete every eighth take rather than every take, a request less on most commits of a
#: shared store (eval/trace_s3.py), while the folder's listing stays far within one page (1,000 names).
CLEAN_AFTER_OBJECTS = 16
#: Where chronomem's own objects live beside the tables.
META_PREFIX = "_chronomem"


def objects_of(location: StoreURI) -> Objects:
    """The object access of the store at `location` (its bucket, and its prefix as the root)."""
    return Objects(location)


class Objects:
    """The objects of one store (paths relative to the store's prefix), through obstore."""

    def __init__(self, location: StoreURI) -> None:
        self.location = location
        uri = location.uri.split("?", 1)[0]
        scheme, rest = uri.split("://", 1)
        if scheme.lower() == "s3+ddb":
            scheme = "s3"
        bucket, _, prefix = rest.partition("/")
        self.prefix = prefix.strip("/")
        self._root = f"{scheme}://{bucket}"
        self._store: Any = None

    @property
    def store(self) -> Any:
        if self._store is None:
            from obstore.store import from_url

            config, client = store_and_client_options(self.location.storage_options())
            try:
                self._store = from_url(self._root, config=config or None, client_options=client or None)
            except BaseException as exc:
                if not isinstance(exc, Exception) and not is_panic(exc):
                    raise  # KeyboardInterrupt, SystemExit
                raise explain(self.location, exc) from exc
        return self._store

    def key(self, name: str) -> str:
        """The object key of `name` under the store's prefix ("" is the prefix itself: a location naming an object)."""
        if not name:
            return self.prefix
        return f"{self.prefix}/{name}" if self.prefix else name

    def get(self, name: str) -> bytes | None:
        import obstore

        try:
            return bytes(obstore.get(self.store, self.key(name)).bytes())
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        import obstore

        try:
            obstore.head(self.store, self.key(name))
        except FileNotFoundError:
            return False
        return True

    def put(self, name: str, data: bytes) -> None:
        import obstore

        obstore.put(self.store, self.key(name), data)

    def create(self, name: str, data: bytes) -> bool:
        """Create the object only if it does not exist: True when this call created it.

        A conditional create is not retried by the HTTP client when its answer is lost (a timeout, a reset: the
        store may have created it): here the object is then read, and it is this call's when it holds `data`
        (callers make `data` unique: a lease names its owner) — else, when absent, the create is tried again, up to
        `CREATE_ATTEMPTS` times."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        for attempt in range(CREATE_ATTEMPTS):
            try:
                obstore.put(self.store, self.key(name), data, mode="create")
            except (AlreadyExistsError, PreconditionError):
                if attempt == 0:
                    return False
                return self.get(name) == data  # our earlier try may be the one that created it
            except (FileNotFoundError, PermissionError):
                raise
            except Exception:
                if attempt == CREATE_ATTEMPTS - 1:
                    raise
                log.debug("a conditional create of %s lost its answer; looking", name, exc_info=True)
                time.sleep(0.05 * 2**attempt * (0.5 + random.random()))
                try:
                    found = self.get(name)
                except Exception:
                    continue
                if found is not None:
                    return found == data
                continue
            return True
        return False

    def delete(self, name: str) -> None:
        import obstore

        try:
            obstore.delete(self.store, self.key(name))
        except FileNotFoundError:
            pass

    def delete_many(self, names: list[str]) -> None:
        """Delete the objects `names` (one bulk request on S3; a missing one is no error)."""
        import obstore

        keys = [self.key(n) for n in names]
        try:
            obstore.delete(self.store, keys)
        except FileNotFoundError:
            pass

    def names(self, under: str) -> list[str]:
        """Names (relative to `under`) of the objects below the folder `under`."""
        return list(self.entries(under))

    def entries(self, under: str) -> dict[str, float]:
        """Name (relative to `under`) → last-modified time (epoch seconds) of the objects below the folder `under`."""
        import obstore

        base = self.key(under).rstrip("/") + "/"
        found: dict[str, float] = {}
        for batch in obstore.list(self.store, base):
            for item in batch:
                found[item["path"][len(base) :]] = item["last_modified"].timestamp()
        return found


#: object_store's HTTP client options (ClientConfigKey): LanceDB takes them among its storage options, obstore
#: only as `client_options` — passed in `config`, `allow_http` or `timeout` made obstore 0.12 panic ("Expected
#: config prefix to start with aws_"). A provider prefix (`aws_allow_http`) names the same option. Client options
#: given replace those obstore reads from the environment, so the environment's (AWS_ALLOW_HTTP) are added to them.
CLIENT_OPTIONS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type", "http1_only",
    "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle", "http2_only",
    "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
    "randomize_addresses", "read_timeout", "root_certificate", "timeout", "user_agent",
})


def store_and_client_options(options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A store's storage options split for obstore: (the store's own config, the HTTP client's options). The
    DynamoDB commit table's options are Lance's alone and left out."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        if key.startswith(("ddb", "dynamodb")):
            continue
        bare = key
        for prefix in ("aws_", "google_", "azure_"):
            if key.startswith(prefix) and key[len(prefix):] in CLIENT_OPTIONS:
                bare = key[len(prefix):]
        if bare in CLIENT_OPTIONS:
            client[bare] = value
        else:
            config[key] = value
    if client:  # given at all, they replace what obstore read from the environment (AWS_ALLOW_HTTP, …): keep those
        for name in CLIENT_OPTIONS - set(client):
            for prefix in ("AWS_", "GOOGLE_", "AZURE_"):
                value = os.environ.get(prefix + name.upper())
                if value is not None:
                    client[name] = value
                    break
    return config, client


# ---------------------------------------------------------------------------------------------- errors
def is_panic(exc: BaseException) -> bool:
    """Whether `exc` is a Rust panic surfacing in Python (`pyo3_runtime.PanicException`, a `BaseException`, not an
    `Exception`; LanceDB's async calls raise `pyo3_async_runtimes.RustPanic`, an `Exception`, "rust future
    panicked: unknown error"): a library below us failed on an input it did not expect, never something to retry."""
    return type(exc).__name__ in ("PanicException", "RustPanic") or type(exc).__module__ == "pyo3_runtime"


def explain(location: StoreURI, exc: BaseException) -> StoreError:
    """The one-line error for a failure reaching the store at `location`: no bucket, no credentials, access
    denied, an unreachable endpoint — never "damaged" (the files were not even read)."""
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    where = location.uri
    if isinstance(exc, StoreError):  # already said plainly (an open below this call explained it)
        return exc
    if is_panic(exc):  # its message is a Rust `expect`'s, which may hold any of the words below
        reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "no reason given"
        return StoreError(
            f"the object store client crashed opening {where} ({reason}): check the bucket name in --store and the "
            "keys in CHRONOMEM_STORAGE_OPTIONS (LanceDB's storage options)"
        )
    endpoint = os.environ.get("AWS_ENDPOINT_URL") or location.storage_options().get("aws_endpoint") or ""
    if "nosuchbucket" in low or "bucket does not exist" in low or "specified bucket" in low:
        return StoreError(f"the bucket of {where} does not exist: create it (or fix the name in --store)")
    if any(k in low for k in ("invalidaccesskeyid", "signaturedoesnotmatch", "missing credentials", "no credentials",
                              "credential", "expiredtoken")):
        return StoreError(
            f"no valid credentials for {where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the "
            "provider's own variables, or CHRONOMEM_STORAGE_OPTIONS)"
        )
    if "accessdenied" in low or "403" in low or "forbidden" in low:
        return StoreError(f"access to {where} is denied: the credentials lack read/write permission on it")
    if any(k in low for k in ("connection refused", "connect error", "dns error", "error sending request",
                              "tcp connect", "timed out", "timeout", "failed to lookup")):
        at = f" at {endpoint}" if endpoint else ""
        return StoreError(f"the object store of {where} is unreachable{at}: check AWS_ENDPOINT_URL and the network")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return StoreError(f"the object store of {where} failed: {first[:300]}")


# ---------------------------------------------------------------------------------------------- the lease
class LeaseTimeout(Timeout):
    """The lease was held by another holder for longer than the caller waits."""


class LeaseLost(StoreError):
    """This holder's lease expired (its process stalled) and another holder may have taken it: no commit."""


@dataclass(frozen=True)
class LeaseLook:
    """What one look at a lease saw (`Lease.look`)."""

    newest: int
    released: bool
    names: tuple[str, ...]
    waiting: frozenset[str]


class Lease:
    """A named lease on one store, held by at most one process on any machine (the protocol: module docstring)."""

    def __init__(self, objects: Objects, name: str, seconds: float | None = None) -> None:
        self.objects = objects
        self.folder = f"{META_PREFIX}/leases/{name}"
        self.seconds = LEASE_SECONDS if seconds is None else seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.generation: int | None = None
        self._expires = 0.0  # when our generation expires (this machine's clock)
        self._depth = 0
        self._listed: list[str] = []
        self._entries: dict[str, float] = {}
        self._seen: tuple[int, float] = (-1, 0.0)  # (a held generation, its expiry) read by `_lapsed`
        self._want: str | None = None
        self._want_put = 0.0
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    @property
    def is_locked(self) -> bool:
        return self.generation is not None

    def _state(self) -> tuple[int, bool]:
        """(newest generation, whether it is released) — (0, True) when there is none."""
        newest, done = 0, set()
        self._entries = self.objects.entries(self.folder)
        self._listed = list(self._entries)
        for name in self._listed:
            stem, _, ext = name.partition(".")
            if not stem.isdigit():
                continue
            if ext == "lease":
                newest = max(newest, int(stem))
            elif ext == "done":
                done.add(int(stem))
        return newest, newest == 0 or newest in done

    def look(self) -> LeaseLook:
        """One look at the lease (one LIST): its newest generation, whether released, who waits for it."""
        newest, released = self._state()
        return LeaseLook(newest, released, tuple(self._listed), frozenset(self._waiting_ahead()))

    def try_acquire(self) -> bool:
        """Take the lease if it is free (or its holder let it expire) and nobody queued for it; never wait."""
        return self.generation is not None or self.take_if_free(self.look())

    def take_if_free(self, look: LeaseLook) -> bool:
        """After `look`: take the lease when it was free and nobody waited for it (True when now ours)."""
        if look.waiting or not (look.released or self._lapsed(look.newest)):
            return False
        if not self._take(look.newest + 1):
            return False
        self.generation = look.newest + 1
        self._depth = 1
        self._clean(look.newest + 1)
        self._start_renewing()
        return True

    def _lapsed(self, generation: int) -> bool:
        """Whether held generation `generation` has expired: its expiry is read once (one GET) and kept, since a
        generation's expiry never changes (a renewal makes the next one)."""
        if self._seen[0] != generation:
            raw = self.objects.get(f"{self.folder}/{generation:012d}.lease")
            if raw is None:
                return True  # deleted by a newer holder: the listing was old
            try:
                expires = float(json.loads(raw)["expires"])
            except (ValueError, KeyError, TypeError):
                return True
            self._seen = (generation, expires)
        return self._seen[1] < time.time()

    def _take(self, generation: int) -> bool:
        """Create generation `generation`; True when ours and still the newest."""
        started = time.time()  # the expiry counts from before the request: a slow create shortens it, never lengthens
        body = json.dumps({"owner": self.owner, "expires": started + self.seconds}).encode()
        if not self.objects.create(f"{self.folder}/{generation:012d}.lease", body):
            return False
        newest, _ = self._state()
        if newest > generation:  # we raced with a listing older than a newer holder's clean-up
            self.objects.create(f"{self.folder}/{generation:012d}.done", b"")
            return False
        self._expires = started + self.seconds
        return True

    def ensure_held(self) -> None:
        """Right before a commit under this lease: return when this holder still holds it, else raise `LeaseLost`
        (the fencing of the module docstring). A no-op when the lease was not taken through this object."""
        if self._depth == 0:
            return
        with self._lock:
            held = self.generation
            if held is not None and time.time() < self._expires - self.seconds / 3:
                return
            if held is not None:
                try:
                    if self._take(held + 1):  # only possible when nobody took over
                        self.generation = held + 1
                        self.objects.create(f"{self.folder}/{held:012d}.done", b"")
                        return
                except Exception as exc:
                    raise explain(self.objects.location, exc) from exc
                self.generation = None
        raise LeaseLost(
            f"this process's lease {self.folder} of {self.objects.location} expired while it was stalled and another "
            "process may have taken it: the write was not committed; retry it"
        )

    def acquire(self, timeout: float = -1) -> Lease:
        """Take the lease, waiting up to `timeout` seconds (negative: forever) without the queue ahead of this
        waiter moving — a waiter ahead of it taking the lease starts the wait anew, so a writer behind several
        others is refused only when one holder keeps the lease that long, not when its turn is merely far;
        LeaseTimeout past it. Reentrant like a `FileLock`: a holder taking it again counts, and releases it at its
        last `release`."""
        if self.generation is not None:
            self._depth += 1
            return self
        deadline = None if timeout < 0 else time.monotonic() + timeout
        ahead: set[str] | None = None  # the fresh waiters queued before this one, at the last look
        pause = 0.02
        try:
            while True:
                try:
                    newest, released = self._state()
                    waiting = self._waiting_ahead()
                    if not waiting and (released or self._lapsed(newest)):
                        if self._take(newest + 1):
                            self.generation = newest + 1
                            self._depth = 1
                            self._clean(newest + 1)
                            self._start_renewing()
                            return self
                    if deadline is not None:
                        if ahead is not None and ahead - waiting:  # the line moved: the wait starts again
                            deadline = time.monotonic() + timeout
                        ahead = waiting
                        if time.monotonic() >= deadline:
                            raise LeaseTimeout(f"{self.objects.location}/{self.folder}")
                    self._queue()
                except (StoreError, LeaseTimeout):
                    raise
                except Exception as exc:
                    raise explain(self.objects.location, exc) from exc
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 1.5, MAX_POLL_SECONDS)
        finally:
            self._leave_queue()

    # -- waiting in turn: without it a waiter that polls at the wrong moments starves (4 writers: one waited 30 s)
    def _queue(self) -> None:
        """Say that this holder waits (`want-<start ns>-<owner>`, kept fresh while it waits): the oldest waiter
        takes the lease next."""
        now = time.monotonic()
        if self._want is None:
            self._want = f"want-{time.time_ns():020d}-{self.owner.replace(':', '_')}"
        elif now - self._want_put < WANT_SECONDS / 3:
            return
        self.objects.put(f"{self.folder}/{self._want}", b"")
        self._want_put = now

    def _waiting_ahead(self) -> set[str]:
        """The fresh waiters queued before this one, from the last listing (every fresh waiter, when this one is
        not queued): while there is one, the lease is theirs first."""
        now = time.time()
        return {
            name for name, modified in self._entries.items()
            if name.startswith("want-") and name != self._want and now - modified < WANT_SECONDS
            and (self._want is None or name < self._want)
        }

    def _leave_queue(self) -> None:
        if self._want is not None:
            try:
                self.objects.delete(f"{self.folder}/{self._want}")
            except Exception:  # it goes stale after WANT_SECONDS
                log.debug("could not leave the lease queue", exc_info=True)
            self._want = None

    def release(self) -> None:
        if self._depth > 1:
            self._depth -= 1
            return
        self._depth = 0
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
            self._renewer = None
        with self._lock:
            generation, self.generation = self.generation, None
        if generation is not None:
            try:
                self.objects.create(f"{self.folder}/{generation:012d}.done", b"")
            except Exception:  # it then expires after LEASE_SECONDS
                log.warning("could not release the lease %s; it expires in %.0f s", self.folder, self.seconds)

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _clean(self, generation: int) -> None:
        """Delete generations older than the one before ours once `CLEAN_AFTER_OBJECTS` of them have gathered (best
        effort: they only cost a listing), from the listing `_take` just made."""
        try:
            old = [f"{self.folder}/{name}" for name in self._listed
                   if name.partition(".")[0].isdigit() and int(name.partition(".")[0]) < generation - 1]
            if len(old) >= CLEAN_AFTER_OBJECTS:
                self.objects.delete_many(old)
        except Exception:
            log.debug("lease clean-up failed", exc_info=True)

    def _start_renewing(self) -> None:
        self._stop = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name="chronomem-lease", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        """While held: every third of the lease, move to the next generation (only the holder can, before expiry)."""
        while not self._stop.wait(self.seconds / 3):
            with self._lock:
                held = self.generation
                if held is None:
                    return
                try:
                    if self._take(held + 1):
                        self.generation = held + 1
                        self.objects.create(f"{self.folder}/{held:012d}.done", b"")
                        continue
                except Exception:
                    log.debug("lease renewal failed", exc_info=True)
                    continue
                log.warning("the lease %s was taken over by another process (this one stalled past its expiry)",
                            self.folder)
                self.generation = None
                return


def conditional_create_holds(objects: Objects) -> bool:
    """Whether the store refuses a second create of one object (`If-None-Match: *`): a fresh probe object is
    created twice; the second must fail. Several writers are only safe on a store where it does."""
    name = f"{META_PREFIX}/probe/{uuid.uuid4().hex}"
    try:
        first = objects.create(name, b"1")
        second = objects.create(name, b"2")
    finally:
        try:
            objects.delete(name)
        except Exception:
            log.debug("probe clean-up failed", exc_info=True)
    return first and not second
