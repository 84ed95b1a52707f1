"""`MemoryStore`: open or create the `memories` table, write rows atomically, read rows, and keep the search
component's in-memory read index (search/readindex.py, handed in as a builder) in step with the table's version.

Searching is not here: search/ asks `answer` to route each search to the read index or to LanceDB.

Bi-temporal writes live here because they must be atomic: closing a row's validity
expires it and appends its revision in one LanceDB commit (`merge_insert` on `id`),
so a crash leaves either the old state or the new one, never half of each.

A row is written once: `upsert` refuses to change any column of a stored row but its validity
(`schema.VALIDITY_COLUMNS`), and for a stored row writes only those (its other columns, vector included,
are taken from the table). `chronomem reembed` is the one declared exception (it rewrites `vector` and
`embed_model`, storage/reembed.py). What changes after a write lives in the `usage` side table
(storage/usage.py), which every read attaches to the rows it returns (`MemoryRecord.with_usage`).
Opening a store of an older schema migrates it first (storage/migrate.py); a newer one is refused.

Every row carries its `terms` (schema.py), computed by the function the search component hands `open`
(`row_terms`): LanceDB's full-text index reads that column, split on spaces and folded no further, so it scores
exactly what the read index scores. Opening with that function also fills the terms of rows that have none (a
store migrated, restored or salvaged without it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

from chronomem.config import DEFAULT_READ_INDEX_ROWS, StoreLocation, is_remote
from chronomem.errors import StoreError
from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.storage.usage import UsageLog
from chronomem.storage.commitwatch import CommitWatch
from chronomem.storage import ledger
from chronomem.storage.doctor import error_line, foreign_entries, recovery_hint, resource_error
from chronomem.storage.filters import Filter
from chronomem.storage.locks import WRITE_LOCK_NAME, store_lock
from chronomem.storage.schema import (
    FTS_INDEX,
    OLD_FTS_INDEX,
    RESULT_COLUMNS,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    TABLE_NAME,
    TERMS_COLUMN,
    VALIDITY_COLUMNS,
    RowTerms,
    create_fts_index,
    memories_schema,
    schema_version,
    stored_model,
    terms_pending,
    with_terms,
)

_Found = TypeVar("_Found")


class ReadIndex(Protocol):
    """An in-memory copy of the table that this store keeps in step with the table's version
    (`search/readindex.py` is the one; storage does not import it: `MemoryStore.open` is handed its builder)."""

    version: int

    @property
    def rows(self) -> int: ...

    def apply(self, data: Any, version: int) -> None: ...

    def catch_up(self, table: Any, scan_limit: int) -> bool: ...

    def find(self, flt: Filter, limit: int, with_vectors: bool = False) -> list[MemoryRecord] | None: ...

    def project_counts(self) -> dict[str, int]: ...


#: Builds a read index from (LanceDB table or pylance dataset, vector dimension, scan limit, directory for its spill file).
BuildReadIndex = Callable[[Any, int, int, Path | None], ReadIndex]

log = logging.getLogger(__name__)

#: Old table versions (kept for readers that are mid-query and for recovery) live this long. Every
#: read lists the table's versions (to see other processes' writes), so each kept version costs
#: reads time: ~1,000 versions (a day of an agent's writes) added ~5 ms to a recall at 10k rows.
VERSION_RETENTION = timedelta(hours=1)
#: Upper bound on rows any single scan returns; searches use their own small limits.
SCAN_LIMIT = 1_000_000
#: Tables up to this many rows get their read index at open (~0.1 s); larger ones after the first search.
OPEN_BUILD_ROWS = 2_000
#: LanceDB's index cache once the read index answers the searches (LanceDB is left with the rare filters the
#: copy cannot evaluate, mostly scans). Its default, 6 GB, kept what the first searches had loaded.
LANCE_CACHE_BEHIND_INDEX = 16 * 2**20
#: How often opening a store in object storage retries when another process's commit (creating the table or its
#: index) conflicts with its own: 8 servers opening a fresh store at once took up to 4 tries under the lease.
OPEN_ATTEMPTS = 6
#: Name of the ANN index on `vector` the consolidator builds once the table is large.
VECTOR_INDEX_NAME = "vector_idx"


class MemoryStore:
    """The `memories` table of one store: a local directory, or a URI in object storage (`config.StoreURI`)."""

    def __init__(
        self,
        path: StoreLocation,
        table: Any,
        dim: int,
        embed_model: str,
        read_index_rows: int = 0,
        build_read_index: BuildReadIndex | None = None,
        *,
        dataset: Any = None,
        row_terms: RowTerms | None = None,
    ) -> None:
        self.path = path
        #: A row's `terms` from its content and kind (None: rows are written without, and the next open with it fills them).
        self.row_terms = row_terms
        #: Whether the store is in object storage: no local files beside the table (ledger, spill file, locks).
        self.remote = is_remote(path)
        #: Called right before each commit: the write lease's `ensure_held` for a shared store (set by the service;
        #: it raises when this process's lease lapsed while it stalled), nothing for a local one.
        self.fence: Callable[[], None] = _no_fence
        self._opened = table  # the LanceDB table (`_handle`; None: opened at its first use, see `_open_quick`)
        self._open_lock = threading.Lock()
        #: The pylance dataset `_open_quick` read the store through, until the LanceDB table is opened.
        self._dataset = dataset
        #: The pylance dataset writes are read back through (`_read_back`), at the version last committed here.
        self._committed: Any = None
        self._version: int | None = None if dataset is None else int(dataset.version)  # `_handle`'s (None: ask it)
        self.dim = dim
        self.embed_model = embed_model
        self.read_index_rows = read_index_rows
        self._build_index = build_read_index
        self._read_index: ReadIndex | None = None
        self._index_lock = threading.Lock()
        self._index_building = False
        self._index_off = read_index_rows <= 0 or build_read_index is None  # off by setting, or the table outgrew it
        self._index_settled = threading.Event()  # set whenever no build is running
        self._index_settled.set()
        self._commits = (
            CommitWatch.of(path, f"{TABLE_NAME}.lance", _uses_v2_names(table))
            if table is not None
            else CommitWatch.detect(path, f"{TABLE_NAME}.lance", int(dataset.version))
        )
        self._session: Any = None  # the LanceDB session whose caches `_table` fills
        #: Commits of new rows through this store since its last `optimize()`: each left a small fragment.
        self.commits_since_optimize = 0
        #: How long this store's last `optimize()` took (None: none yet).
        self.last_optimize_seconds: float | None = None
        #: The `usage` side table: recall hits and restatements, never written into the rows.
        self.usage = UsageLog(path, lambda: _connect(path)[0])
        self._objects: Any = None  # a shared store's objects beside the table (its acknowledgement record)

    @property
    def _handle(self) -> Any:
        """The LanceDB table (at the version `_version` says, or newer): opened here, at its first use, after a
        quick open (`_open_quick`)."""
        handle = self._opened
        if handle is None:
            with self._open_lock:
                if self._opened is None:
                    index = self._read_index
                    big = index is not None and index.rows > OPEN_BUILD_ROWS  # see `_build_read_index`
                    db, self._session = _connect(self.path, LANCE_CACHE_BEHIND_INDEX if big else None)
                    if TABLE_NAME in db.list_tables().tables:  # not `_open_table`: it migrates, under a lock
                        table = db.open_table(TABLE_NAME)
                        self._check_schema(self.path, table.schema, self.dim)
                    else:  # a new store's table, made at its first write (see `_open_quick`)
                        table = db.create_table(
                            TABLE_NAME, schema=memories_schema(self.dim, self.embed_model), exist_ok=True
                        )
                    if not _has_fts(table):
                        create_fts_index(table)
                    self._commits.v2_names = _uses_v2_names(table)
                    self._opened, self._dataset = table, None
                handle = self._opened
        return handle

    @_handle.setter
    def _handle(self, table: Any) -> None:
        self._opened, self._committed = table, None

    @property
    def table(self) -> Any:
        """The LanceDB table at its newest version (for the search component's LanceDB searches)."""
        return self._table

    @property
    def _table(self) -> Any:
        """The LanceDB table at its newest version: reloaded when another handle (another process, the CLI) has
        committed since this one last looked — a `stat` or two (`CommitWatch`), where LanceDB's own check on
        every operation reads the newest manifest."""
        if self.remote:
            self._under_lease()
        if self._commits.moved(self._version):
            self._handle.checkout_latest()
            self._version = self._handle.version
        return self._handle

    def _under_lease(self) -> None:
        """A read or a commit of a shared store by a thread holding its write lock: the lease is taken first, so a
        read-modify-write reads what no other writer changes before its commit (storage/groupcommit.py)."""
        from chronomem.storage.groupcommit import held_write_lock

        lock = held_write_lock(self.path)
        if lock is not None:
            lock.bind(self)
            lock.upgrade()

    def _now_at(self, version: int | None = None) -> None:
        """Our handle committed `version` (None: a write that does not say; ask the handle)."""
        self._version = version if version is not None else self._handle.version

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: StoreLocation | str,
        dim: int,
        embed_model: str,
        read_index_rows: int = DEFAULT_READ_INDEX_ROWS,
        build_read_index: BuildReadIndex | None = None,
        row_terms: RowTerms | None = None,
        quick_at_any_size: bool = False,
    ) -> MemoryStore:
        """Open the store at `path`, creating it (and the directory) if it does not exist.

        With `build_read_index` (the search component's, `search.engine.open_store`), `read_index_rows` > 0 and at
        most that many rows, the in-memory read index is built here for a
        table of at most `OPEN_BUILD_ROWS` rows; a larger one's build is started by the first search, on a
        background thread (searches go to LanceDB until it is ready), so a starting server's first recall
        does not share the cores with a build of several seconds.

        `row_terms` (the search component's, `search.terms.row_terms`) makes each written row's `terms`; with it,
        rows that have none are given theirs here, under the write lock (one commit, as a migration).

        `quick_at_any_size`: the caller has the read index ready to load (search/snapshot.py), so a table of any size
        (up to `read_index_rows`) is opened through pylance alone (`_open_quick`).
        """
        os.environ.setdefault("LANCE_LOG", "error")
        # LanceDB warns on stderr about a future change of its index statistics: quiet by default
        os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
        if is_remote(path):
            return cls._open_remote(path, dim, embed_model, read_index_rows, build_read_index, row_terms)  # type: ignore[arg-type]
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise StoreError(f"store path {path} is a file, not a directory: pass --store with a directory")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create store directory {path}: {exc.strerror or exc}") from exc
        foreign = foreign_entries(path)
        if foreign:
            raise StoreError(
                f"{path} is not a chronomem store (it holds {', '.join(foreign[:3])}{', …' if len(foreign) > 3 else ''}): "
                "point --store / CHRONOMEM_HOME at an empty directory or an existing store"
            )
        quick = cls._open_quick(path, dim, embed_model, read_index_rows, build_read_index, row_terms, quick_at_any_size)
        if quick is not None:
            return quick
        try:
            db, session = _connect(path)
            if TABLE_NAME in db.list_tables().tables and _never_committed(path):
                # a process killed while creating the table left its folder without a first version: nothing was
                # ever written (no write is acknowledged before its commit), so the table is made anew
                import shutil

                shutil.rmtree(Path(path) / f"{TABLE_NAME}.lance")
            if TABLE_NAME in db.list_tables().tables:
                table = db.open_table(TABLE_NAME)
                cls._check_schema(path, table.schema, dim)
                if _needs_upgrade(table, row_terms):
                    from filelock import FileLock

                    # Under the store's write lock (service.WRITE_LOCK_NAME): no write of another process lands
                    # between the migration's read and its overwrite, and one process migrates, not two.
                    with FileLock(str(path / WRITE_LOCK_NAME)):
                        _upgrade(path, db, db.open_table(TABLE_NAME), row_terms)
                    table = db.open_table(TABLE_NAME)
            else:
                table = db.create_table(TABLE_NAME, schema=memories_schema(dim, embed_model), exist_ok=True)
        except StoreError:
            raise
        except Exception as exc:  # a damaged directory: say so in one line, with the way out
            known = resource_error(path, exc, "open")  # a full disk or a read-only store is not damage
            if known is not None:
                raise known from exc
            raise StoreError(f"cannot open the store at {path} ({error_line(exc)}): {recovery_hint(path)}") from exc
        _check_ledger(path, int(table.version), int(table.count_rows()))
        store = cls(path, table, dim, embed_model, read_index_rows, build_read_index, row_terms=row_terms)
        store._session = session
        store.ensure_indexes()
        store._first_read_index()
        return store

    @property
    def _rows_source(self) -> Any:
        """What a read index is built from: a quick open's pylance dataset until LanceDB's table is opened."""
        return self._dataset if self._opened is None else self._table

    def catch_up(self, index: ReadIndex) -> None:
        """Bring `index` to the table's newest version: from pylance's dataset while LanceDB's table is not open
        (`_newest_dataset`), else, or when that cannot do it, from the table."""
        dataset = self._newest_dataset()
        if dataset is None or not index.catch_up(dataset, SCAN_LIMIT):
            index.catch_up(self._table, SCAN_LIMIT)

    def _newest_dataset(self) -> Any:
        """A quick open's pylance dataset moved to the table's newest version, while LanceDB's table is not open (no
        write yet): the read index catches up from it, so a recall after another process wrote does not import
        LanceDB (~0.8 s of a starting server's CPU, storage/lazy_imports.py; the consolidator still opens it later,
        between calls). None once it is open."""
        dataset = self._dataset
        if self._opened is not None or dataset is None or not hasattr(dataset, "checkout_version"):
            return None
        newest = dataset.checkout_version(dataset.latest_version)
        self._dataset, self._version = newest, int(newest.version)
        return newest

    def _first_read_index(self) -> None:
        if not self._index_off and self._rows_source.count_rows() <= OPEN_BUILD_ROWS:
            self.wait_for_read_index()  # a small table's copy is made in ~0.1 s: every search then reads alike

    @classmethod
    def _open_quick(
        cls,
        path: Path,
        dim: int,
        embed_model: str,
        read_index_rows: int,
        build_read_index: BuildReadIndex | None,
        row_terms: RowTerms | None,
        any_size: bool = False,
    ) -> MemoryStore | None:
        """Open an existing local store that needs nothing but reading, through pylance alone: its schema, version
        and row count, and the read index built from one scan, while the LanceDB table (whose import is ~0.8 s of
        a starting server's CPU, `lance`'s ~0.3 s) opens at its first use — a write, or a search the read index
        cannot answer. So a server's first recall does not wait for LanceDB. None when the store needs more
        (creating, migrating, indexing, a table too large for a read index built at open, files pylance cannot
        read, rows whose terms are still to be filled): `open` then does it all through LanceDB, and reports what
        is wrong."""
        versions = path / f"{TABLE_NAME}.lance" / "_versions"
        if read_index_rows <= 0 or build_read_index is None:
            return None
        if not versions.parent.exists():  # a new store: its table is created by its first write
            _check_ledger(path, 0, 0)
            store = cls(
                path,
                None,
                dim,
                embed_model,
                read_index_rows,
                build_read_index,
                dataset=_Unwritten(dim, embed_model),
                row_terms=row_terms,
            )
            store._first_read_index()
            return store
        if not versions.is_dir():
            return None
        try:
            import lance  # pylance: the format library LanceDB is built on

            dataset = lance.dataset(str(versions.parent))
            indexes = {index.name for index in dataset.describe_indices()}
            current = (
                schema_version(dataset.schema) == SCHEMA_VERSION
                and not terms_pending(dataset.schema)
                and FTS_INDEX in indexes
                and OLD_FTS_INDEX not in indexes
            )
            rows = int(dataset.count_rows())
        except Exception:
            log.debug("quick open of %s failed; opening through LanceDB", path, exc_info=True)
            return None
        if not current or rows > (read_index_rows if any_size else min(read_index_rows, OPEN_BUILD_ROWS)):
            return None
        cls._check_schema(path, dataset.schema, dim)
        _check_ledger(path, int(dataset.version), rows)
        store = cls(path, None, dim, embed_model, read_index_rows, build_read_index, dataset=dataset, row_terms=row_terms)
        store._first_read_index()
        return store

    @classmethod
    def _open_remote(
        cls,
        path: Any,
        dim: int,
        embed_model: str,
        read_index_rows: int,
        build_read_index: BuildReadIndex | None,
        row_terms: RowTerms | None,
    ) -> MemoryStore:
        """Open (or create) a store in object storage. Creating the table, its index or migrating it happens under
        the store's write lease (storage/remote.py), so servers starting at once on a fresh store take turns; a
        commit that still conflicts (a writer without the lease) is retried. There is no ledger (it is a local
        file; Lance's conditional commits are what keeps acknowledged writes) and no foreign-entry check."""
        from chronomem.storage.remote import explain, is_panic

        last: BaseException | None = None
        for attempt in range(OPEN_ATTEMPTS):
            try:
                db, session = _connect(path)
                table = db.open_table(TABLE_NAME) if TABLE_NAME in db.list_tables().tables else None
                if table is None or _needs_upgrade(table, row_terms) or not _has_fts(table):
                    with store_lock(path, WRITE_LOCK_NAME):
                        table = cls._open_table(path, db, dim, embed_model, row_terms)
                        store = cls(path, table, dim, embed_model, read_index_rows, build_read_index, row_terms=row_terms)
                        store.ensure_indexes()
                else:
                    cls._check_schema(path, table.schema, dim)
                    store = cls(path, table, dim, embed_model, read_index_rows, build_read_index, row_terms=row_terms)
                store._session = session
                store._first_read_index()
                return store
            except StoreError:
                raise
            except Exception as exc:
                last = exc
                if not _conflict(exc):
                    raise explain(path, exc) from exc
                log.debug("opening %s conflicted with another writer (try %d)", path, attempt + 1, exc_info=True)
                time.sleep(0.1 * (attempt + 1))
            except BaseException as exc:  # a Rust panic below us (pyo3's PanicException is no Exception): one line
                if not is_panic(exc):
                    raise
                raise explain(path, exc) from exc
        assert last is not None
        raise explain(path, last) from last

    @classmethod
    def _open_table(cls, path: Any, db: Any, dim: int, embed_model: str, row_terms: RowTerms | None) -> Any:
        """The `memories` table, created if missing, migrated if older and its missing terms filled (callers hold
        the write lock)."""
        if TABLE_NAME not in db.list_tables().tables:
            return db.create_table(TABLE_NAME, schema=memories_schema(dim, embed_model), exist_ok=True)
        table = db.open_table(TABLE_NAME)
        cls._check_schema(path, table.schema, dim)
        if _needs_upgrade(table, row_terms):
            _upgrade(path, db, table, row_terms)
            table = db.open_table(TABLE_NAME)
        return table

    # ------------------------------------------------------------------ read index
    def _start_read_index(self) -> None:
        """Start building the read index in the background unless it is built, building or off.

        Searches call it after LanceDB has answered them: a starting server's first recall then does
        not share the two cores (and the GIL) with a build of several seconds."""
        with self._index_lock:
            if self._index_off or self._index_building or self._read_index is not None:
                return
            self._index_building = True
            self._index_settled.clear()
        threading.Thread(target=self._build_read_index, name="chronomem-read-index", daemon=True).start()

    def _build_read_index(self) -> None:
        try:
            source = self._rows_source
            if source.count_rows() > self.read_index_rows:
                self._index_off = True
                return
            started = time.perf_counter()
            assert self._build_index is not None  # the index is off without a builder
            index = self._build_index(source, self.dim, SCAN_LIMIT, None if self.remote else self.path)
            if source is not self._dataset:
                self.catch_up(index)  # writes committed while it was read
            self._read_index = index
            log.debug("read index built: %d rows in %.1f s", index.rows, time.perf_counter() - started)
            # The build's scratch buffers (~2x the copy at its peak) are not kept resident. A large table's copy
            # is built after LanceDB answered the first searches: let go of the index caches they filled, and
            # take the copy's objects out of the garbage collector's walks. A small table's copy is made at
            # open, before any search: neither a second connection nor a full collection is worth it there.
            from chronomem.malloc import release_free_memory, settle_heap

            if index.rows > OPEN_BUILD_ROWS:
                if self._opened is not None:  # after a quick open, LanceDB opens later, with the small cache
                    self._reopen_table(LANCE_CACHE_BEHIND_INDEX)
                settle_heap()
            else:
                release_free_memory()
        except Exception as exc:  # the index only speeds reads up: without it LanceDB answers (no retry loop)
            from chronomem.storage.doctor import is_damage

            # Damaged files are reported, with the recovery command, by the search that meets them; anything
            # else would leave every search slow without a word.
            from chronomem.storage.doctor import resource_errno

            # A full disk (its spill file) is said by the write that meets it, in one line.
            report = log.debug if is_damage(exc) else log.info if resource_errno(exc) else log.warning
            report("the read index could not be built (%s: %s); LanceDB answers searches", type(exc).__name__, exc)
            log.debug("read index build failure", exc_info=True)
            self._index_off = True
        finally:
            with self._index_lock:
                self._index_building = False
                self._index_settled.set()

    @property
    def read_index(self) -> ReadIndex | None:
        """The in-memory read index when it is built (searches use it), else None."""
        return self._read_index

    def wait_for_read_index(self, timeout: float = 60.0) -> bool:
        """Build the read index now if it is not built, and wait for it (tests, benchmarks); False if it is
        off, too big for its limit, failed, or not ready within `timeout` seconds."""
        self._start_read_index()
        self._index_settled.wait(timeout)
        return self._read_index is not None

    def _index_for_reading(self) -> ReadIndex | None:
        """The read index brought to the table's current version, or None (not built, too big, failed)."""
        if self.remote:
            self._under_lease()
        index = self._read_index
        if index is None:
            return None  # the LanceDB search that follows starts the build when it is done
        try:
            # A commit since `_version` (a `stat`), or one of ours the index missed, is read from the table; else the
            # index answers without it (after a quick open, LanceDB is not opened for reading what the index holds).
            if self._commits.moved(self._version) or index.version != self._version:
                self.catch_up(index)
        except Exception:
            log.debug("read index catch-up failed; searching LanceDB", exc_info=True)
            return None
        if index.rows > self.read_index_rows:
            self._drop_read_index()
            return None
        return index

    def answer(self, from_index: Callable[[ReadIndex], _Found | None], from_lance: Callable[[], _Found]) -> _Found:
        """A search answered by the read index brought up to date, else by LanceDB: when there is no index, it
        cannot evaluate the filter, or it failed (an unreadable spill file, say: LanceDB answers from then on).
        A LanceDB answer then starts the index's build, if there is none yet (`_start_read_index`)."""
        index = self._index_for_reading()
        if index is not None:
            try:
                found = from_index(index)
            except Exception as exc:
                log.warning(
                    "the read index failed a search (%s: %s); LanceDB answers from now on", type(exc).__name__, exc
                )
                log.debug("read index search failure", exc_info=True)
                self._drop_read_index()
                found = None
            if found is not None:
                return self._with_usage(found)
        try:
            return self._with_usage(from_lance())
        finally:
            self._start_read_index()

    def _with_usage(self, found: _Found) -> _Found:
        """`found` (records, (record, score) pairs, or tuples of those lists) with each record's usage attached."""
        latest = self.usage.latest()
        if latest:
            _attach(found, latest)
        return found

    def _after_write(self, data: Any, version: int | None) -> None:
        """Apply our own write, committed as `version`, to the read index — or, when the index was not at
        the version just before it (someone else wrote too), catch up by diff. `version` None: catch up."""
        self._now_at(version)
        if data is not None:
            self.commits_since_optimize += 1
        index = self._read_index
        if index is None:
            return
        if data is not None and index.rows + data.num_rows > self.read_index_rows:
            self._drop_read_index()
            return
        try:
            if data is not None and version is not None and index.version == version - 1:
                index.apply(data, version)
            else:
                index.catch_up(self._table, SCAN_LIMIT)
        except Exception:
            log.debug("read index update failed; the next search rebuilds it from the table", exc_info=True)
            self._read_index = None

    def _drop_read_index(self) -> None:
        """The table outgrew the read index, or it failed: LanceDB answers from now on (until the store is opened
        again)."""
        self._index_off = True
        self._read_index = None
        self._reopen_table(None)
        from chronomem.malloc import release_free_memory

        release_free_memory()

    def _reopen_table(self, index_cache_bytes: int | None) -> None:
        """Open the table again on a new LanceDB session whose index cache holds `index_cache_bytes` (None:
        LanceDB's default). The old handle's caches go with it; calls still running on it finish on it."""
        try:
            db, session = _connect(self.path, index_cache_bytes)
            self._handle, self._session = db.open_table(TABLE_NAME), session
            self._version = None
        except Exception:  # the handle in use stays: only its cache size was to change
            log.debug("reopening the table failed; keeping the open one", exc_info=True)

    @staticmethod
    def _check_schema(path: StoreLocation, schema: Any, dim: int) -> None:
        meta = schema.metadata or {}
        version = meta.get(SCHEMA_VERSION_KEY)
        if version is None:
            raise StoreError(f"{path} holds a `{TABLE_NAME}` table that chronomem did not write")
        if int(version) > SCHEMA_VERSION:
            raise StoreError(
                f"the store at {path} has schema version {int(version)}, newer than this chronomem "
                f"({SCHEMA_VERSION}): upgrade chronomem"
            )
        model, stored_dim = stored_model(schema)
        if stored_dim != dim:
            raise StoreError(
                f"the store at {path} holds {stored_dim}-d vectors from {model}; the configured model makes "
                f"{dim}-d vectors: run `chronomem reembed --store {path}` to move the store to the configured model "
                f"(or configure {model} again, or use another store)"
            )

    @property
    def schema_version(self) -> int:
        return int((self._table.schema.metadata or {}).get(SCHEMA_VERSION_KEY, b"0"))

    def ensure_indexes(self) -> None:
        """Create the full-text index on `terms` when missing (rows added later are searched flat), and drop the one
        on `content` a store of schema 1-3 had, which nothing reads (`schema.create_fts_index`: the terms as they
        are, so its tokens and BM25 scores are the read index's)."""
        names = {idx.name for idx in self._table.list_indices()}
        if OLD_FTS_INDEX in names:
            self._table.drop_index(OLD_FTS_INDEX)
        if FTS_INDEX not in names:
            create_fts_index(self._table)

    def unindexed_rows(self) -> int:
        """Rows the full-text index does not cover yet (searched flat, so slower)."""
        stats = self._table.index_stats(FTS_INDEX)
        return int(stats.num_unindexed_rows) if stats is not None else self.count()

    def optimize(self, retention: timedelta = VERSION_RETENTION) -> None:
        """Fold new rows into the indexes, compact small fragments, drop versions older than `retention`.

        Callers hold the store's write lock (`MemoryService.writing`)."""
        index = self._read_index
        table = self._table
        before = self._version
        started = time.perf_counter()
        self._guard(lambda: table.optimize(cleanup_older_than=retention))
        self._guard(lambda: self.usage.compact(retention))
        if self.remote:  # the acknowledgement record: one object per commit, folded once old (groupcommit.py)
            from chronomem.storage.groupcommit import compact_record
            from chronomem.storage.remote import objects_of

            try:
                compact_record(objects_of(self.path))  # type: ignore[arg-type]
            except Exception:  # only doctor's reading gets slower
                log.debug("the acknowledgement record was not compacted", exc_info=True)
        self.last_optimize_seconds = time.perf_counter() - started
        self.commits_since_optimize = 0
        self._now_at()
        self._acknowledge(None)
        if index is not None and index.version == before:
            # Every caller holds the write lock (service.writing), so the versions made since `before` are this
            # optimize's own: compaction and index folding, which change no row the read index holds.
            index.version = self._version

    def vector_index_rows(self) -> int | None:
        """Rows the ANN index on `vector` covers, or None when there is no such index (searches are flat)."""
        if VECTOR_INDEX_NAME not in {idx.name for idx in self._table.list_indices()}:
            return None
        stats = self._table.index_stats(VECTOR_INDEX_NAME)
        return int(stats.num_indexed_rows) if stats is not None else 0

    def build_vector_index(self) -> None:
        """(Re)train the cosine IVF_HNSW_SQ index on `vector` over every row (tens of seconds at 50k rows).

        Takes no write lock: appends committed meanwhile stay searchable (flat) until the next `optimize`.
        """
        from lancedb.index import HnswSq

        self._guard(
            lambda: self._table.create_index(
                "vector", config=HnswSq(distance_type="cosine"), replace=True, name=VECTOR_INDEX_NAME
            )
        )
        self._after_write(None, None)  # written without the lock: others may have committed too, so catch up by diff
        self._acknowledge(None)

    # ------------------------------------------------------------------ writing
    def _arrow(self, records: Sequence[MemoryRecord]) -> Any:
        import pyarrow as pa

        schema = memories_schema(self.dim, self.embed_model)
        rows = [r.to_row() for r in records]
        return self._with_terms(pa.Table.from_pylist(rows, schema=schema))

    def _with_terms(self, data: Any) -> Any:
        """`data` (rows to write) with every row's terms; refused when some would have none (this store was opened
        without the search component's `row_terms`: LanceDB's full-text index could not find them)."""
        data = with_terms(data, self.row_terms)
        if data.column(TERMS_COLUMN).null_count:
            raise StoreError(
                "this store was opened without a tokenizer for the rows' terms (search.engine.open_store hands it "
                "one): new rows cannot be written"
            )
        return data

    def add(self, records: Sequence[MemoryRecord]) -> None:
        """Append new rows in one commit (on a shared store, a small append that is its write's first step may be
        committed together with other writers' waiting ones: storage/groupcommit.py)."""
        if records:
            data = self._arrow(records)
            if self.remote and self._append_grouped(data):
                return
            self._commit(data, lambda: self._table.add(data))

    def _append_grouped(self, data: Any) -> bool:
        """Commit `data` through the shared store's group commit when the calling thread holds the write lock without
        its lease yet (nothing read under it) and the rows are few; False: commit it directly."""
        from chronomem.storage.groupcommit import can_group, held_write_lock

        lock = held_write_lock(self.path)
        if lock is None or lock.leased or not can_group(data):
            return False
        if lock.append(self, data) is None:  # committed by another writer: our handle catches up at its next read
            self.commits_since_optimize += 1
        return True

    def commit_rows(self, data: Any, acknowledged: Sequence[str]) -> int:
        """Append prepared rows (`write_schema`, terms made) in one commit under the write lease, read them back, and
        record `acknowledged` (those of their ids whose acknowledgement is this commit's) — for the group commit."""
        version = int(self._guard(lambda: self._table.add(data)).version)
        self._after_write(data, version)
        self._acknowledge(data, version, acknowledged)
        return version

    def current_version(self) -> int:
        """The table's newest version."""
        return int(self._table.version)

    def write_schema(self) -> Any:
        """The Arrow schema rows are written in."""
        return memories_schema(self.dim, self.embed_model)

    def add_arrow(self, table: Any) -> None:
        """Append a prepared Arrow table (the table's columns, vectors as fixed-size lists) in one commit.

        For bulk loads of many rows, which `add` would first turn into Python objects; the
        table is cast to the store's schema, so a column of the wrong type fails here.
        """
        if table.num_rows:
            import pyarrow as pa

            schema = memories_schema(self.dim, self.embed_model)
            for name in schema.names:  # columns a bulk load may leave out (anchors, conflicts): empty
                if name not in table.column_names:
                    table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
            data = self._with_terms(table.select(schema.names).cast(schema))
            self._commit(data, lambda: self._table.add(data))

    def upsert(self, records: Sequence[MemoryRecord]) -> None:
        """Insert new rows and close the validity of stored ones (by id) in one atomic commit.

        A record whose id is stored may differ from the stored row only in `VALIDITY_COLUMNS`; any other
        difference raises StoreError and nothing is written (rows are written once). For a stored row only
        those columns are taken from the record: the rest, vector included, is the table's own."""
        if not records:
            return
        import pyarrow as pa

        schema = memories_schema(self.dim, self.embed_model)
        stored = self._stored_rows([r.id for r in records])
        rows = []
        for record in records:
            row = record.to_row()
            old = stored.get(record.id)
            if old is not None:
                changed = changed_columns(old, row)
                if changed:
                    raise StoreError(
                        f"refused to rewrite memory {record.id}: a stored row's {', '.join(changed)} never changes "
                        f"(only {', '.join(VALIDITY_COLUMNS)} are set after it is written)"
                    )
                row = {**old, **{name: row[name] for name in VALIDITY_COLUMNS}}
            rows.append(row)
        data = self._with_terms(pa.Table.from_pylist(rows, schema=schema))
        merge = self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        self._commit(data, lambda: merge.execute(data))

    def _stored_rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored rows (every column, from the table itself) of those of `ids` that exist."""
        return {row["id"]: row for row in _rows_by_id(self._table, ids)}

    # ------------------------------------------------------------------ acknowledging
    def _guard(self, write: Callable[[], _Found]) -> _Found:
        """Run a write (after the fence: a lapsed lease refuses it); a full disk, a quota, a read-only or forbidden
        store becomes its one-line StoreError."""
        if self.remote:
            self._under_lease()
        self.fence()
        try:
            return write()
        except Exception as exc:
            known = resource_error(self.path, exc) or self._moved()
            if known is not None:
                raise known from exc
            raise

    def _moved(self) -> StoreError | None:
        """The error for a write that failed because `chronomem reembed` moved the store to vectors of another
        dimension while this process had it open (None when the table's vectors still fit this process's)."""
        try:
            model, dim = stored_model(self._handle.schema)
        except Exception:
            return None
        if dim == self.dim:
            return None
        return StoreError(
            f"the store at {self.path} now holds {dim}-d vectors from {model} (`chronomem reembed` moved it); this "
            f"process embeds {self.dim}-d vectors: restart it with {model} configured"
        )

    def _commit(self, data: Any, write: Callable[[], Any]) -> None:
        """Commit `data` (`write` returns LanceDB's result, with the version), read it back, acknowledge it.

        On a shared store, a commit that landed can still fail a request after it (its read back, its
        acknowledgement's PUT: a 503 storm, a timeout, a reset). Refusing then would tell the caller a write failed
        that is stored, and a caller that retries would store it twice; so its rows are looked up at the table's
        newest version and, all there, acknowledged again (once more: a second failure is said as before). The group
        commit's folds do the same (storage/groupcommit.py, `_commit`)."""
        version = int(self._guard(write).version)
        self._after_write(data, version)
        try:
            self._acknowledge(data, version)
        except StoreError as error:
            ids = [] if data is None else data.column("id").to_pylist()
            if not self.remote or not ids or not self._landed(ids):
                raise
            log.warning("a commit's answer was lost after it landed (%s); its rows are there: acknowledged again", error)
            self._record_remote_ack(version, ids)

    def _landed(self, ids: Sequence[str]) -> bool:
        """Whether every one of `ids` is in the table at its newest version (False when that cannot be read)."""
        try:
            return set(ids) <= self.ids_at_newest(ids)
        except Exception:  # noqa: BLE001  (the caller raises its own error, which says what failed first)
            log.debug("looking up a commit's rows failed", exc_info=True)
            return False

    def _acknowledge(self, data: Any, version: int | None = None, acknowledged: Sequence[str] | None = None) -> None:
        """Read our rows back from the committed version, then record it in the ledger (storage/ledger.py).

        The rows a commit writes are the table's last ones at that version (an append's fragments, and a
        merge's rewritten and new rows, go after every existing fragment): one `take` of those offsets reads
        just the new fragment, and the row count comes from the manifest. Should they not be there (a
        commit by another process landing after ours), a filtered count by id decides. A write that does not
        read back raises instead of returning: the caller gets no id for it. `version` None: the handle's."""
        handle = self._handle  # at the version this process just committed
        version = int(handle.version) if version is None else version
        ids: list[str] = [] if data is None else data.column("id").to_pylist()
        try:
            total = self._read_back(handle, version, ids)
        except StoreError:
            raise
        except Exception as exc:
            known = resource_error(self.path, exc, "read")
            raise known or StoreError(
                f"a write committed as version {version} of the store at {self.path} does not read back "
                f"({error_line(exc)}): it is not acknowledged; {recovery_hint(self.path)}"
            ) from exc
        if self.remote:  # no local ledger: an acknowledgement object in the bucket, that `doctor` checks
            record = ids if acknowledged is None else list(acknowledged)
            if record:
                self._record_remote_ack(version, record)
            return
        try:
            ledger.acknowledge(self.path, version, total, ids)
        except OSError as exc:
            raise resource_error(self.path, exc) or StoreError(
                f"version {version} of the store at {self.path} is committed but its acknowledgement could not be "
                f"recorded ({exc.strerror or exc})"
            ) from exc

    def _record_remote_ack(self, version: int, ids: Sequence[str]) -> None:
        from chronomem.storage.groupcommit import new_stem, record_ack
        from chronomem.storage.remote import explain, objects_of

        if self._objects is None:
            self._objects = objects_of(self.path)  # type: ignore[arg-type]
        try:
            record_ack(self._objects, new_stem(), version, ids, "direct")
        except Exception as exc:
            raise StoreError(
                f"version {version} of the store at {self.path} is committed but its acknowledgement could not be "
                f"recorded ({explain(self.path, exc)})"
            ) from exc

    def _read_back(self, handle: Any, version: int, ids: Sequence[str]) -> int:
        """The row count of `version`, having checked that it holds `ids` (StoreError when it does not).

        Read through pylance at that version: the manifest's count and a `take` of the last rows, ~2-3 ms at
        100k rows where LanceDB's own `count_rows` and `take_offsets` took ~8 (eval/results/latency_ab.md).
        The dataset is kept and moved to each newly committed version (only its manifest is read)."""
        committed = self._committed if self._committed is not None else handle.to_lance()
        if committed.version != version:
            committed = committed.checkout_version(version)
        self._committed = committed
        total = int(committed.count_rows())
        if ids:
            tail = committed.take(list(range(max(total - len(ids), 0), total)), columns=["id"])
            if sorted(tail.column("id").to_pylist()) != sorted(ids) and (
                int(committed.count_rows(filter=Filter().ids(sorted(set(ids))).sql())) < len(set(ids))
            ):
                raise StoreError(
                    f"a write committed as version {version} of the store at {self.path} does not hold its "
                    f"rows when read back: it is not acknowledged; {recovery_hint(self.path)}"
                )
        return total

    # ------------------------------------------------------------------ bi-temporal changes
    @staticmethod
    def revision(record: MemoryRecord, *, invalid_at: datetime, now: datetime, reason: str) -> MemoryRecord:
        """The row that restates `record` with its validity closed at `invalid_at`."""
        return record.copy(
            id=new_id(now),
            invalid_at=invalid_at,
            created_at=now,
            expired_at=None,
            revision_of=record.id,
            reason=reason,
        )

    @staticmethod
    def expired(record: MemoryRecord, *, now: datetime, reason: str) -> MemoryRecord:
        """`record` as stored (without its usage view) with its transaction time closed."""
        return record.raw().copy(expired_at=now, reason=reason)

    # ------------------------------------------------------------------ reading
    def _rows(self, query: Any) -> list[MemoryRecord]:
        return [MemoryRecord.from_row(row) for row in query.to_list()]

    def get(self, memory_id: str) -> MemoryRecord | None:
        rows = self.find(Filter().ids([memory_id]), limit=1)
        return rows[0] if rows else None

    def find(self, flt: Filter, limit: int = SCAN_LIMIT, with_vectors: bool = False) -> list[MemoryRecord]:
        return self.answer(
            lambda index: index.find(flt, limit, with_vectors), lambda: self._lance_find(flt, limit, with_vectors)
        )

    def _lance_find(self, flt: Filter, limit: int, with_vectors: bool) -> list[MemoryRecord]:
        query = self._table.search().limit(limit)
        sql = flt.sql()
        if sql:
            query = query.where(sql)
        if not with_vectors:
            query = query.select(RESULT_COLUMNS)
        return self._rows(query)

    def count(self, flt: Filter | None = None) -> int:
        sql = flt.sql() if flt else None
        return int(self._table.count_rows(sql) if sql else self._table.count_rows())

    def projects(self) -> dict[str, int]:
        """Row counts per project (the read index's, when it is up to date)."""
        index = self._index_for_reading()
        if index is not None:
            return index.project_counts()
        table = self._table.search().select(["project"]).limit(SCAN_LIMIT).to_arrow()
        counts: dict[str, int] = {}
        for name in table.column("project").to_pylist():
            counts[name] = counts.get(name, 0) + 1
        return counts

    def project_stats(self, now: datetime) -> dict[str, dict[str, Any]]:
        """Per project: `rows` (every row, history included), `live_chunks` and `live_facts` (valid and
        not expired at `now`), and `newest` (the latest `created_at`) — one scan of six short columns."""
        import pyarrow as pa
        import pyarrow.compute as pc

        columns = ["project", "kind", "valid_at", "invalid_at", "created_at", "expired_at"]
        table = self._table.search().select(columns).limit(SCAN_LIMIT).to_arrow()
        if table.num_rows == 0:
            return {}
        t = pa.scalar(now.astimezone(UTC), type=table.schema.field("valid_at").type)

        def open_after(column: str) -> Any:  # NULL (still open) or later than now
            col = table.column(column)
            return pc.or_kleene(pc.is_null(col), pc.greater(col, t))

        live = pc.and_(
            pc.and_(pc.less_equal(table.column("valid_at"), t), pc.less_equal(table.column("created_at"), t)),
            pc.and_(open_after("invalid_at"), open_after("expired_at")),
        )
        kind = table.column("kind")
        grouped = (
            pa.table(
                {
                    "project": table.column("project"),
                    "chunk": pc.cast(pc.and_(live, pc.equal(kind, "chunk")), pa.int64()),
                    "fact": pc.cast(pc.and_(live, pc.equal(kind, "fact")), pa.int64()),
                    "created_at": table.column("created_at"),
                }
            )
            .group_by("project")
            .aggregate([("chunk", "sum"), ("fact", "sum"), ("project", "count"), ("created_at", "max")])
            .to_pylist()
        )
        return {
            row["project"]: {
                "rows": int(row["project_count"]),
                "live_chunks": int(row["chunk_sum"] or 0),
                "live_facts": int(row["fact_sum"] or 0),
                "newest": row["created_at_max"].astimezone(UTC) if row["created_at_max"] else None,
            }
            for row in grouped
        }

    def keys(self, flt: Filter) -> list[tuple[str, datetime]]:
        """(id, created_at) of the rows passing `flt`: a cheap scan that reads neither text nor vectors."""
        query = self._table.search().select(["id", "created_at"]).limit(SCAN_LIMIT)
        sql = flt.sql()
        if sql:
            query = query.where(sql)
        table = query.to_arrow()
        times = [t.astimezone(UTC) for t in table.column("created_at").to_pylist()]
        return list(zip(table.column("id").to_pylist(), times, strict=True))

    def columns(self, flt: Filter, names: Sequence[str], limit: int = SCAN_LIMIT) -> list[dict[str, Any]]:
        """Only the `names` columns of the rows passing `flt`, as dicts (times in UTC): a scan that skips the rest."""
        query = self._table.search().select(list(names)).limit(limit)
        sql = flt.sql()
        if sql:
            query = query.where(sql)
        rows = query.to_arrow().to_pylist()
        for row in rows:
            for key, value in row.items():
                if isinstance(value, datetime):
                    row[key] = value.astimezone(UTC)
        return rows

    def slot_keys(self, flt: Filter) -> set[tuple[str, str]]:
        """Distinct (subject, predicate) of the facts passing `flt`: the read index's when it is up to date, else a
        scan of two short columns (on a shared store ~0.5 s a time once a few hundred commits are in: issue 48)."""
        index = self._index_for_reading()
        if index is not None:
            keys = index.slot_keys(flt)
            if keys is not None:
                return keys
        query = self._table.search().select(["subject", "predicate"]).limit(SCAN_LIMIT)
        sql = flt.sql()
        if sql:
            query = query.where(sql)
        table = query.to_arrow()
        pairs = zip(table.column("subject").to_pylist(), table.column("predicate").to_pylist(), strict=True)
        return {(s, p) for s, p in pairs if s is not None and p is not None}

    def ids_exist(self, ids: Iterable[str]) -> set[str]:
        wanted = list(ids)
        if not wanted:
            return set()
        return {r.id for r in self.find(Filter().ids(wanted), limit=len(wanted))}

    def ids_at_newest(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` in the table at its newest version, read from LanceDB itself (the handle moved to the
        newest manifest first; not the read index): after a commit that failed without saying whether it landed
        (storage/groupcommit.py)."""
        wanted = set(ids)
        if not wanted:
            return set()
        if self.remote:
            self._under_lease()
        handle = self._handle
        handle.checkout_latest()
        self._version = int(handle.version)
        return {row["id"] for row in _rows_by_id(handle, wanted, ["id"])}


def _rows_by_id(table: Any, ids: Iterable[str], columns: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of `table` (those `columns`, else every one) whose id is among `ids`, read 500 ids a query."""
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), 500):
        part = wanted[start : start + 500]
        query = table.search().where(Filter().ids(part).sql())
        if columns is not None:
            query = query.select(columns)
        yield from query.limit(len(part)).to_arrow().to_pylist()


def changed_columns(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The columns besides validity (and the vector, which a write never takes from a record) in which row
    `new` differs from stored row `old`, both compared as records read them."""
    a = MemoryRecord.from_row(old).to_row()
    b = MemoryRecord.from_row(new).to_row()
    skip = {*VALIDITY_COLUMNS, "vector"}
    return [name for name in a if name not in skip and a[name] != b[name]]


def _attach(found: Any, latest: dict[str, Any]) -> None:
    if isinstance(found, MemoryRecord):
        usage = latest.get(found.id)
        if usage is not None:
            found.with_usage(usage)
    elif isinstance(found, (list, tuple)):
        for item in found:
            _attach(item, latest)


def _never_committed(path: StoreLocation) -> bool:
    """True for a local store whose table folder exists but holds no committed version (a creation cut short)."""
    if is_remote(path):
        return False
    folder = Path(path) / f"{TABLE_NAME}.lance"
    versions = folder / "_versions"
    return folder.is_dir() and not (versions.is_dir() and any(versions.iterdir()))


def _connect(path: StoreLocation, index_cache_bytes: int | None = None) -> tuple[Any, Any]:
    """A LanceDB connection to the store (a directory, or a URI with its storage options) and its session (whose
    caches it fills); `index_cache_bytes` None is LanceDB's default index cache."""
    import lancedb

    if index_cache_bytes is None:
        session = lancedb.Session()
    else:
        session = lancedb.Session(index_cache_size_bytes=index_cache_bytes)
    # Other processes (another client's server, the CLI) write the same store: `MemoryStore._table` checks
    # for a newer table version before every use (a `stat` or two) and reloads, so LanceDB's own check is off.
    options = path.storage_options() if is_remote(path) else None  # type: ignore[union-attr]
    return lancedb.connect(
        str(path), read_consistency_interval=None, session=session, storage_options=options or None
    ), session


def _check_ledger(path: Path, version: int, rows: int) -> None:
    """No silent rollback: the table must hold at least what was acknowledged (one small read, one compare)."""
    lost = ledger.regression(path, version, rows)
    if lost is not None:
        raise StoreError(f"the store at {path} has lost acknowledged writes: {lost}; {recovery_hint(path)}")


class _Unwritten:
    """The table of a new store before its first write, as a read index's build reads it (`_open_quick`)."""

    version = 0

    def __init__(self, dim: int, embed_model: str) -> None:
        self.schema = memories_schema(dim, embed_model)

    def count_rows(self) -> int:
        return 0

    def to_batches(self, **_: Any) -> Iterator[Any]:
        return iter(())


def _has_fts(table: Any) -> bool:
    names = {idx.name for idx in table.list_indices()}
    return FTS_INDEX in names and OLD_FTS_INDEX not in names


def _needs_upgrade(table: Any, row_terms: RowTerms | None) -> bool:
    """Whether opening `table` must migrate it (an older schema), or can fill terms rows lack (with `row_terms`;
    the table's metadata says so: no scan)."""
    return schema_version(table.schema) < SCHEMA_VERSION or (row_terms is not None and terms_pending(table.schema))


def _upgrade(path: Any, db: Any, table: Any, row_terms: RowTerms | None) -> None:
    """Migrate `table` if it is older, else fill the terms its rows lack (callers hold the write lock; each is
    checked again under it: another process may have done it meanwhile)."""
    from chronomem.storage.migrate import fill_terms, migrate

    if schema_version(table.schema) < SCHEMA_VERSION:
        migrate(path, db, table, row_terms)
    elif row_terms is not None and terms_pending(table.schema):
        fill_terms(path, db, table, row_terms)


def _conflict(exc: BaseException) -> bool:
    """Whether `exc` is a commit that lost a race with another writer's (worth retrying)."""
    text = str(exc).lower()
    return any(word in text for word in ("conflict", "concurrent", "already exists", "retryable", "precondition"))


def _uses_v2_names(table: Any) -> bool:
    """Whether the table names its manifests in LanceDB's V2 layout (what it creates now); True if it cannot say."""
    try:
        return bool(table.uses_v2_manifest_paths())
    except Exception:  # an older LanceDB without the call writes the layout it reads
        return True


def _no_fence() -> None:
    """The fence of a store whose writers need none (a local one: its write lock is a file lock, no lease)."""
