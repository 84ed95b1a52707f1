"""Read index snapshots: the in-memory read index (readindex.py) saved beside a local store's table, so a reopened
store answers from its copy at once instead of searching LanceDB for the seconds a build takes (~3.6 s at 100k
rows, ~43 s at 1M).

This module owns the snapshot file (`.read-index.snapshot` in the store directory), its format, when it is written
and whether one is trusted. The table stays the store of record: a snapshot is only a cache of it.

- Written off the call path by one background thread (`Keeper`): after a full build, then when
  `EVERY_ROWS` rows were added since the last one (at most every `MIN_INTERVAL` seconds), after `IDLE_INTERVAL`
  seconds for any other change, and at a clean exit when the copy moved since. Atomically: a temporary name in
  the store directory, fsync, rename, fsync of the directory; a crash leaves at most a temporary file, never a
  half snapshot under the trusted name (leftover temporary files are removed by the next write).
- Its format: the sections (each array's bytes, the result columns as an Arrow IPC file) one after another,
  64-byte aligned, then a JSON footer naming each section's offset, type, shape and CRC-32, then the footer's
  length, its own CRC-32 and an end marker. A section up to `FULL_CHECK_BYTES` is checked whole; a larger one
  (the vectors, the codes, the postings, the Arrow file) by `CHECK_BLOCKS` blocks spread over it, and Arrow
  checks its own file's structure. The arrays that grow are written with free capacity after their rows.
- Loaded as arrays over a copy-on-write memory map of the file: little is read at open, and the pages searches
  read stay the page cache's (shared, reclaimable; counted in RSS as mapped file pages, not as the process's own)
  until written. A store that has a snapshot is opened through pylance at any size (storage `quick_at_any_size`):
  LanceDB is imported at the first write or catch-up, not before the first recall.
- Trusted only for the table it was taken of: same vector dimension, same table metadata (schema version and
  embedding model: a re-embedded table is another table), the same result columns, a version no newer than the
  table's (and, while the table still lists that version, the same commit time), and no more rows than the table
  holds. The read index then catches up from the snapshot's version by its diff (`ReadIndex.catch_up`), as it
  catches up any other process's writes. A snapshot that is missing, of another format, damaged or of another
  table is ignored with one log line (the file, if any, removed), and the index is built from the table as without
  snapshots.
- Only for local stores (a store in object storage keeps building its copy from the table), and off when
  `CHRONOMEM_READ_INDEX_SNAPSHOT=0` (neither read nor written; for measuring, or to save the disk).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import mmap
import os
import struct
import threading
import time
import weakref
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.search.densematrix import DenseMatrix, RowFile
from chronomem.search.readindex import _FLAG_ARRAYS, _TIMES, ReadIndex, _Postings, merged_postings, result_table
from chronomem.storage.schema import TABLE_NAME

log = logging.getLogger(__name__)

#: The snapshot's name in the store directory (a dot name: the store's own, see storage/doctor.py OWN_PREFIXES).
SNAPSHOT_NAME = ".read-index.snapshot"
#: Format of the file; a snapshot of another one is ignored (and replaced by the next write).
FORMAT = 1
_MAGIC = b"CMRIDX01"
_END = b"CMRIEND1"
_TAIL = struct.Struct("<QI8s")  # footer length, footer CRC-32, end marker
_ALIGN = 64
#: Sections up to this size are checked whole at load (CRC-32 runs at ~0.5 GB/s here: all of a 100k store's
#: ~280 MB would cost a loaded open ~0.5 s); larger ones by blocks.
FULL_CHECK_BYTES = 4 * 2**20
CHECK_BLOCKS = 64
CHECK_BLOCK_BYTES = 4096
#: Tables below this many rows get no snapshot: their copy is built at open in ~0.1 s (storage OPEN_BUILD_ROWS).
MIN_ROWS = 2_000
#: A new snapshot once this many rows were added since the last, at most every MIN_INTERVAL seconds.
EVERY_ROWS = 1_000
MIN_INTERVAL = 60.0
#: Any other change (validity set, another process's rows) is saved after this long.
IDLE_INTERVAL = 300.0
#: How often the keeper's thread looks.
TICK_SECONDS = 10.0
#: The section of the float32 rows (read with `pread`, never through the map).
VECTORS = "dense.vectors"
#: Free capacity written after the rows of the arrays that grow (so the first writes after a load do not copy them).
SLACK_FRACTION = 8
SLACK_MIN = 1_024
#: float32 rows read from the index per block while writing.
WRITE_BLOCK_ROWS = 8_192
#: Leftover temporary files older than this are removed by the next write.
STALE_TEMP_SECONDS = 3600.0


class SnapshotRejected(Exception):
    """Why a snapshot is not used (said in the one log line)."""

    def __init__(self, reason: str, level: int = logging.WARNING) -> None:
        super().__init__(reason)
        self.level = level


def snapshot_path(directory: Path) -> Path:
    return Path(directory) / SNAPSHOT_NAME


# ---------------------------------------------------------------------------- the table's identity
def _table_meta(metadata: dict[bytes, bytes] | None) -> str:
    """A digest of the table's schema metadata (schema version, embedding model): another one is another table."""
    items = sorted((bytes(k), bytes(v)) for k, v in (metadata or {}).items())
    return hashlib.sha256(repr(items).encode()).hexdigest()


