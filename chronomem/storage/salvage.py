"""Orphan salvage: the rows of data files that are still on disk but that no surviving manifest references.

Owns four things `doctor --repair` uses:

- finding the orphan data files: every `memories.lance/data/*.lance` that the table version repair opened
  does not reference (a deleted newest manifest, or deleted middle manifests, leave the files of the writes
  they committed behind, whole);
- reading them one by one with pylance's file reader (`lance.file.LanceFileReader`, imported lazily: start-up
  never loads it), conformed to the table's schema; a file that does not read, or holds vectors of another
  size (written before a `chronomem reembed`), is named and skipped, never guessed at;
- making the table again from the data files alone when every manifest is gone (`rebuild`: the old table
  directory moved whole to `quarantine/`);
- the drop record, `<store>/.dropped.json`: the ids a purge erased (written before it rewrites the table)
  or a `restore --replace` left out. Repair never brings one of them back — not from an orphan file (a
  purge's clean-up that failed may leave one), nor from the backup a restore takes of what it replaces.

Rows are immutable except `invalid_at` / `expired_at`, so an old file may hold an older state of a row
(a compaction or an update copied it): `merge_latest` keeps the latest state of each id, the table's
own rows winning a tie. This module never writes the table and never deletes a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronomem.storage.schema import TABLE_NAME, with_terms

DROPPED_NAME = ".dropped.json"
_LOCK_NAME = ".dropped.lock"


# --- the drop record -----------------------------------------------------------------------------------


def dropped_path(store: Path | str) -> Path:
    return Path(store) / DROPPED_NAME


def dropped_ids(store: Path | str) -> set[str]:
    """Ids removed on purpose (purge, restore): never salvaged. Empty when there is no record."""
    try:
        data = json.loads(dropped_path(store).read_text(encoding="utf-8"))
        return {str(i) for i in data.get("ids", [])}
    except FileNotFoundError:
        return set()
    # any other failure propagates: an unreadable record must not let purged rows back (see read_orphans)


def _locked(store: Path) -> Any:
    """The drop record's own lock (filelock, as the store's other locks): one purge or restore edits it at a time."""
    from filelock import FileLock

    return FileLock(str(Path(store) / _LOCK_NAME))


def _write_dropped(store: Path, ids: set[str]) -> None:
    target = dropped_path(store)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"ids": sorted(ids)}, separators=(",", ":")))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def record_dropped(store: Path | str, ids: Iterable[str]) -> None:
    """Add `ids` to the drop record (atomic rewrite under a lock). Ids are ULIDs: no purged text is kept."""
    store = Path(store)
    new = {str(i) for i in ids}
    if not new:
        return
    store.mkdir(parents=True, exist_ok=True)
    with _locked(store):
        try:
            held = dropped_ids(store)
        except (OSError, ValueError, TypeError, AttributeError):
            held = set()
        _write_dropped(store, held | new)


def without_dropped(rows: Any, store: Path | str) -> tuple[Any, int]:
    """`rows` less those whose id is on the drop record, and how many that left out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        drop = dropped_ids(store)
    except (OSError, ValueError, TypeError, AttributeError):  # an unreadable record: the backup as it was
        return rows, 0
    if not drop or rows is None or not rows.num_rows:
        return rows, 0
    kept = rows.filter(pc.invert(pc.is_in(rows.column("id"), value_set=pa.array(sorted(drop), type=pa.string()))))
    return kept, rows.num_rows - kept.num_rows


def readmit(store: Path | str, ids: Iterable[str]) -> None:
    """Take `ids` off the drop record (a restore put them back in the table)."""
    store = Path(store)
    back = {str(i) for i in ids}
    if not back or not dropped_path(store).exists():
        return
    with _locked(store):
        try:
            held = dropped_ids(store)
        except (OSError, ValueError, TypeError, AttributeError):
            return
        if held & back:
            _write_dropped(store, held - back)


# --- reading orphan data files ---------------------------------------------------------------------------


