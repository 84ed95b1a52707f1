"""Moving a store to another embedding model (`chronomem reembed`): every row's vector made again, nothing else.

The table records the model its vectors are from (`chronomem.embed_model` in its schema metadata, and each
row's `embed_model`); `MemoryStore.open` refuses a configured model of another dimension, and `doctor` says
when the two differ. `reembed` recomputes the vector of every row the target model did not make, from the
row's `content` (as `remember` and `import` embed it), and rewrites the table with the target's dimension and
name; every other column is carried over unchanged (checked before the commit). This is the one declared
exception to the rule that a row is written once and only its validity is set afterwards
(storage/schema.py `REEMBED_COLUMNS`: `vector` and `embed_model`); the `usage` side table is not touched.

Crash safety, in three steps, each of which a rerun picks up where a kill left it:

1. Backup: the whole table, vectors included (storage/backup.py), unless the newest backup is of the
   current version already. `chronomem restore` of it undoes the move.
2. Staging: new vectors go to `<store>/.reembed/part-<n>.parquet` (id, vector; the target model and
   dimension in the file's metadata), a few hundred texts per file, each written under a temporary name,
   flushed and renamed, so a file is there whole or not at all. The table is not touched. A rerun reads the
   parts made for the same target and embeds only the rows they lack (parts for another target are
   discarded); a kill costs at most the part being embedded.
3. Swap: under the store's write lock, the table as it is now (rows written or retracted meanwhile
   included) is joined by id with the staged vectors, any row still without one is embedded there and then,
   and the result replaces the table in one LanceDB commit (`mode="overwrite"`: a new version with the
   new schema; older versions stay until upkeep's cleanup). LanceDB commits are atomic, so the table is
   all old model or all new. Only then are the full-text index made again, the vector index retrained
   when there was one, a backup of the new state taken, and the staging folder removed; a rerun after a
   kill among those finds the store on the target model and only finishes them.

One reembed per store at a time (`.reembed.lock`). Servers on the store should be stopped first: one still
running embeds with its old model (a write of the old dimension fails, naming this; of the same dimension it
lands with its own `embed_model`, which `doctor` counts and a second reembed makes again).

Owns no model: the caller passes the embedding function (storage never imports embed/).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chronomem.errors import StoreError
from chronomem.storage import ledger
from chronomem.storage.doctor import error_line, foreign_entries
from chronomem.storage.schema import SCHEMA_VERSION_KEY, TABLE_NAME, memories_schema, stored_model, with_terms
from chronomem.storage.store import SCAN_LIMIT, VECTOR_INDEX_NAME, MemoryStore

log = logging.getLogger(__name__)

STAGING_DIR = ".reembed"
RUN_LOCK = ".reembed.lock"
#: Distinct texts embedded per call of the embedding function (and per progress step).
EMBED_BATCH = 64
#: Distinct texts per staged part file: what a kill can cost, at most.
PART_TEXTS = 256
_MODEL_KEY = b"chronomem.reembed.model"
_DIM_KEY = b"chronomem.reembed.dim"

Embed = Callable[[list[str]], list[list[float]]]


@dataclass
class Survey:
    """Where a store stands against a target model, before any change."""

    path: str
    model: str
    dim: int
    target: str
    target_dim: int
    rows: int
    #: Rows whose vector the target model did not make (the whole table when the dimension changes).
    stale: int
    #: Of those, rows staged by an earlier run that was interrupted.
    staged: int

    @property
    def up_to_date(self) -> bool:
        return self.model == self.target and self.dim == self.target_dim and self.stale == 0


@dataclass
class ReembedReport:
    """What `reembed` did."""

    path: str
    from_model: str
    from_dim: int
    model: str
    dim: int
    rows: int
    #: Rows given a vector by this run.
    embedded: int
    #: Rows whose vector an earlier, interrupted run had staged.
    resumed: int
    #: Rows whose vector was already the target model's (kept as they were).
    kept: int
    #: Distinct texts this run embedded (rows sharing a text share its vector).
    texts: int
    backup: str | None
    after_backup: str | None
    already: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- staging


def staging_dir(store: Path) -> Path:
    return store / STAGING_DIR


def _parts(store: Path) -> list[Path]:
    folder = staging_dir(store)
    return sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []


def _read_staged(store: Path, target: str, dim: int) -> tuple[list[str], Any]:
    """(ids, vectors as an (n, dim) float32 array) of the parts staged for this target; parts for another
    target, or that do not read, are deleted (their rows are embedded again)."""
    import numpy as np
    import pyarrow.parquet as pq

    ids: list[str] = []
    blocks: list[Any] = []
    for part in _parts(store):
        try:
            meta = pq.read_schema(part).metadata or {}
            if meta.get(_MODEL_KEY) != target.encode() or meta.get(_DIM_KEY) != str(dim).encode():
                log.info("discarding %s: staged for another model", part.name)
                part.unlink(missing_ok=True)
                continue
            table = pq.read_table(part)
            vectors = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            blocks.append(np.asarray(vectors, dtype=np.float32).reshape(-1, dim))
            ids.extend(table.column("id").to_pylist())
        except Exception as exc:  # a part is renamed into place whole, so this is damage from outside: redo it
            log.warning("discarding staged part %s (%s)", part.name, error_line(exc))
            part.unlink(missing_ok=True)
    vectors = np.concatenate(blocks) if blocks else np.zeros((0, dim), dtype=np.float32)
    return ids, vectors


def _write_part(store: Path, ids: list[str], vectors: Any, target: str, dim: int) -> Path:
    """One staged part, there whole or not at all: written under a temporary name, flushed, renamed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = staging_dir(store)
    folder.mkdir(exist_ok=True)
    numbers = [int(p.stem.split("-")[1]) for p in _parts(store)]
    target_file = folder / f"part-{max(numbers, default=0) + 1:06d}.parquet"
    tmp = folder / f".{target_file.name}.tmp"
    schema = pa.schema(
        [pa.field("id", pa.string()), pa.field("vector", pa.list_(pa.float32(), dim))],
        metadata={_MODEL_KEY: target.encode(), _DIM_KEY: str(dim).encode()},
    )
    flat = pa.array(vectors.reshape(-1), type=pa.float32())
    table = pa.Table.from_arrays([pa.array(ids, pa.string()), pa.FixedSizeListArray.from_arrays(flat, dim)], schema=schema)
    try:
        pq.write_table(table, tmp)
        _fsync(tmp)
        os.replace(tmp, target_file)
        _fsync(folder)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target_file


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # a file system without fsync on directories: the rename is still atomic
        pass
    finally:
        os.close(fd)