def version_stamp(directory: Path, version: int) -> str | None:
    """When `version` of the store's table was committed (ISO), or None when the table no longer lists it."""
    import lance

    uri = str(Path(directory) / f"{TABLE_NAME}.lance")
    try:  # one manifest read; listing every version (`versions()`) took 0.9 s on a store of 2,000 commits
        return str(lance.dataset(uri, version=version).get_version()["timestamp"].isoformat())
    except ValueError:  # the version is gone (cleaned up), or did not read: the listing decides
        pass
    for entry in lance.dataset(uri).versions():
        if int(entry["version"]) == version:
            return str(entry["timestamp"].isoformat())
    return None


# ---------------------------------------------------------------------------- writing
def _section_crc(data: memoryview | _FileSpan) -> int:
    """CRC-32 of a section: whole up to FULL_CHECK_BYTES, else of CHECK_BLOCKS blocks spread over it and its end."""
    size = len(data)
    if size <= FULL_CHECK_BYTES:
        return zlib.crc32(data[0:size])
    crc = 0
    step = (size - CHECK_BLOCK_BYTES) // CHECK_BLOCKS
    for i in range(CHECK_BLOCKS):
        start = i * step
        crc = zlib.crc32(data[start : start + CHECK_BLOCK_BYTES], crc)
    return zlib.crc32(data[size - CHECK_BLOCK_BYTES :], crc)


class _FileSpan:
    """`nbytes` of an open file from `start`, sliced like a memoryview but read with `pread`: checking a section this
    way maps none of it into the process (densematrix.py: the kernel maps a file in large folios)."""

    def __init__(self, handle: Any, start: int, nbytes: int) -> None:
        self._fd, self._start, self._nbytes = handle.fileno(), start, nbytes

    def __len__(self) -> int:
        return self._nbytes

    def __getitem__(self, part: slice) -> bytes:
        first, end, _ = part.indices(self._nbytes)
        return os.pread(self._fd, max(end - first, 0), self._start + first)


