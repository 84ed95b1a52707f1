"""Data in and out of a store: JSONL export and import, and purge — the one hard delete.

Export writes every row, every column but the vector, one JSON object per line, ordered
by id, with times as fixed-width ISO 8601 UTC (microseconds, `Z`), so the same store
always exports the same bytes. Import reads that back into an empty store in one commit,
keeping ids, both time axes, supersession and revision links and provenance, and
recomputing the vectors with the configured model.

A row is exported as readers see it: what the `usage` side table holds about it (storage/usage.py) is
folded in — its salience boost, restating chunks, added paths, refreshed anchors and later conflicting
facts into those columns — and its last recall hit is the extra field `last_seen` (absent when never hit),
which import writes back to the new store's usage table. `anchors` is an object (path → blob id),
`conflicts_with` a list of ids. An export of a schema-1 store (made before these columns existed) carries
its internal marks as `cm:` strings in `tags`: import reads them as anchors, conflicts and last seen
(storage/migrate.py, `split_marks`), never as tags.

Purge removes rows for good: the matched rows, every revision of them and every fact
derived from them (or restated by them), and their rows in the `usage` side table, which is
rewritten the same way (`UsageLog.erase`). LanceDB deletes by marking rows in deletion files and keeps old
versions, so the table is rewritten without those rows (one commit), its indexes are
rebuilt, and every older version and unreferenced file is cleaned up at once; afterwards
no file in the store directory holds the purged text.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from chronomem.errors import InvalidInput, NotFound, StoreError
from chronomem.records import UTC, MemoryRecord, Usage
from chronomem.storage.filters import Filter
from chronomem.storage.migrate import split_marks
from chronomem.storage.schema import FTS_INDEX, OLD_FTS_INDEX, RESULT_COLUMNS
from chronomem.storage.store import SCAN_LIMIT, VECTOR_INDEX_NAME, MemoryStore

log = logging.getLogger(__name__)

#: Columns an export carries, in this order: all of them but the vector.
EXPORT_COLUMNS: list[str] = list(RESULT_COLUMNS)
#: Fields an export line may carry besides the columns.
EXTRA_FIELDS = ("last_seen",)
_TIMES = ("valid_at", "invalid_at", "created_at", "expired_at")
_LISTS = ("source_ids", "tags", "paths", "conflicts_with")
_FLOATS = ("salience", "confidence")
#: Numbers that may be absent (the gate's signals: null before schema 3 and on facts).
_OPTIONAL_FLOATS = ("novelty", "event_salience", "prediction_error")
_REQUIRED = ("id", "kind", "project", "content", "valid_at", "created_at")
_BATCH = 500


# ---------------------------------------------------------------------------- export


def _time_text(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def export_lines(store: MemoryStore) -> Iterator[str]:
    """One JSON line per row (no trailing newline), ordered by id."""
    table = store._table.search().select(EXPORT_COLUMNS).limit(SCAN_LIMIT).to_arrow().sort_by("id")
    usage = store.usage.latest()
    for row in table.to_pylist():
        record = MemoryRecord.from_row(row).with_usage(usage.get(row["id"]))
        out: dict[str, Any] = {}
        for name in EXPORT_COLUMNS:
            value = getattr(record, name)
            if name in _TIMES:
                value = _time_text(value)
            elif name in _FLOATS or (name in _OPTIONAL_FLOATS and value is not None):
                value = float(value)
            elif name == "anchors":
                value = dict(sorted(value.items()))
            out[name] = value
        if record.usage is not None and record.usage.seen_at is not None:
            out["last_seen"] = _time_text(record.usage.seen_at)
        yield json.dumps(out, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------- import


def parse_line(line: str, number: int) -> MemoryRecord:
    """One export line as a record without a vector; InvalidInput names the line and the problem."""
    where = f"line {number}"
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(EXPORT_COLUMNS) - set(EXTRA_FIELDS))
    if unknown:
        raise InvalidInput(f"{where}: unknown column {unknown[0]!r} (not a chronomem export?)")
    missing = [c for c in _REQUIRED if data.get(c) is None]
    if missing:
        raise InvalidInput(f"{where}: {missing[0]} is missing")
    values: dict[str, Any] = {}
    for name in EXPORT_COLUMNS:
        value = data.get(name)
        if name == "anchors":
            value = value or {}
            if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
                raise InvalidInput(f"{where}: anchors must be an object of path → blob id")
        elif name in _TIMES:
            value = _parse_time(value, f"{where}: {name}")
        elif name in _LISTS:
            if value is None:
                value = []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidInput(f"{where}: {name} must be a list of strings")
        elif name in _FLOATS:
            if value is None:
                value = 1.0
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInput(f"{where}: {name} must be a number")
            value = float(value)
        elif name in _OPTIONAL_FLOATS and value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInput(f"{where}: {name} must be a number or null")
            value = float(value)
        elif value is not None and not isinstance(value, str):
            raise InvalidInput(f"{where}: {name} must be a string")
        values[name] = value
    if values["kind"] not in ("chunk", "fact"):
        raise InvalidInput(f"{where}: kind must be chunk or fact")
    seen = _parse_time(data.get("last_seen"), f"{where}: last_seen")
    if "anchors" not in data:  # a schema-1 export: its internal marks were `cm:` strings in `tags`
        values["tags"], values["anchors"], values["conflicts_with"], marked_seen = split_marks(values["tags"])
        seen = seen or marked_seen
    names = {f.name for f in fields(MemoryRecord)}
    record = MemoryRecord(**{k: v for k, v in values.items() if k in names})
    if seen is not None:
        record.usage = Usage(id=record.id, at=seen, seen_at=seen, hits=1)
    return record


def _parse_time(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{where} is not an ISO 8601 time: {value[:40]!r}") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{where} has no time zone")
    return parsed.astimezone(UTC)


def read_export(lines: Iterable[str]) -> list[MemoryRecord]:
    """Every record of an export, checked (JSON, columns, types, unique ids)."""
    records: list[MemoryRecord] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = parse_line(line, number)
        if record.id in seen:
            raise InvalidInput(f"line {number}: id {record.id} appears twice")
        seen.add(record.id)
        records.append(record)
    return records


def require_empty(store: MemoryStore) -> None:
    held = store.count()
    if held:
        raise StoreError(f"import needs an empty store, and {store.path} holds {held} rows: pass --store with a new directory")


def import_records(
    store: MemoryStore,
    records: Sequence[MemoryRecord],
    embed: Callable[[list[str]], list[list[float]]],
    progress: Callable[[int], None] | None = None,
    batch_size: int = 64,
    embed_model: str | None = None,
) -> int:
    """Embed `records` again and append them all in one commit; the store must be empty."""
    require_empty(store)
    count = append_records(store, records, embed, progress=progress, batch_size=batch_size, embed_model=embed_model)
    store.usage.append([r.usage for r in records if r.usage is not None])  # the last recall hits
    if count:
        store.optimize()
    return count


def append_records(
    store: MemoryStore,
    records: Sequence[MemoryRecord],
    embed: Callable[[list[str]], list[list[float]]],
    progress: Callable[[int], None] | None = None,
    batch_size: int = 64,
    commit_rows: int | None = None,
    embed_model: str | None = None,
) -> int:
    """Embed the records' content and append them: in one commit, or one per `commit_rows` rows.

    Rows record `embed_model` (the embedder's name, e.g. its int8 copy's) as the model that made their
    vectors, the store's configured model when it is not given.

    The bulk path behind `import_records` and eval/bench_latency.py. Each commit's texts are
    embedded shortest first, so a batch pads to a length close to its own texts' (mixed
    lengths in one batch cost up to 2.4x the embedding time), and written in the given
    order. Does not refresh the indexes: new rows are searched flat until `optimize()`.
    """
    step = commit_rows if commit_rows and commit_rows > 0 else max(len(records), 1)
    written = 0
    for start in range(0, len(records), step):
        part = records[start : start + step]
        order = sorted(range(len(part)), key=lambda i: len(part[i].content))
        vectors: list[list[float] | None] = [None] * len(part)
        for at in range(0, len(order), batch_size):
            chosen = order[at : at + batch_size]
            for i, vector in zip(chosen, embed([part[i].content for i in chosen]), strict=True):
                vectors[i] = list(vector)
            if progress is not None:
                progress(len(chosen))
        made_by = embed_model or store.embed_model
        store.add([r.copy(vector=v, embed_model=made_by) for r, v in zip(part, vectors, strict=True)])
        written += len(part)
    return written


# ---------------------------------------------------------------------------- purge


@dataclass
class PurgePlan:
    """What a purge does: rows to delete, and surviving rows whose `reason` quotes them (to be blanked)."""

    rows: list[MemoryRecord]
    scrub_reasons: list[str]

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rows]


@dataclass
class PurgeReport:
    removed: int
    kept: int
    reasons_scrubbed: int


#: What a surviving row's `reason` becomes when it quoted purged text.
SCRUBBED_REASON = "(reason removed by purge)"


def _chunks(items: Sequence[str], size: int = _BATCH) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _find_ids(store: MemoryStore, ids: Iterable[str]) -> list[MemoryRecord]:
    out: list[MemoryRecord] = []
    for part in _chunks(sorted(set(ids))):
        out.extend(store.find(Filter().ids(part)))
    return out


def with_dependents(store: MemoryStore, seeds: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """`seeds` plus every revision of them (either way along `revision_of`) and every fact derived from them."""
    found: dict[str, MemoryRecord] = {r.id: r for r in seeds}
    frontier = list(found)
    usage = store.usage.latest()
    while frontier:
        new: list[MemoryRecord] = []
        for part in _chunks(frontier):
            new.extend(store.find(Filter().revision_of(part)))
            new.extend(store.find(Filter().derived_from(part)))
            wanted = set(part)  # facts a purged chunk restated (their usage names it)
            new.extend(_find_ids(store, [i for i, u in usage.items() if wanted.intersection(u.restated_by)]))
        parents = [found[i].revision_of for i in frontier if found[i].revision_of]
        new.extend(_find_ids(store, [p for p in parents if p not in found]))
        frontier = []
        for row in new:
            if row.id not in found:
                found[row.id] = row
                frontier.append(row.id)
    return sorted(found.values(), key=lambda r: r.id)


def plan_purge(
    store: MemoryStore,
    *,
    ids: Sequence[str] = (),
    projects: Sequence[str] = (),
    query: str | None = None,
    query_projects: Sequence[str] | None = None,
) -> PurgePlan:
    """Rows to remove — by id, whole projects, or a case-insensitive substring of the text — with their
    revisions and derived facts; and the surviving rows whose `reason` names one of them or holds the text
    (a superseded fact's reason quotes its successor's value)."""
    seeds: dict[str, MemoryRecord] = {}
    if ids:
        rows = _find_ids(store, ids)
        missing = sorted(set(ids) - {r.id for r in rows})
        if missing:
            raise NotFound(f"no memory has id {missing[0]}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        seeds.update((r.id, r) for r in rows)
    for project in projects:
        seeds.update((r.id, r) for r in store.find(Filter().projects([project])))
    if query is not None:
        needle = query.casefold()
        if not needle.strip():
            raise InvalidInput("--query is empty")
        flt = Filter().projects(query_projects) if query_projects is not None else Filter()
        for row in store.find(flt):
            if any(needle in (text or "").casefold() for text in (row.content, row.subject, row.object)):
                seeds[row.id] = row
    rows = with_dependents(store, list(seeds.values())) if seeds else []
    gone = {r.id for r in rows}
    needle = query.casefold() if query else None
    scrub = [
        r.id
        for r in store.find(Filter())
        if r.id not in gone
        and r.reason
        and (any(i in r.reason for i in gone) or (needle is not None and needle in r.reason.casefold()))
    ]
    return PurgePlan(rows=rows, scrub_reasons=scrub)


def erase(store: MemoryStore, plan: PurgePlan) -> PurgeReport:
    """Rewrite the table without the plan's rows (and with its reasons blanked), rebuild its indexes and
    drop every older version and stray file.

    The caller holds the store's write lock. Other processes reading the store may fail one
    read while their old version disappears; their next read opens the new one.
    """
    if store.remote:
        return _erase_shared(store, plan)
    table = store._table
    indexes = list(table.list_indices())
    everything = table.to_arrow()
    keep = _without(everything, plan)
    # Recorded first, so that no repair brings these rows back from an old data file, even one a crashed or
    # failed clean-up left on disk (storage/salvage.py reads files no manifest references).
    from chronomem.storage.salvage import record_dropped

    record_dropped(store.path, plan.ids)
    table.add(keep, mode="overwrite")
    store.usage.erase(plan.ids)  # what recall hits and restatements recorded about them goes too
    _rebuild_indexes(store, indexes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LanceDB warns that cleanup_older_than=0 ends old readers: intended
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    # The backups hold the purged text too: they go, and the purged table is backed up afresh.
    from chronomem.storage import ledger
    from chronomem.storage.backup import drop_backups, take_backup

    store._now_at()
    ledger.rebase(store.path, int(table.version), int(table.count_rows()))
    if drop_backups(store.path) and keep.num_rows:
        take_backup(store)
    return PurgeReport(
        removed=everything.num_rows - keep.num_rows, kept=keep.num_rows, reasons_scrubbed=len(plan.scrub_reasons)
    )


def _erase_shared(store: MemoryStore, plan: PurgePlan) -> PurgeReport:
    """The purge of a store in object storage, which servers on other machines write (storage/remote.py).

    The caller holds the write lease every writer commits under, and each commit here is fenced by it. Still no
    overwrite: an overwrite never conflicts in Lance, so a commit landing between its read and its own commit (a
    writer whose lease lapsed while it stalled) would be dropped silently. Instead every step is a commit Lance
    checks against concurrent ones — an append landing meanwhile is kept, a conflicting change fails loudly:
    delete the rows, blank the reasons that quote them, compact every fragment holding a deleted row (its file
    is rewritten without it: `materialize_deletions_threshold=0`), rebuild the full-text and vector indexes
    (they hold the purged words and vectors), then drop every old version with `delete_unverified=False`:
    the files old versions reference go (the purged text is in those), while files no version references yet
    and younger than Lance's grace period (7 days) stay — another writer's commit in flight, which deleting
    would corrupt. There is no ledger, drop record or backup beside a shared store to update; the acknowledgement
    record in the bucket (storage/groupcommit.py) is told which ids were purged, so `doctor` does not call them lost."""
    table = store._table
    indexes = list(table.list_indices())
    before = int(table.count_rows())
    ids = sorted(set(plan.ids))
    for start in range(0, len(ids), 500):
        store._guard(lambda part=ids[start : start + 500]: table.delete(Filter().ids(part).sql()))  # type: ignore[misc]
    blank = sorted(set(plan.scrub_reasons))
    for start in range(0, len(blank), 500):
        part = blank[start : start + 500]
        store._guard(lambda part=part: table.update(where=Filter().ids(part).sql(), values={"reason": SCRUBBED_REASON}))  # type: ignore[misc]
    store.fence()
    table.to_lance().optimize.compact_files(materialize_deletions=True, materialize_deletions_threshold=0.0)
    table.checkout_latest()
    store.usage.erase(ids)
    store.fence()
    _rebuild_indexes(store, indexes, replace_fts=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LanceDB warns that cleanup_older_than=0 ends old readers: intended
        store._guard(lambda: table.optimize(cleanup_older_than=timedelta(0), delete_unverified=False))
    store._now_at()
    kept = int(table.count_rows())
    from chronomem.storage.groupcommit import record_purged
    from chronomem.storage.remote import objects_of

    record_purged(objects_of(store.path), ids)  # type: ignore[arg-type]  # doctor no longer expects them
    return PurgeReport(removed=before - kept, kept=kept, reasons_scrubbed=len(blank))


def _without(everything: Any, plan: PurgePlan) -> Any:
    """The rows of the Arrow table `everything` less the plan's, with the reasons it names blanked."""
    import pyarrow as pa
    import pyarrow.compute as pc

    drop = pa.array(sorted(set(plan.ids)), type=pa.string())
    keep = everything.filter(pc.invert(pc.is_in(everything.column("id"), value_set=drop)))
    if plan.scrub_reasons:
        blank = set(plan.scrub_reasons)
        reasons = [
            SCRUBBED_REASON if row_id in blank else reason
            for row_id, reason in zip(keep.column("id").to_pylist(), keep.column("reason").to_pylist(), strict=True)
        ]
        position = keep.schema.get_field_index("reason")
        keep = keep.set_column(position, keep.schema.field("reason"), pa.array(reasons, type=pa.string()))
    return keep


def _rebuild_indexes(store: MemoryStore, indexes: Sequence[Any], replace_fts: bool = False) -> None:
    """An overwrite drops the indexes: build again the full-text one (`replace_fts`: also when it is there, as
    after a delete: it holds the deleted rows' words), the vector one if there was one, and any scalar index;
    anything else is left to the consolidator, which recreates what it wants."""
    table = store._table
    if replace_fts:
        from lancedb.index import FTS

        table.create_index("content", config=FTS(), replace=True)
    store.ensure_indexes()
    for index in indexes:
        if index.name in (FTS_INDEX, OLD_FTS_INDEX) or not index.columns:
            continue
        kind = str(index.index_type).upper().replace("LABELLIST", "LABEL_LIST")
        try:
            if index.name == VECTOR_INDEX_NAME:
                store.build_vector_index()
            elif kind in ("BTREE", "BITMAP", "LABEL_LIST"):
                table.create_scalar_index(index.columns[0], index_type=kind, replace=True)
            else:
                log.warning("index %s was not rebuilt after the purge; upkeep recreates the indexes it needs", index.name)
        except Exception as exc:  # a purge must still finish: the data is already gone
            log.warning("index %s was not rebuilt after the purge: %s", index.name, exc)