def drop_staging(store: Path) -> None:
    shutil.rmtree(staging_dir(store), ignore_errors=True)


# ---------------------------------------------------------------------------- survey


def open_table(path: Path) -> Any:
    """The `memories` table of the store at `path`, read-only; StoreError when there is none."""
    from chronomem.storage.doctor import _connect

    if not path.is_dir() or not (path / f"{TABLE_NAME}.lance").exists():
        foreign = foreign_entries(path) if path.is_dir() else []
        if foreign:
            raise StoreError(f"{path} is not a chronomem store (it holds {', '.join(foreign[:3])})")
        raise StoreError(f"no store at {path}: pass --store or set CHRONOMEM_HOME")
    try:
        table = _connect(path).open_table(TABLE_NAME)
    except Exception as exc:
        raise StoreError(
            f"cannot open the store at {path} ({error_line(exc)}): run `chronomem doctor --store {path}` first"
        ) from exc
    if (table.schema.metadata or {}).get(SCHEMA_VERSION_KEY) is None:
        raise StoreError(f"{path} holds a `{TABLE_NAME}` table that chronomem did not write")
    return table


def _stale_mask(table: Any, target: str, same_dim: bool) -> tuple[list[str], list[str], list[bool]]:
    """(ids, contents, whether each row needs a new vector) in table order."""
    data = table.search().select(["id", "content", "embed_model"]).limit(SCAN_LIMIT).to_arrow()
    ids = data.column("id").to_pylist()
    contents = data.column("content").to_pylist()
    made_by = data.column("embed_model").to_pylist()
    stale = [not same_dim or m != target for m in made_by]
    return ids, contents, stale


def survey(path: Path | str, target: str, dim: int) -> Survey:
    """How far the store at `path` is from vectors of `target` (`dim`-d): reads only."""
    path = Path(path)
    table = open_table(path)
    model, stored_dim = stored_model(table.schema)
    ids, _, stale = _stale_mask(table, target, stored_dim == dim)
    staged_ids = set(_staged_ids(path, target, dim))
    stale_ids = {i for i, s in zip(ids, stale, strict=True) if s}
    return Survey(str(path), model, stored_dim, target, dim, len(ids), len(stale_ids), len(stale_ids & staged_ids))