class _Writer:
    """Sections appended to an open file, each 64-byte aligned, with what the footer says of them."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.offset = 0
        self.sections: dict[str, dict[str, Any]] = {}

    def raw(self, data: bytes | memoryview) -> None:
        view = memoryview(data).cast("B")
        self.handle.write(view)
        self.offset += len(view)

    def _align(self) -> None:
        pad = -self.offset % _ALIGN
        if pad:
            self.raw(b"\0" * pad)

    def array(self, name: str, values: np.ndarray, capacity: int | None = None) -> None:
        """`values` as a section; with `capacity`, zero rows after them up to that many rows."""
        self._align()
        values = np.ascontiguousarray(values)
        rows = capacity if capacity is not None else len(values)
        shape = [rows, *values.shape[1:]]
        padded = values
        if rows > len(values):
            padded = np.zeros(shape, dtype=values.dtype)
            padded[: len(values)] = values
        data = memoryview(padded).cast("B")
        self.sections[name] = {
            "offset": self.offset, "nbytes": len(data), "dtype": values.dtype.str, "shape": shape, "crc": _section_crc(data)
        }
        self.raw(data)

    def blob(self, name: str, data: bytes | memoryview) -> None:
        self._align()
        view = memoryview(data).cast("B")
        self.sections[name] = {"offset": self.offset, "nbytes": len(view), "dtype": "blob", "shape": [len(view)], "crc": _section_crc(view)}
        self.raw(view)

    def vectors(self, name: str, dense: DenseMatrix, n: int, dim: int) -> None:
        """The float32 rows 0 … n-1, read from the matrix a block at a time (the CRC over the same blocks)."""
        self._align()
        start = self.offset
        for first in range(0, n, WRITE_BLOCK_ROWS):
            block = dense.rows(np.arange(first, min(first + WRITE_BLOCK_ROWS, n)))
            self.raw(memoryview(np.ascontiguousarray(block, dtype=np.float32)).cast("B"))
        nbytes = self.offset - start
        self.handle.flush()
        crc = _section_crc(_FileSpan(self.handle, start, nbytes))  # of what was written (read from the page cache)
        self.sections[name] = {"offset": start, "nbytes": nbytes, "dtype": "<f4", "shape": [n, dim], "crc": crc}


def write(index: ReadIndex, directory: Path) -> Path:
    """Save `index` as the store's snapshot (atomically; see the module docstring). The lock is held only while
    its state is taken (`ReadIndex.state`); the file is written outside it. Raises OSError on a disk error."""
    import pyarrow as pa

    directory = Path(directory)
    state = index.state()
    n, dim, version = state["n"], state["dim"], state["version"]
    capacity = n + max(SLACK_MIN, n // SLACK_FRACTION)
    stamp = version_stamp(directory, version)
    ptr, rows, tfs = merged_postings(state["postings"])
    payload = result_table(state)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, payload.schema) as arrow:
        arrow.write_table(payload)
    arrow_bytes = sink.getvalue()
    dense = state["dense"]
    _remove_stale_temps(directory)
    temp = directory / f"{SNAPSHOT_NAME}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with open(temp, "w+b") as handle:  # read back too: the vectors' checksum (_Writer.vectors)
            out = _Writer(handle)
            out.raw(_MAGIC)
            for name in _TIMES:
                out.array(f"times.{name}", state["times"][name], capacity)
            for name in _FLAG_ARRAYS:
                out.array(f"flags.{name}", state["flags"][name], capacity)
            out.blob("ids", "\n".join(state["ids"]).encode())
            out.blob("terms", "\n".join(state["postings"]["terms"]).encode())
            out.array("postings.ptr", ptr)
            out.array("postings.rows", rows)
            out.array("postings.tfs", tfs)
            out.array("postings.df", state["postings"]["df"])
            out.array("dense.codes", dense["codes"][:n], capacity)
            out.array("dense.scales", dense["scales"][:n], capacity)
            if dense["axes"] is not None:
                out.array("dense.axes", dense["axes"])
                out.array("dense.projected", dense["projected"][:n], capacity)
                out.array("dense.projected_scales", dense["projected_scales"][:n], capacity)
            out.vectors(VECTORS, dense["matrix"], n, dim)
            out.blob("arrow", memoryview(arrow_bytes))  # pyarrow's buffer as it is: no copy
            footer = json.dumps(
                {
                    "format": FORMAT,
                    "table_version": version,
                    "version_stamp": stamp,
                    "table_meta": _table_meta(state["table_metadata"]),
                    "n": n,
                    "capacity": capacity,
                    "dim": dim,
                    "length_sum": state["length_sum"],
                    "documents": state["documents"],
                    "codes": state["codes"],
                    "fitted_at": dense["fitted_at"],
                    "sections": out.sections,
                }
            ).encode()
            out.raw(footer)
            out.raw(_TAIL.pack(len(footer), zlib.crc32(footer), _END))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, snapshot_path(directory))
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync_directory(directory)
    return snapshot_path(directory)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # no directory handles here (Windows): the rename is as durable as the system makes it
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temps(directory: Path) -> None:
    """Temporary files a killed writer left (never trusted: only the final name is read)."""
    now = time.time()
    for temp in directory.glob(f"{SNAPSHOT_NAME}.tmp-*"):
        try:
            if now - temp.stat().st_mtime > STALE_TEMP_SECONDS:
                temp.unlink()
        except OSError:
            pass


def discard(directory: Path) -> None:
    """Remove the store's snapshot (a purge: the snapshot holds the rows' text too)."""
    try:
        snapshot_path(directory).unlink(missing_ok=True)
    except OSError as exc:
        log.debug("could not remove the read index snapshot in %s: %s", directory, exc)


# ---------------------------------------------------------------------------- loading
def _footer(mapped: Any) -> dict[str, Any]:
    size = len(mapped)
    if size < len(_MAGIC) + _TAIL.size or bytes(mapped[: len(_MAGIC)]) != _MAGIC:
        raise SnapshotRejected("not a read index snapshot of this format" if size else "it is empty")
    length, crc, end = _TAIL.unpack(bytes(mapped[size - _TAIL.size :]))
    if end != _END or length > size - _TAIL.size - len(_MAGIC):
        raise SnapshotRejected("it is truncated or damaged (no end marker)")
    footer = bytes(mapped[size - _TAIL.size - length : size - _TAIL.size])
    if zlib.crc32(footer) != crc:
        raise SnapshotRejected("its footer is damaged (checksum)")
    meta: dict[str, Any] = json.loads(footer)
    if meta.get("format") != FORMAT:
        raise SnapshotRejected(f"it is of format {meta.get('format')}, this chronomem reads {FORMAT}", logging.INFO)
    end_of_data = size - _TAIL.size - length
    for name, section in meta["sections"].items():
        if section["offset"] + section["nbytes"] > end_of_data:
            raise SnapshotRejected(f"its section {name} runs past the data (truncated)")
    return meta


def _check_crc(meta: dict[str, Any], name: str, data: memoryview | _FileSpan) -> None:
    """Refuse the snapshot when section `name`'s bytes (`data`: mapped, or read through the file) fail its CRC-32."""
    if _section_crc(data) != meta["sections"][name]["crc"]:
        raise SnapshotRejected(f"its section {name} is damaged (checksum)")