@dataclass
class Orphans:
    """What reading the orphan data files found."""

    #: The rows read, in the table's schema (several states of one id may be among them), or None.
    rows: Any = None
    files: list[str] = field(default_factory=list)
    #: file name -> why it was not used.
    skipped: dict[str, str] = field(default_factory=dict)
    #: Files whose vectors are of another size (from before a reembed, whose rows the table holds re-embedded).
    other_model: list[str] = field(default_factory=list)
    #: Rows left out because a purge or a restore removed their id on purpose.
    dropped: int = 0
    #: Why no orphan file was read at all (pylance missing, the drop record unreadable), if so.
    blocked: str | None = None

    @property
    def row_count(self) -> int:
        return 0 if self.rows is None else int(self.rows.num_rows)


def data_dir(store: Path | str) -> Path:
    return Path(store) / f"{TABLE_NAME}.lance" / "data"


def referenced_files(store: Path | str, version: int) -> set[str] | None:
    """Data file names the table's `version` references, or None when its manifest does not read."""
    import lance  # pylance: imported only here, when a repair needs it

    try:
        dataset = lance.dataset(str(Path(store) / f"{TABLE_NAME}.lance"), version=version)
        return {Path(f.path).name for fragment in dataset.get_fragments() for f in fragment.metadata.files}
    except Exception:
        return None


def orphan_files(store: Path | str, version: int | None) -> list[Path]:
    """Data files the given version does not reference (every data file when there is no version that reads)."""
    folder = data_dir(store)
    if not folder.is_dir():
        return []
    present = sorted(folder.glob("*.lance"))
    known = referenced_files(store, version) if version is not None else None
    return [p for p in present if known is None or p.name not in known]


class _OtherModel(ValueError):
    """The file's vectors are of another size: written before `chronomem reembed` moved the store."""


def _conform(rows: Any, schema: Any) -> Any:
    """`rows` in `schema`: columns it lacks become nulls (a file from an older schema); raises when it cannot."""
    import pyarrow as pa

    if "vector" in rows.column_names and rows.schema.field("vector").type != schema.field("vector").type:
        raise _OtherModel
    columns = []
    for fld in schema:
        if fld.name in rows.column_names:
            columns.append(rows.column(fld.name).cast(fld.type))
        elif fld.nullable:
            columns.append(pa.nulls(rows.num_rows, fld.type))
        else:
            raise ValueError(f"it has no `{fld.name}` column")
    return pa.Table.from_arrays(columns, schema=schema)


def read_file(path: Path, schema: Any) -> Any:
    """Every row of one Lance data file, in the table's schema."""
    from lance.file import LanceFileReader

    return _conform(LanceFileReader(str(path)).read_all().to_table(), schema)


def read_orphans(store: Path | str, version: int | None, schema: Any) -> Orphans:
    """The rows of every data file the opened `version` does not reference, less those dropped on purpose."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = Orphans()
    try:
        drop = dropped_ids(store)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        found.blocked = f"the drop record {DROPPED_NAME} does not read ({exc}), so purged rows could not be told apart"
        return found
    try:
        import lance.file  # noqa: F401  (pylance)
    except ImportError:
        found.blocked = "the `pylance` package, which reads them, is not installed"
        return found
    parts = []
    for path in orphan_files(store, version):
        try:
            rows = read_file(path, schema)
        except _OtherModel:
            found.other_model.append(path.name)
            continue
        except Exception as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            found.skipped[path.name] = text[:200]
            continue
        found.files.append(path.name)
        if drop and rows.num_rows:
            keep = pc.invert(pc.is_in(rows.column("id"), value_set=pa.array(sorted(drop), type=pa.string())))
            kept = rows.filter(keep)
            found.dropped += rows.num_rows - kept.num_rows
            rows = kept
        if rows.num_rows:
            parts.append(rows)
    if parts:
        found.rows = pa.concat_tables(parts)
    return found


def describe(found: Orphans, recovered: list[str], acknowledged: set[str]) -> list[str]:
    """Lines for repair's report: what came back from orphan files (acknowledged ids by name) and what did not."""
    lines: list[str] = []
    if found.blocked:
        lines.append(f"data files no manifest references were not read: {found.blocked}")
        return lines
    if recovered:
        named = sorted(set(recovered) & acknowledged)
        lines.append(
            f"recovered {len(recovered)} memor{'y' if len(recovered) == 1 else 'ies'} from {len(found.files)} data "
            f"file{'s' if len(found.files) != 1 else ''} no surviving manifest references"
            + (f" ({len(named)} acknowledged: {', '.join(named)})" if named else "")
        )
    for name, why in sorted(found.skipped.items()):
        lines.append(f"the data file {name} (in no surviving manifest) does not read: {why}")
    if found.other_model:
        lines.append(
            f"{len(found.other_model)} old data files hold vectors of another model (before a reembed): not read"
        )
    if found.dropped:
        lines.append(f"{found.dropped} rows of purged or restored-away memories in old data files were left out")
    return lines