def _staged_ids(store: Path, target: str, dim: int) -> list[str]:
    """Ids staged for this target (reads only the id column; deletes nothing)."""
    import pyarrow.parquet as pq

    found: list[str] = []
    for part in _parts(store):
        try:
            meta = pq.read_schema(part).metadata or {}
            if meta.get(_MODEL_KEY) == target.encode() and meta.get(_DIM_KEY) == str(dim).encode():
                found.extend(pq.read_table(part, columns=["id"]).column("id").to_pylist())
        except Exception:
            continue
    return found


# ---------------------------------------------------------------------------- reembed


def _embed_texts(embed: Embed, texts: list[str], dim: int) -> Any:
    import numpy as np

    vectors = np.asarray(embed(texts), dtype=np.float32)
    if vectors.shape != (len(texts), dim):
        raise StoreError(f"the model made vectors of shape {vectors.shape[1:]} for {len(texts)} texts, expected {dim}-d")
    return vectors


def _batches(texts: list[str], size: int) -> Iterator[list[str]]:
    for at in range(0, len(texts), size):
        yield texts[at : at + size]


def reembed(
    path: Path | str,
    embed: Embed,
    target: str,
    dim: int,
    writing: Callable[[], AbstractContextManager[Any]],
    progress: Callable[[int], None] | None = None,
    started: Callable[[int, int], None] | None = None,
) -> ReembedReport:
    """Move the store at `path` to vectors of `target` (`dim`-d) made by `embed`; resumable (module docstring).

    `writing()` holds the store's write lock (the service's, taken by the caller's code) for the swap.
    `started(total, done)` is called once with the rows this run covers and how many of them an earlier run
    staged; `progress(n)` as each n rows get their vector.
    """
    from filelock import FileLock, Timeout

    path = Path(path)
    open_table(path)  # a clear error for a missing or foreign store, before any lock file is written
    run_lock = FileLock(str(path / RUN_LOCK))
    try:
        run_lock.acquire(timeout=0)
    except Timeout:
        raise StoreError(f"another `chronomem reembed` is running on {path}; wait for it to finish") from None
    try:
        return _reembed(path, embed, target, dim, writing, progress, started)
    finally:
        run_lock.release()


def _reembed(
    path: Path,
    embed: Embed,
    target: str,
    dim: int,
    writing: Callable[[], AbstractContextManager[Any]],
    progress: Callable[[int], None] | None,
    started: Callable[[int, int], None] | None,
) -> ReembedReport:
    import numpy as np

    from chronomem.storage.backup import latest_backup, take_backup

    model, stored_dim = stored_model(open_table(path).schema)
    store = MemoryStore.open(path, stored_dim, model, read_index_rows=0)  # the ledger and schema checks of every open
    same_dim = stored_dim == dim
    ids, contents, stale = _stale_mask(store.table, target, same_dim)
    if model == target and same_dim and not any(stale):
        after = _finish(path, target, dim, had_vector_index=False)
        if started is not None:
            started(0, 0)
        return ReembedReport(str(path), model, stored_dim, target, dim, len(ids), 0, 0, len(ids), 0, None, after, True)

    newest = latest_backup(path)
    if newest is None or newest.version != int(store.table.version):
        newest = take_backup(store)
    backup = str(newest.path)

    staged_ids, staged_vectors = _read_staged(path, target, dim)
    staged_at = {row_id: i for i, row_id in enumerate(staged_ids)}
    todo: dict[str, list[str]] = {}  # text -> ids of the stale rows holding it that no part covers yet
    resumed = 0
    for row_id, content, needs in zip(ids, contents, stale, strict=True):
        if not needs:
            continue
        if row_id in staged_at:
            resumed += 1
        else:
            todo.setdefault(content, []).append(row_id)
    total = resumed + sum(len(v) for v in todo.values())
    if started is not None:
        started(total, resumed)

    # Stage: shortest texts first (a batch pads to its longest text), a part file every PART_TEXTS texts.
    texts = sorted(todo, key=len)
    embedded = 0
    for part_texts in _batches(texts, PART_TEXTS):
        blocks = []
        for batch in _batches(part_texts, EMBED_BATCH):
            blocks.append(_embed_texts(embed, batch, dim))
            if progress is not None:
                progress(sum(len(todo[t]) for t in batch))
        vectors = np.concatenate(blocks)
        part_ids = [row_id for t in part_texts for row_id in todo[t]]
        repeat = np.array([len(todo[t]) for t in part_texts])
        _write_part(path, part_ids, np.repeat(vectors, repeat, axis=0), target, dim)
        embedded += len(part_ids)

    had_vector_index = VECTOR_INDEX_NAME in {idx.name for idx in store.table.list_indices()}
    with writing():
        swapped = _swap(path, store, embed, target, dim, same_dim)
    after = _finish(path, target, dim, had_vector_index)
    return ReembedReport(
        str(path), model, stored_dim, target, dim, swapped.rows, embedded + swapped.late, resumed, swapped.kept,
        len(texts) + swapped.late_texts, backup, after,
    )