def _section(mapped: Any, view: memoryview, meta: dict[str, Any], name: str) -> np.ndarray:
    section = meta["sections"][name]
    start, nbytes = section["offset"], section["nbytes"]
    _check_crc(meta, name, view[start : start + nbytes])
    if section["dtype"] == "blob":
        return np.frombuffer(mapped, dtype=np.uint8, count=nbytes, offset=start)
    dtype = np.dtype(section["dtype"])
    count = int(np.prod(section["shape"])) if section["shape"] else 1
    if count * dtype.itemsize != nbytes:
        raise SnapshotRejected(f"its section {name} has the wrong size")
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=start).reshape(section["shape"])


def load(directory: Path, source: Any, dim: int, spill_dir: Path | None) -> ReadIndex | None:
    """The read index from the store's snapshot, at the snapshot's table version (the caller catches it up), or
    None — with one log line saying why, the file then removed — when there is none or it cannot be trusted for
    `source` (the LanceDB table or pylance dataset the index is of)."""
    path = snapshot_path(directory)
    if not path.exists():
        log.info("no read index snapshot in %s: the read index is built from the table", directory)
        return None
    started = time.perf_counter()
    try:
        index = _load(path, directory, source, dim, spill_dir)
    except SnapshotRejected as exc:
        log.log(exc.level, "the read index snapshot %s is ignored (%s); the read index is built from the table", path, exc)
        discard(directory)
        return None
    except Exception as exc:  # damage we did not foresee: still one line, and the table answers
        log.warning(
            "the read index snapshot %s is ignored (%s: %s); the read index is built from the table", path, type(exc).__name__, exc
        )
        log.debug("snapshot load failure", exc_info=True)
        discard(directory)
        return None
    log.debug("read index loaded from %s: %d rows at version %d in %.2f s", path, index.rows, index.version, time.perf_counter() - started)
    return index


def _load(path: Path, directory: Path, source: Any, dim: int, spill_dir: Path | None) -> ReadIndex:
    handle = open(path, "rb")  # noqa: SIM115 - kept open by the vectors' RowFile, closed here otherwise
    try:
        return _load_mapped(handle, directory, source, dim, spill_dir)
    except BaseException:
        handle.close()
        raise