def state_rank(rows: Any) -> list[int]:
    """How far along its life each row's state is: expired (retracted) and invalidated states are later ones."""
    expired = rows.column("expired_at").is_valid().to_pylist()
    invalid = rows.column("invalid_at").is_valid().to_pylist()
    return [2 * int(e) + int(i) for e, i in zip(expired, invalid, strict=True)]


def merge_latest(*sources: Any) -> Any:
    """The rows of every source, one per id: its latest state (expired or invalidated wins), the earlier
    source winning a tie (pass the table's rows before a backup's)."""
    import pyarrow as pa

    schema = sources[0].schema
    tables = [t.select(schema.names).cast(schema) for t in sources]
    both = pa.concat_tables(tables)
    ids = both.column("id").to_pylist()
    rank = state_rank(both)
    order = [s for s, t in enumerate(tables) for _ in range(t.num_rows)]
    best: dict[str, int] = {}
    for i, row_id in enumerate(ids):
        j = best.get(row_id)
        if j is None or (rank[i], -order[i]) > (rank[j], -order[j]):
            best[row_id] = i
    return both.take(sorted(best.values(), key=lambda i: ids[i]))


# --- every manifest gone ---------------------------------------------------------------------------------


def rebuild(store: Path | str, actions: list[str], connect: Callable[[Path], Any], quarantine: str) -> Any:
    """A table made again from the data files alone, when no manifest is left to open one; None if none reads.

    The old table directory is moved whole to `quarantine/<time>/` (never deleted); the schema is chronomem's
    own for the vectors' size and the model the newest readable file's rows name; ids on the drop record stay
    out; several states of one id: the latest wins (`merge_latest`)."""
    import shutil
    from collections import Counter

    from chronomem.records import utcnow
    from chronomem.storage.schema import memories_schema

    folder = data_dir(store)
    files = sorted(folder.glob("*.lance"), key=lambda p: p.stat().st_mtime_ns) if folder.is_dir() else []
    if not files:
        return None
    try:
        from lance.file import LanceFileReader
    except ImportError:
        actions.append("no manifest is left, and `pylance`, which reads data files alone, is not installed")
        return None
    raw: list[tuple[Path, Any]] = []
    unreadable: list[str] = []
    for path in files:
        try:
            raw.append((path, LanceFileReader(str(path)).read_all().to_table()))
        except Exception as exc:
            why = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
            unreadable.append(f"{path.name} ({why})")
    raw = [(p, t) for p, t in raw if "vector" in t.column_names and "id" in t.column_names]
    if not raw:
        return None
    newest = raw[-1][1]
    dim = newest.schema.field("vector").type.list_size
    model = Counter(m for m in newest.column("embed_model").to_pylist() if m).most_common(1)
    schema = memories_schema(dim, model[0][0] if model else "?")
    parts, other = [], 0
    for _path, table in raw:
        try:
            parts.append(_conform(table, schema))
        except Exception:
            other += 1
    rows, dropped = without_dropped(merge_latest(*parts), store)
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    aside = Path(store) / quarantine / stamp
    aside.mkdir(parents=True, exist_ok=True)
    shutil.move(str(Path(store) / f"{TABLE_NAME}.lance"), str(aside / f"{TABLE_NAME}.lance"))
    table = connect(Path(store)).create_table(TABLE_NAME, data=with_terms(rows, None))  # old files: terms marked pending
    actions.append(
        f"no manifest was left: moved the table directory to {aside.relative_to(store)} and made the table again "
        f"from its {len(raw)} readable data files ({rows.num_rows} memories)"
        + (f"; {len(unreadable)} did not read: {', '.join(unreadable)}" if unreadable else "")
        + (f"; {other} held vectors of another size (before a reembed): not read" if other else "")
        + (f"; {dropped} rows of purged or restored-away memories left out" if dropped else "")
    )
    return table