@dataclass
class _Swapped:
    rows: int
    #: Rows whose vector was the target model's already.
    kept: int
    #: Rows no part held (written since the staging): embedded under the lock, and their distinct texts.
    late: int
    late_texts: int


def _swap(path: Path, store: MemoryStore, embed: Embed, target: str, dim: int, same_dim: bool) -> _Swapped:
    """Replace the table with its rows under the new vectors in one commit. The caller holds the write lock, so
    the table read here is the one replaced."""
    import numpy as np
    import pyarrow as pa

    table = store.table
    live = table.to_arrow()
    n = live.num_rows
    staged_ids, staged_vectors = _read_staged(path, target, dim)
    staged_at = {row_id: i for i, row_id in enumerate(staged_ids)}
    ids = live.column("id").to_pylist()
    made_by = live.column("embed_model").to_pylist()
    out = np.zeros((n, dim), dtype=np.float32)
    source = np.array([staged_at.get(row_id, -1) for row_id in ids], dtype=np.int64)
    found = source >= 0
    if found.any():
        out[found] = staged_vectors[source[found]]
    keep = ~found & np.array([same_dim and m == target for m in made_by], dtype=bool)
    if keep.any():
        old = live.column("vector").combine_chunks()
        keep &= np.asarray(old.is_valid().to_numpy(zero_copy_only=False), dtype=bool)  # a row without a vector gets one
        values = old.values.slice(old.offset * dim, n * dim)
        out[keep] = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, dim)[keep]
    # Rows written since the staging (or that no part holds): embedded now, under the lock.
    late_rows = np.flatnonzero(~found & ~keep)
    late_texts: dict[str, list[int]] = {}
    contents = live.column("content").to_pylist()
    for i in late_rows.tolist():
        late_texts.setdefault(contents[i], []).append(i)
    for batch in _batches(list(late_texts), EMBED_BATCH):
        for text, vector in zip(batch, _embed_texts(embed, batch, dim), strict=True):
            out[late_texts[text]] = vector

    schema = memories_schema(dim, target)
    columns = []
    for field in schema:
        if field.name == "vector":
            columns.append(pa.FixedSizeListArray.from_arrays(pa.array(out.reshape(-1), type=pa.float32()), dim))
        elif field.name == "embed_model":
            columns.append(pa.array([target] * n, type=pa.string()))
        else:
            columns.append(live.column(field.name).combine_chunks().cast(field.type))
    moved = pa.Table.from_arrays(columns, schema=schema)
    carried = [name for name in schema.names if name not in ("vector", "embed_model")]
    if not moved.select(carried).equals(live.select(carried)):  # never: but a swap must not change a memory
        raise StoreError(f"re-embedding {path} would change more than the vectors; nothing was written")
    moved = with_terms(moved, None)  # rows the store held without terms stay marked for the next open to fill
    store._guard(lambda: table.add(moved, mode="overwrite"))
    version = int(table.version)
    ledger.acknowledge(path, version, int(table.count_rows()))
    return _Swapped(n, int(keep.sum()), len(late_rows), len(late_texts))


def _backup_model(file: Path) -> tuple[str, int] | None:
    """(model, dim) a backup file's rows are from, or None when its schema does not say."""
    import pyarrow.parquet as pq

    try:
        return stored_model(pq.read_schema(file))
    except Exception:
        return None


def _finish(path: Path, target: str, dim: int, had_vector_index: bool) -> str | None:
    """After the swap (or on a rerun that finds it made): the indexes, a backup of the new state when the
    newest is of the old model, and no staging folder. Returns the backup taken, if any."""
    from chronomem.storage.backup import latest_backup, take_backup

    store = MemoryStore.open(path, dim, target, read_index_rows=0)  # makes the full-text index again
    if had_vector_index and store.vector_index_rows() is None:
        store.build_vector_index()
    taken = None
    newest = latest_backup(path)
    if store.count() and (newest is None or _backup_model(newest.path) != (target, dim)):
        taken = str(take_backup(store).path)
    drop_staging(path)
    return taken
