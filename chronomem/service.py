"""`MemoryService`: the one object the tools work through — settings, store, embedder, clock, lock.

Opening the store and loading the model are slow (about a second each), so both
start on background threads (`warm_up`) and every accessor waits for them.
Writes are serialised by `writing()`: a thread lock within the process and, across processes, a file
lock in the store directory — or, for a store in object storage, a lease in the bucket that holds across
machines (storage/remote.py) — so two clients' servers resolving the same fact slot cannot interleave
their read-modify-write. A store that failed to open is tried again after `STORE_RETRY_SECONDS`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from chronomem.config import Settings
from chronomem.embed import Embedder, FastEmbedder
from chronomem.errors import ChronomemError, StoreError
from chronomem.project import (
    GLOBAL,
    detect_project,
    display_name,
    empty_project_message,
    key_suffix,
    validate_project,
)
from chronomem.records import utcnow
from chronomem.search.engine import open_store
from chronomem.search.terms import warm as warm_terms
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.locks import WRITE_LOCK_NAME, store_lock

log = logging.getLogger(__name__)

#: Which projects the caller of the running tool call may see, when it may not see all (a team server's client
#: limited to its projects, server/team.py): `empty_project_note` names only those. Set per call by the server.
VISIBLE_PROJECTS: ContextVar[Callable[[str], bool] | None] = ContextVar("chronomem_visible_projects", default=None)

#: How long the list of the store's projects is reused before it is read again.
PROJECT_NAMES_TTL = 30.0
#: How long a write waits for another process's write before failing with advice.
WRITE_LOCK_TIMEOUT = 30.0
#: How long a failure to open the store is answered from memory before opening is tried again (an object store
#: that was unreachable, or a race with another server creating it, must not leave this one broken for good).
STORE_RETRY_SECONDS = 5.0


class MemoryService:
    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.settings = settings
        self.embedder: Embedder = embedder or FastEmbedder(
            model_name=settings.model_name,
            model_path=settings.model_path,
            wait_seconds=settings.model_wait_seconds,
            precision=settings.embed_precision,
        )
        self.clock = clock
        self._thread_lock = threading.RLock()
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        self._file_lock: Any = None
        self._fences = threading.local()  # per thread: leases besides the write lease its commits need (`fenced_by`)
        self._store: MemoryStore | None = None
        self._store_error: ChronomemError | None = None
        self._store_error_at = 0.0
        self._store_lock = threading.Lock()
        self._project_names: tuple[float, dict[str, str]] | None = None
        self._keys_by_suffix: dict[str, str] = {}  # `-<8 hex>` of a detected key → the key used for it
        self._keys_lock = threading.Lock()
        #: The store's semantic slot matcher, made and kept by `consolidate.slots.slot_matcher` (this layer does
        #: not import the consolidator) so its phrase embeddings are reused across calls.
        self.slot_matcher_cache: Any = None

    def warm_up(self) -> None:
        """Start loading the model, opening the store and the read path's word lists in the background."""
        start = getattr(self.embedder, "start", None)
        if callable(start):
            start()
        threading.Thread(target=self._open_quietly, name="chronomem-store", daemon=True).start()

    def _open_quietly(self) -> None:
        try:
            self.store
        except ChronomemError:
            pass  # reported to the first tool call that needs the store
        try:
            warm_terms()
        except Exception:  # pragma: no cover - the first query loads them itself; a warm-up must not fail
            log.debug("word lists did not load ahead", exc_info=True)
        if not self.settings.project:
            try:  # the git calls behind the working directory's key, off the first tool call's path
                detect_project(os.getcwd())
            except Exception:  # pragma: no cover - detection never raises; a warm-up must not either
                log.debug("project detection failed", exc_info=True)

    @property
    def store(self) -> MemoryStore:
        with self._store_lock:
            if self._store is None:
                if self._store_error is not None:
                    if time.monotonic() - self._store_error_at < STORE_RETRY_SECONDS:
                        raise self._store_error
                    self._store_error = None
                try:
                    self._store = open_store(
                        self.settings.store_path,
                        self.embedder.dim,
                        self.embedder.name,
                        read_index_rows=self.settings.read_index_rows,
                    )
                except ChronomemError as exc:
                    self._store_error, self._store_error_at = exc, time.monotonic()
                    raise
                except Exception as exc:  # pragma: no cover - defensive: any open failure is one line
                    log.debug("store open failed", exc_info=True)
                    self._store_error = StoreError(f"cannot open store {self.settings.store_path}: {exc}")
                    self._store_error_at = time.monotonic()
                    raise self._store_error from exc
            return self._store

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's write lock (in-process and cross-process) for one logical write."""
        from filelock import Timeout

        store = self.store
        with self._waiting_lock:
            self._waiting += 1
        try:
            self._thread_lock.acquire()
        finally:
            with self._waiting_lock:
                self._waiting -= 1
        try:
            if self._file_lock is None:
                self._file_lock = store_lock(store.path, WRITE_LOCK_NAME)
            try:
                self._file_lock.acquire(timeout=WRITE_LOCK_TIMEOUT)
            except Timeout:
                raise StoreError(
                    f"another process has held the write lock of {store.path} for {WRITE_LOCK_TIMEOUT:.0f} s; "
                    "retry, or check for a stuck chronomem process"
                ) from None
            except StoreError:
                raise
            except OSError as exc:  # a read-only or full store cannot take the lock file: say which
                from chronomem.storage.doctor import resource_error

                raise resource_error(store.path, exc) or StoreError(
                    f"cannot take the write lock of {store.path}: {exc.strerror or exc}"
                ) from exc
            if hasattr(self._file_lock, "ensure_held"):  # a shared store's lease fences each commit (storage/remote.py)
                store.fence = self._fence
            try:
                yield
            finally:
                self._file_lock.release()
        finally:
            self._thread_lock.release()

    def _fence(self) -> None:
        """Before each commit to a shared store: the write lease, and the leases this thread works under."""
        self._file_lock.ensure_held()
        for check in getattr(self._fences, "checks", ()):
            check()

    @contextmanager
    def fenced_by(self, check: Callable[[], None]) -> Iterator[None]:
        """Make this thread's commits meanwhile also run `check` first (the consolidator's lease: a consolidator
        that stalled past it while another took over commits nothing more); other threads' commits do not."""
        checks = getattr(self._fences, "checks", ())
        self._fences.checks = (*checks, check)
        try:
            yield
        finally:
            self._fences.checks = checks

    def write_waiters(self) -> int:
        """Threads of this process waiting for the write lock (the consolidator yields to them)."""
        with self._waiting_lock:
            return self._waiting

    def now(self) -> datetime:
        return self.clock()

    def project(self, explicit: str | None = None) -> str:
        """The project a call is scoped to (the order is in `chronomem.project`'s docstring)."""
        name = explicit if explicit is not None and explicit != "" else self.settings.project
        if not name:
            return self._known_key(detect_project(os.getcwd()))
        name = validate_project(name)
        if os.path.isabs(name) and os.path.isdir(name):
            # a workspace folder (an MCP root, `--project "$PWD"`): the same key its git repository gets
            return self._known_key(detect_project(name))
        return name

    def _known_key(self, detected: str) -> str:
        """`detected`, or the key the store already holds for the same repository.

        Detected keys are `<name>-<8 hex>` where only the hex identifies the repository (its root
        commit); a clone whose name differs joins the memory already stored under that hex. The
        choice is kept for the process, so two workspaces of one repository served by one server
        agree even before either has written.
        """
        suffix = key_suffix(detected)
        if suffix is None:
            return detected
        with self._keys_lock:
            chosen = self._keys_by_suffix.get(suffix)
        if chosen is not None:
            return chosen
        try:
            keys = self.project_names()
        except ChronomemError:
            return detected  # the store cannot open: the tool reports that itself
        same = sorted(k for k in keys if k.endswith(suffix))
        with self._keys_lock:
            return self._keys_by_suffix.setdefault(suffix, detected if detected in keys or not same else same[0])

    def workdir(self, project: str | None = None) -> str | None:
        """The directory on disk of the project a call is scoped to (its files, its git repository), if known.

        With no explicit project that is the server's working directory; an explicit project names
        a directory only when it is one (an absolute workspace path).
        """
        name = project if project is not None and project != "" else self.settings.project
        if not name:
            return os.getcwd()
        name = validate_project(name)  # a tool's `project` argument, unchecked until here (as_of's git refs)
        if os.path.isabs(name) and os.path.isdir(name):
            return name
        return None

    def scope_projects(self, project: str | None, scope: str) -> list[str] | None:
        """Projects a read covers: `project`, `global`, `both`, or `all` (None = no project filter)."""
        from chronomem.errors import InvalidInput

        if scope == "all":
            return None
        if scope == "global":
            return [GLOBAL]
        own = self.project(project)
        if scope == "project":
            return [own]
        if scope == "both":
            return list(dict.fromkeys([own, GLOBAL]))
        raise InvalidInput(f"scope must be one of project, global, both, all (got {scope!r})")

    def project_names(self) -> dict[str, str]:
        """Every project of the store → the name people write for it (`chronomem-3fa2c1d0` → `chronomem`).

        Cached for `PROJECT_NAMES_TTL` seconds: a scan of the project column is not free at 100k rows.
        """
        now = time.monotonic()
        cached = self._project_names
        if cached is None or now - cached[0] > PROJECT_NAMES_TTL:
            keys = self.store.projects()
            cached = self._project_names = (now, {k: display_name(k) for k in keys if k != GLOBAL})
        return cached[1]

    def empty_project_note(self, named: str | None) -> str | None:
        """When `named` — a project a reader named itself (a tool's `project`, `--project`, `CHRONOMEM_PROJECT`),
        not a workspace directory — holds no row at all: one line saying so and naming the projects that do
        (a mistyped name, or `shop` for the detected key `shop-3fa2c1d0`, otherwise reads as "nothing relevant").
        None when it holds rows, or names no project. Asked only by reads that found nothing, so it costs one
        count then; writing to a new project needs no such check (`remember` creates it)."""
        if named is None or named == "":
            return None
        name = validate_project(named)
        if os.path.isabs(name) and os.path.isdir(name):
            return None  # a workspace: its key is detected, not typed
        if self.store.count(Filter().projects([name])) > 0:
            return None
        counts = self.store.projects()
        visible = VISIBLE_PROJECTS.get()
        if visible is not None:
            counts = {k: n for k, n in counts.items() if visible(k)}
        return empty_project_message(name, counts, limited=visible is not None)

    def embed_one(self, text: str) -> list[float]:
        return self.embedder.embed([text])[0]

    def explain_failure(self, exc: BaseException) -> ChronomemError | None:
        """A one-line error with the recovery command when `exc` says the store's files are damaged."""
        from chronomem.storage.doctor import damage_error, is_damage, resource_error

        known = resource_error(self.settings.store_path, exc)  # a full disk or a read-only store: not damage
        if known is not None:
            return known
        return damage_error(self.settings.store_path, exc) if is_damage(exc) else None