def _load_mapped(handle: Any, directory: Path, source: Any, dim: int, spill_dir: Path | None) -> ReadIndex:
    import pyarrow as pa

    try:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
    except ValueError as exc:  # an empty file cannot be mapped
        raise SnapshotRejected("it is empty") from exc
    meta = _footer(mapped)
    version, n = int(meta["table_version"]), int(meta["n"])
    if meta["dim"] != dim:
        raise SnapshotRejected(f"it holds {meta['dim']}-d vectors, the store {dim}-d")
    if meta["table_meta"] != _table_meta(source.schema.metadata):
        raise SnapshotRejected("it is of another table (schema version or embedding model differ)")
    current = int(source.version)
    if version > current:
        raise SnapshotRejected(f"it is of table version {version}, newer than the table's {current}")
    stamp = version_stamp(directory, version)
    if stamp is not None and stamp != meta["version_stamp"]:
        raise SnapshotRejected(f"the table's version {version} is not the one it was taken of")
    if n > int(source.count_rows()):
        raise SnapshotRejected(f"it holds {n} rows, the table fewer (purged or replaced)")
    view = memoryview(mapped)
    by_file = hasattr(os, "pread")  # the float32 rows are read from the file, not the map (densematrix.RowFile)
    sections = {name: _section(mapped, view, meta, name) for name in meta["sections"] if not (by_file and name == VECTORS)}
    vectors: RowFile | np.ndarray = sections[VECTORS] if not by_file else _vector_rows(handle, meta, n, dim)
    ids = bytes(sections["ids"]).decode().split("\n") if n else []
    terms = bytes(sections["terms"]).decode().split("\n") if meta["sections"]["terms"]["nbytes"] else []
    arrow = meta["sections"]["arrow"]
    payload = pa.ipc.open_file(pa.py_buffer(mapped).slice(arrow["offset"], arrow["nbytes"])).read_all()
    has_axes = "dense.axes" in sections
    dense = DenseMatrix.restore(
        dim,
        spill_dir,
        n,
        sections["dense.codes"],
        sections["dense.scales"],
        vectors,
        sections["dense.axes"] if has_axes else None,
        int(meta["fitted_at"]),
        sections["dense.projected"] if has_axes else None,
        sections["dense.projected_scales"] if has_axes else None,
    )
    postings = _Postings.restore(
        terms, sections["postings.ptr"], sections["postings.rows"], sections["postings.tfs"], sections["postings.df"]
    )
    if len(postings.ptr) != len(terms) + 1 or len(postings.df) != len(terms):
        raise SnapshotRejected("its postings disagree with its terms")
    state = {
        "version": version,
        "n": n,
        "ids": ids,
        "times": {name: sections[f"times.{name}"] for name in _TIMES},
        "flags": {name: sections[f"flags.{name}"] for name in _FLAG_ARRAYS},
        "codes": meta["codes"],
        "length_sum": meta["length_sum"],
        "documents": meta["documents"],
    }
    try:
        return ReadIndex.restore(dim, source.schema, spill_dir, state, dense, postings, payload)
    except ValueError as exc:
        raise SnapshotRejected(str(exc)) from exc
    finally:
        if not isinstance(vectors, RowFile):
            handle.close()


def _vector_rows(handle: Any, meta: dict[str, Any], n: int, dim: int) -> RowFile:
    """The snapshot's float32 rows as a `RowFile` over `handle`, once their section is checked (through the file)."""
    section = meta["sections"][VECTORS]
    start, nbytes = section["offset"], section["nbytes"]
    if section["shape"] != [n, dim] or nbytes != n * dim * 4:
        raise SnapshotRejected(f"its section {VECTORS} has the wrong size")
    _check_crc(meta, VECTORS, _FileSpan(handle, start, nbytes))
    return RowFile(handle, start, dim)


