"""What the page (server/ui.py) shows without a query, and the marks it puts on every memory it shows.

- `recent`: a project's memories valid at a moment (default now) as recorded now, most recently
  recorded first, a page at a time — the page's landing list.
- `moments`: the distinct times a project's memories began or ended (valid time), oldest first —
  the stops of the page's `as of` slider, so a store whose memories span years but changed on a
  few days moves a day per step, not a year per pixel.
- `marks`: for memories as the tools return them, the id each was first stored under (a closed
  value lives on in a revision row; `recall`'s `supersedes` and the timeline name the first id, so
  the page shows that one everywhere) and, for a memory whose validity ended, how: replaced (by
  which memory) or forgotten, with the recorded reason — what the page shows on a result seen
  `as of` a moment before it ended.

Read-only; filtered scans through `chronomem.storage`, nothing embedded. Not an MCP tool.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from chronomem.errors import InvalidInput
from chronomem.records import MemoryRecord
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso, parse_time
from chronomem.tools.lookup import original_id
from chronomem.tools.results import MemoryItem

#: Memories per page of the landing list (the page asks for this many; at most MAX_PAGE).
PAGE = 20
MAX_PAGE = 100
#: Most stops the slider gets: beyond this many distinct times, evenly chosen ones (first and last kept).
MAX_MOMENTS = 1000
#: The tag a team client's or the page's person's name is recorded under (server/team.py's CLIENT_TAG).
CLIENT_TAG = "client:"


class Ended(BaseModel):
    """How a memory's validity ended."""

    at: str = Field(description="When it stopped being valid")
    how: str = Field(description="`replaced` (a later memory superseded it) or `forgotten` (ended by forget)")
    reason: str | None = Field(default=None, description="The reason recorded with it")
    by: str | None = Field(default=None, description="For `replaced`: the memory that replaced it (its first id)")


class Mark(BaseModel):
    id: str = Field(description="The id the memory was first stored under")
    row_id: str = Field(description="The row the tools returned (a revision row for a closed value)")
    status: str = Field(description="current, ended or pending (as of now)")
    ended: Ended | None = None
    by: str | None = Field(default=None, description="Who wrote it, when its tags say (`client:<name>`)")


class RecentPage(BaseModel):
    project: str
    at: str | None = Field(description="The moment listed (null: now)")
    total: int = Field(description="How many memories hold at that moment")
    offset: int
    limit: int
    results: list[dict[str, Any]] = Field(description="MemoryItem fields with the page's marks, newest first")


def written_by(tags: list[str] | tuple[str, ...]) -> str | None:
    """The name in a memory's `client:<name>` tag (a team client, or the person on the page), else None."""
    return next((t[len(CLIENT_TAG):] for t in tags if t.startswith(CLIENT_TAG) and len(t) > len(CLIENT_TAG)), None)


def recent(svc: MemoryService, project: str | None = None, at: Any = None, offset: Any = 0, limit: Any = PAGE) -> RecentPage:
    """The memories of `project` valid at `at` (default now), most recently recorded first, `limit` from `offset`."""
    now = svc.now()
    key = svc.project(project)
    start, size = _count(offset, "offset", 0, 10**9), _count(limit, "limit", 1, MAX_PAGE)
    moment = parse_time(at, now, field="at") if at not in (None, "") else now
    if not svc.settings.store_path.exists():
        return RecentPage(project=key, at=iso(moment) if at else None, total=0, offset=start, limit=size, results=[])
    rows = svc.store.columns(Filter().live(moment, now).projects([key]), ["id", "created_at"])
    rows.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
    chosen = [r["id"] for r in rows[start:start + size]]
    found = {r.id: r for r in svc.store.find(Filter().ids(chosen), limit=max(1, len(chosen)))} if chosen else {}
    records = [found[i] for i in chosen if i in found]
    items = [MemoryItem.of(r).model_dump(mode="json") for r in records]
    return RecentPage(
        project=key, at=iso(moment) if at else None, total=len(rows), offset=start, limit=size,
        results=with_marks(svc, items, records),
    )


def moments(svc: MemoryService, project: str | None = None) -> list[str]:
    """The distinct valid times (a memory began or ended) of `project` up to now, oldest first."""
    now = svc.now()
    key = svc.project(project)
    if not svc.settings.store_path.exists():
        return []
    rows = svc.store.columns(Filter().known(now).projects([key]), ["valid_at", "invalid_at"])
    times = sorted({t for r in rows for t in (r["valid_at"], r["invalid_at"]) if t is not None and t <= now})
    if len(times) > MAX_MOMENTS:
        step = (len(times) - 1) / (MAX_MOMENTS - 1)
        times = [times[round(i * step)] for i in range(MAX_MOMENTS)]
    return [iso(t) or "" for t in times]


def with_marks(svc: MemoryService, items: list[dict[str, Any]], records: list[MemoryRecord] | None = None) -> list[dict[str, Any]]:
    """`items` (MemoryItem dumps) with the page's marks: `id` the first id, `row_id`, `status`, `ended`, `by`."""
    if not items:
        return items
    if records is None:
        ids = [i["id"] for i in items]
        records = svc.store.find(Filter().ids(ids), limit=len(ids))
    marked = marks(svc, records)
    out = []
    for item in items:
        mark = marked.get(item["id"])
        out.append({**item, **mark.model_dump(mode="json")} if mark else {**item, "row_id": item["id"]})
    return out


def marks(svc: MemoryService, records: list[MemoryRecord]) -> dict[str, Mark]:
    """Each record's mark, by its row id."""
    store, now = svc.store, svc.now()
    first = {r.id: original_id(store, r) if r.revision_of else r.id for r in records}
    ended = [r for r in records if r.invalid_at is not None]
    successors: dict[str, str] = {}
    if ended:
        asked = sorted({i for r in ended for i in (r.id, first[r.id])})
        for s in store.find(Filter().superseding(asked), limit=max(100, 4 * len(asked))):
            if s.supersedes is not None:
                successors.setdefault(s.supersedes, original_id(store, s) if s.revision_of else s.id)
    out = {}
    for r in records:
        end = None
        if r.invalid_at is not None:
            by = successors.get(r.id) or successors.get(first[r.id])
            end = Ended(at=iso(r.invalid_at) or "", how="replaced" if by else "forgotten", reason=r.reason, by=by)
        out[r.id] = Mark(id=first[r.id], row_id=r.id, status=_status(r, now), ended=end, by=written_by(r.tags))
    return out


def _status(r: MemoryRecord, now: datetime) -> str:
    if r.valid_at > now:
        return "pending"
    if r.invalid_at is not None and r.invalid_at <= now:
        return "ended"
    return "current"


def _count(value: Any, name: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a whole number") from None
    if not low <= number <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}")
    return number
