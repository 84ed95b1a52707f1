"""`history`: a fact slot's supersession chain, or a chunk's revisions, with their intervals.

Each entry carries `commit`: the project repository's HEAD when that row was written (null when
it was written outside a git repository), shown abbreviated beside the interval in the text.
"""

from __future__ import annotations

from typing import Any

from chronomem.errors import InvalidInput, NotFound
from chronomem.marks import conflicts_of
from chronomem.records import MemoryRecord, normalize_predicate, normalize_subject
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso
from chronomem.tools.lookup import get_or_fail, original_id
from chronomem.tools.results import HistoryEntry, HistoryResult
from chronomem.tools.validate import memory_id, require_text


def history(
    svc: MemoryService,
    id: Any = None,
    *,
    subject: Any = None,
    predicate: Any = None,
    project: str | None = None,
) -> HistoryResult:
    """The chain for memory `id`, or for the slot (`subject`, `predicate`) in `project`."""
    store = svc.store
    now = svc.now()
    if id is not None and id != "":
        record = get_or_fail(store, memory_id(id))
        if record.kind == "fact":
            assert record.subject is not None and record.predicate is not None
            scope, subj, pred = record.project, record.subject, record.predicate
        else:
            return _chunk_history(svc, record)
    else:
        if subject is None or predicate is None:
            raise InvalidInput("pass an id, or both subject and predicate")
        subj = normalize_subject(require_text(subject, "subject", 500))
        pred = normalize_predicate(require_text(predicate, "predicate", 200))
        scope = svc.project(project)

    rows = store.find(Filter().projects([scope]).slot(subj, pred))
    if not rows:
        raise NotFound(f"no facts for subject {subj!r} and predicate {pred!r} in project {scope}")
    revised = {r.revision_of for r in rows if r.revision_of}
    timeline = [r for r in rows if r.expired_at is None or r.id not in revised]
    originals = {r.id: original_id(store, r) for r in timeline}
    successor = {}
    for r in timeline:
        if r.supersedes:
            successor[r.supersedes] = r.id
    entries = [
        _entry(r, now, superseded_by=successor.get(r.id) or successor.get(originals[r.id]))
        for r in sorted(timeline, key=lambda r: (r.valid_at, r.created_at))
    ]
    current = [e for e in entries if e.status == "current"]
    head = f"{subj} · {pred} in {scope}: {len(entries)} value(s)"
    head += f", current {current[-1].object!r}" if current else ", none current"
    return HistoryResult(project=scope, kind="fact", subject=subj, predicate=pred, entries=entries, message=head + ".")


def _chunk_history(svc: MemoryService, record: MemoryRecord) -> HistoryResult:
    store = svc.store
    root = original_id(store, record)
    chain = store.find(Filter().ids([root]))
    frontier = [root]
    for _ in range(1000):
        children = store.find(Filter().revision_of(frontier))
        if not children:
            break
        chain.extend(children)
        frontier = [c.id for c in children]
    now = svc.now()
    entries = [_entry(r, now) for r in sorted(chain, key=lambda r: r.created_at)]
    return HistoryResult(
        project=record.project,
        kind="chunk",
        entries=entries,
        message=f"chunk {root} in {record.project}: {len(entries)} version(s) of the record.",
    )


def _entry(r: MemoryRecord, now: Any, superseded_by: str | None = None) -> HistoryEntry:
    if r.expired_at is not None:
        status = "revised" if r.reason and r.reason.startswith("revised as") else "retracted"
    elif r.valid_at > now:
        status = "pending"
    elif r.invalid_at is not None and r.invalid_at <= now:
        status = "ended"
    else:
        status = "current"
    return HistoryEntry(
        id=r.id,
        text=r.content,
        object=r.object,
        status=status,
        valid_at=iso(r.valid_at) or "",
        invalid_at=iso(r.invalid_at),
        created_at=iso(r.created_at) or "",
        expired_at=iso(r.expired_at),
        supersedes=r.supersedes,
        superseded_by=superseded_by,
        revision_of=r.revision_of,
        source=r.source,
        reason=r.reason,
        commit=r.commit,
        conflicts_with=conflicts_of(r.tags),
    )