# ---------------------------------------------------------------------------- keeping it fresh
class Keeper:
    """One local store's snapshot: loads it for the store's read index, and writes a new one when it is due
    (`due`; the module's one background thread asks, `_tick`), and at a clean exit."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._store: Any = None  # a weak reference to the MemoryStore, once attached
        self._preloaded: ReadIndex | None = None
        self._tried = False  # whether the snapshot was looked at (a rejected one is not read twice)
        self.saved_version: int | None = None  # the table version the snapshot on disk reflects (None: none trusted)
        self.saved_rows = 0
        self.saved_at = 0.0
        self._writing = threading.Lock()

    # -- loading (the store's build asks `take`)
    def present(self) -> bool:
        """Whether the store has a snapshot file (trusted or not: `load` decides)."""
        return snapshot_path(self.directory).exists()

    def preload(self, store: Any) -> bool:
        """Load the snapshot for `store` now (its open: the first recall is then answered by the index), and hand it
        to the store's build; False when there is none to trust (the index is then built as without snapshots)."""
        self._store = weakref.ref(store)
        _register(self)
        if store.read_index is not None or not self.present():
            return False
        import lance  # pylance: what the store itself reads a table through until LanceDB is needed

        table = lance.dataset(str(self.directory / f"{TABLE_NAME}.lance"))
        index = self._load(table, store.dim, self.directory)
        if index is None:
            return False
        self._preloaded = index
        return store.wait_for_read_index()

    def take(self, source: Any, dim: int, spill_dir: Path) -> ReadIndex | None:
        """The index from the snapshot for a build of `source` (the one `preload` loaded, or loaded now, once), or
        None: build it from the table."""
        index, self._preloaded = self._preloaded, None
        if index is None and not self._tried:
            index = self._load(source, dim, spill_dir)
        return index

    def _load(self, source: Any, dim: int, spill_dir: Path) -> ReadIndex | None:
        self._tried = True
        index = load(self.directory, source, dim, spill_dir)
        if index is not None:
            self.saved_version, self.saved_rows, self.saved_at = index.version, index.rows, time.monotonic()
        return index

    # -- writing
    def due(self, index: ReadIndex, now: float, exiting: bool = False) -> bool:
        """Whether `index` should be saved now."""
        if index.rows < MIN_ROWS or index.version < 0:
            return False
        if self.saved_version is None:
            return True  # after a build (or a snapshot ignored): the next open should not build again
        if index.version == self.saved_version:
            return False
        if exiting:
            return True
        waited = now - self.saved_at
        return (index.rows - self.saved_rows >= EVERY_ROWS and waited >= MIN_INTERVAL) or waited >= IDLE_INTERVAL

    def save(self, index: ReadIndex) -> bool:
        """Write `index` as the snapshot (one writer at a time in this process); False when it failed (logged)."""
        with self._writing:
            started = time.perf_counter()
            try:
                write(index, self.directory)
            except Exception as exc:  # a full disk, a store removed meanwhile: the next open builds, as before
                log.info("the read index snapshot could not be written in %s (%s: %s)", self.directory, type(exc).__name__, exc)
                log.debug("snapshot write failure", exc_info=True)
                self.saved_at = time.monotonic()  # not retried at once
                return False
            self.saved_version, self.saved_rows, self.saved_at = index.version, index.rows, time.monotonic()
            log.debug("read index snapshot written: %d rows at version %d in %.2f s", index.rows, index.version, time.perf_counter() - started)
            return True

    def tick(self, exiting: bool = False) -> None:
        """Save the store's read index when it is due, caught up with the table first: a snapshot never holds rows
        the table no longer has (a purge's), as far as this process can see."""
        store = self._store() if self._store is not None else None
        index = store.read_index if store is not None else None
        if index is None or not self.due(index, time.monotonic(), exiting):
            return
        store.catch_up(index)
        if store.read_index is index and self.due(index, time.monotonic(), exiting):
            self.save(index)

    def rows_gone(self) -> None:
        """The table lost rows (a purge): the snapshot holding them is removed at once; a new one is written later."""
        discard(self.directory)
        self.saved_version = None


_KEEPERS: list[weakref.ref[Keeper]] = []
_KEEPERS_LOCK = threading.Lock()
_THREAD: threading.Thread | None = None
_STOP = threading.Event()


def _register(keeper: Keeper) -> None:
    global _THREAD
    with _KEEPERS_LOCK:
        _KEEPERS[:] = [ref for ref in _KEEPERS if ref() is not None and ref() is not keeper]
        _KEEPERS.append(weakref.ref(keeper))
        if _THREAD is None:
            _THREAD = threading.Thread(target=_run, name="chronomem-snapshot", daemon=True)
            _THREAD.start()
            atexit.register(_at_exit)


def _live_keepers() -> list[Keeper]:
    with _KEEPERS_LOCK:
        return [keeper for keeper in (ref() for ref in _KEEPERS) if keeper is not None]


def _run() -> None:
    while not _STOP.wait(TICK_SECONDS):
        for keeper in _live_keepers():
            try:
                keeper.tick()
            except Exception:  # never let the thread die: the next tick tries again
                log.debug("snapshot tick failed", exc_info=True)


def _at_exit() -> None:
    """A clean exit saves each store's read index that moved since its snapshot (the next open then needs no diff)."""
    _STOP.set()
    save_moved()


def save_moved() -> None:
    """Save each open store's read index that moved since its snapshot now, as a clean exit does."""
    for keeper in _live_keepers():
        try:
            keeper.tick(exiting=True)
        except Exception:
            log.debug("snapshot save failed", exc_info=True)
