"""`projects_overview`: every project in the store with what a person checks first.

Per project: live memories (chunks and facts valid and recorded now), current facts, superseded
facts (facts whose valid time has ended, as recorded now: replaced or forgotten, kept for
`as_of` and `history`), the earliest valid time (where the page's time slider starts) and the
last write. Stale anchors (live memories whose anchored files changed since they were written,
as `recall` flags them) are counted only for the current project: other projects' files are not
known to be on this machine, so their count is null rather than a guess.

Read-only; filtered column scans through `chronomem.storage`, nothing embedded. Not an MCP tool.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from chronomem.codebase import Codebase, StalenessCheck
from chronomem.errors import ChronomemError
from chronomem.project import display_name
from chronomem.records import MemoryRecord
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso


class ProjectOverview(BaseModel):
    project: str
    name: str
    current: bool = Field(description="The project this process is scoped to")
    memories: int = Field(description="Live chunks and facts")
    current_facts: int
    superseded: int = Field(description="Facts whose validity ended (replaced or forgotten), still in history")
    stale_anchors: int | None = Field(description="Live memories whose files changed since; null when not checkable")
    rows: int = Field(description="Every row, history included")
    first_valid: str | None = Field(description="The earliest valid time of any memory")
    last_write: str | None


class ProjectsOverview(BaseModel):
    store: str
    now: str
    projects: list[ProjectOverview]

    def text(self) -> str:
        return "\n".join(
            f"{p.project}: {p.memories} memories, {p.current_facts} current facts, {p.superseded} superseded"
            for p in self.projects
        )


def projects_overview(svc: MemoryService) -> ProjectsOverview:
    """Counts for every project of the store, most recently written first."""
    now = svc.now()
    if not svc.settings.store_path.exists():
        return ProjectsOverview(store=str(svc.settings.store_path), now=iso(now) or "", projects=[])
    store = svc.store
    stats = store.project_stats(now)
    try:
        own = svc.project()
    except ChronomemError:
        own = None
    known = Filter().known(now)
    ended = {
        key: store.count(known.projects([key]).kinds(["fact"]).ended_by(now)) for key in stats
    }
    first: dict[str, str | None] = {}
    for key in stats:
        starts = store.columns(Filter().projects([key]), ["valid_at"])
        first[key] = iso(min(r["valid_at"] for r in starts)) if starts else None
    out = [
        ProjectOverview(
            project=key,
            name=display_name(key),
            current=key == own,
            memories=s["live_chunks"] + s["live_facts"],
            current_facts=s["live_facts"],
            superseded=ended[key],
            stale_anchors=_stale_count(svc, key) if key == own else None,
            rows=s["rows"],
            first_valid=first[key],
            last_write=iso(s["newest"]),
        )
        for key, s in sorted(stats.items(), key=lambda kv: (kv[1]["newest"] or now, kv[0]), reverse=True)
    ]
    return ProjectsOverview(store=str(svc.settings.store_path), now=iso(now) or "", projects=out)


def _stale_count(svc: MemoryService, project: str) -> int | None:
    """Live memories of `project` whose anchored files changed (recall's check); None without a checkout."""
    codebase = Codebase.at(svc.workdir())  # the current project's checkout (the only one called with)
    if codebase is None:
        return None
    now = svc.now()
    rows: list[MemoryRecord] = svc.store.find(Filter().live(now, now).projects([project]).with_paths())
    check = StalenessCheck(codebase)
    return sum(1 for r in rows if r.anchors and check(r.anchors))
