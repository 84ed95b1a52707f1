"""`timeline`: a fact slot's supersession chain laid out for drawing on a time axis.

Built on `history` (the same chain, the same statuses): each value becomes one bar over its
valid time (`start` → `end`, open while it holds), with the moment chronomem first learned it
(`learned_at`: the transaction time of the row as first written, not of a later revision that
closed it), what ended it (`ended_by`: the fact that superseded it and who stated that fact, or a
`forget` with its reason) and the verbatim note it came from. The page (server/ui.py) and
`chronomem history … --plot` (plot.py) draw the same bars.

A slot is named by a fact id, by subject + predicate, or by a query: the best live fact `recall`
returns for it (the same ranking the agent gets), else the best fact `as_of` finds among every
value ever valid — so a slot whose last value was forgotten is still found.

Not an MCP tool: `history` is the agent's view of the same chain.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from chronomem.errors import NotFound
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso
from chronomem.tools.browse import written_by
from chronomem.tools.history import history, search_history
from chronomem.tools.lookup import original_id
from chronomem.tools.recall import recall
from chronomem.tools.results import HistoryEntry
from chronomem.tools.validate import memory_id


class Bar(BaseModel):
    """One value of the slot over its valid time."""

    id: str = Field(description="The fact's id as first stored: the id recall's `supersedes` names for an ended value")
    row_id: str | None = Field(default=None, description="The row that carries its interval now (a revision row once it ended)")
    value: str = Field(description="The value (the fact's object)")
    status: str = Field(description="current, ended, retracted or pending (as history says)")
    start: str = Field(description="valid from")
    end: str | None = Field(default=None, description="valid until; null while it holds")
    learned_at: str = Field(description="When chronomem first recorded it (transaction time)")
    retracted_at: str | None = Field(default=None, description="When it was retracted as never true")
    source: str = Field(description="Who stated it: agent, rules, llm or import")
    by: str | None = Field(default=None, description="Who wrote it, when its tags say: a team client or the person on the page")
    commit: str | None = None
    ended_by: str | None = Field(default=None, description="The fact that superseded it (its first id)")
    ended_by_source: str | None = Field(default=None, description="Who stated the superseding fact (`by` when known, else its source)")
    cause: str | None = Field(default=None, description="Why it ended: the reason recorded with it")
    note_id: str | None = Field(default=None, description="The note (chunk) it was derived from")
    note: str | None = Field(default=None, description="That note, verbatim")


class TimelineResult(BaseModel):
    project: str
    subject: str
    predicate: str
    bars: list[Bar] = Field(description="Oldest first, one per value")
    now: str
    message: str

    def text(self) -> str:
        lines = [self.message]
        for b in self.bars:
            lines.append(f"  {b.start[:10]} → {(b.end or 'now')[:10]}  {b.value!r}  [{b.status}]")
        return "\n".join(lines)


def timeline(
    svc: MemoryService,
    id: Any = None,
    *,
    subject: Any = None,
    predicate: Any = None,
    query: Any = None,
    project: str | None = None,
) -> TimelineResult:
    """The bars of the slot named by fact `id`, by `subject` + `predicate`, or by `query` (see the module)."""
    if (id is None or id == "") and subject is None and predicate is None and query:
        id = find_fact(svc, query, project)
    chain = history(svc, memory_id(id) if id else None, subject=subject, predicate=predicate, project=project)
    if chain.kind != "fact" or chain.subject is None or chain.predicate is None:
        raise NotFound(f"{id} is a note, not a fact: a timeline draws a fact's values")
    store = svc.store
    by_id = {e.id: e for e in chain.entries}
    rows = {r.id: r for r in store.find(Filter().ids([e.id for e in chain.entries]))}
    notes = _notes(svc, [r.source_ids for r in rows.values()])
    firsts = {e.id: _first(store, rows.get(e.id)) for e in chain.entries}
    bars = []
    for entry in chain.entries:
        row = rows.get(entry.id)
        first = firsts[entry.id]
        successor = by_id.get(entry.superseded_by or "")
        successor_row = rows.get(successor.id) if successor else None
        note_id = next(iter(row.source_ids), None) if row is not None else None
        bars.append(
            Bar(
                id=first.id if first else entry.id,
                row_id=entry.id,
                value=entry.object if entry.object is not None else entry.text,
                status=entry.status,
                start=entry.valid_at,
                end=entry.invalid_at,
                learned_at=iso(first.created_at) or entry.created_at if first else entry.created_at,
                retracted_at=entry.expired_at if entry.status == "retracted" else None,
                source=entry.source,
                by=written_by(row.tags) if row is not None else None,
                commit=entry.commit,
                ended_by=_first_id(firsts, entry.superseded_by),
                ended_by_source=(written_by(successor_row.tags) if successor_row else None) or (successor.source if successor else None),
                cause=_cause(entry),
                note_id=note_id,
                note=notes.get(note_id or ""),
            )
        )
    return TimelineResult(
        project=chain.project, subject=chain.subject, predicate=chain.predicate, bars=bars, now=iso(svc.now()) or "",
        message=chain.message,
    )


def _first(store: Any, row: Any) -> Any:
    """The row as first stored (itself when never revised)."""
    if row is None or not row.revision_of:
        return row
    return store.get(original_id(store, row))


def _first_id(firsts: dict[str, Any], row_id: str | None) -> str | None:
    """The first id of the chain's row `row_id` (recall's `supersedes` names that one)."""
    if row_id is None:
        return None
    first = firsts.get(row_id)
    return first.id if first is not None else row_id


def find_fact(svc: MemoryService, query: Any, project: str | None) -> str:
    """The id of the fact `query` is about: recall's best live fact, else as_of's best among past values."""
    found = recall(svc, query, project=project, kinds=["fact"], limit=1)
    if found.results:
        return found.results[0].id
    past = search_history(svc, query, project, limit=1, kinds=["fact"])
    if past.results:
        return past.results[0].id
    raise NotFound(f"no fact matches {str(query)[:80]!r}: try other words, or pass --subject and --predicate")


def _cause(entry: HistoryEntry) -> str | None:
    """Why a value ended, as recorded (the consolidator's "superseded by …", a forget's reason)."""
    if entry.status == "current" or not entry.reason:
        return None
    return entry.reason


def _notes(svc: MemoryService, sources: list[list[str]]) -> dict[str, str]:
    """The notes the chain's facts were derived from, verbatim, by id."""
    ids = sorted({sid for ids in sources for sid in ids})
    if not ids:
        return {}
    return {r.id: r.content for r in svc.store.find(Filter().ids(ids))}
