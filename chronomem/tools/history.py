"""`history`: a fact slot's supersession chain, or a chunk's revisions, with their intervals.

Each entry carries `commit`: the project repository's HEAD when that row was written (null when
it was written outside a git repository), shown abbreviated beside the interval in the text.

A slot asked of a `project` the caller named that holds no memories gives an empty chain whose message
says so and names the projects that do (`MemoryService.empty_project_note`), not NotFound.

`SPEC` is the tool as MCP publishes it (title, description for the model, hints, input schema,
the alias `memory_id` for `id`); the CLI calls `history` directly.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from chronomem.config import MAX_LIMIT
from chronomem.errors import InvalidInput, NotFound
from chronomem.records import MemoryRecord, differs_only_in_values, normalize_predicate, normalize_subject
from chronomem.retrieval.values import value_kinds
from chronomem.search.terms import mentioned, named_things
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso
from chronomem.tools.lookup import get_or_fail, original_id
from chronomem.tools.recall import search_slice
from chronomem.tools.results import HistoryEntry, HistoryResult, RecallResult
from chronomem.tools.spec import Hints, Project, ToolSpec
from chronomem.tools.validate import bounded_int, memory_id, require_text


#: How many memories a history by query tells (each fact found brings its chain's values, each one of them).
HISTORY_LIMIT = 10
#: A memory `history(query)` finds is told in the timeline when its relevance is at least this share of the best
#: match's (and it names what the best match names of the query); the rest follow by relevance. Tried on dev's 48
#: history questions (offline, on a built store): 0.7 (ranking's `newer_score_share`), 0.5, 0.3, 0 gave Kendall tau
#: 0.54 / 0.76 / 0.98 / 0.98 and history hit@1 0.60 / 0.52 / 0.29 / 0.25. At 0.5 the order mostly holds and the
#: first entry is still a value of the thing half the time; lower, other attributes of the thing lead the timeline.
TIMELINE_SHARE = 0.5


def history(
    svc: MemoryService,
    id: Any = None,
    *,
    subject: Any = None,
    predicate: Any = None,
    project: str | None = None,
    query: Any = None,
    limit: Any = HISTORY_LIMIT,
) -> HistoryResult:
    """The chain for memory `id`, for the slot (`subject`, `predicate`) in `project`, or for a free-text `query`."""
    store = svc.store
    now = svc.now()
    if query is not None and query != "":
        if any(v not in (None, "") for v in (id, subject, predicate)):
            raise InvalidInput("pass query, or an id, or subject and predicate: one of them")
        return _query_history(svc, query, project, limit)
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
    if not rows and (note := svc.empty_project_note(project)) is not None:
        # a project the caller named that holds nothing: said, with the projects that hold memories
        return HistoryResult(project=scope, kind="fact", subject=subj, predicate=pred, entries=[], message=note)
    if not rows:
        raise NotFound(f"no facts for subject {subj!r} and predicate {pred!r} in project {scope}")
    entries = _slot_entries(svc, rows, now)
    current = [e for e in entries if e.status == "current"]
    head = f"{subj} · {pred} in {scope}: {len(entries)} value(s)"
    head += f", current {current[-1].object!r}" if current else ", none current"
    return HistoryResult(project=scope, kind="fact", subject=subj, predicate=pred, entries=entries, message=head + ".")


def _slot_entries(svc: MemoryService, rows: list[MemoryRecord], now: Any) -> list[HistoryEntry]:
    """A slot's rows as its chain, oldest first: each value once (a revision stands for the row it closed)."""
    revised = {r.revision_of for r in rows if r.revision_of}
    timeline = [r for r in rows if r.expired_at is None or r.id not in revised]
    originals = {r.id: original_id(svc.store, r) for r in timeline}
    successor = {}
    for r in timeline:
        if r.supersedes:
            successor[r.supersedes] = r.id
    return [
        _entry(r, now, superseded_by=successor.get(r.id) or successor.get(originals[r.id]))
        for r in sorted(timeline, key=lambda r: (r.valid_at, r.created_at))
    ]


def _query_history(svc: MemoryService, query: Any, project: str | None, limit: Any) -> HistoryResult:
    """How what `query` asks about changed: recall's search over every value valid by now, ended ones too (the
    `history` intent, asked by the tool rather than read off the question's words), which puts the memories
    about the best match first, oldest first, then the rest by relevance; each fact found brings its slot's
    whole chain (oldest first) in its place."""
    now = svc.now()
    found = search_history(svc, query, project, limit)
    scope = found.projects[0] if found.projects else svc.project(project)
    entries: dict[str, HistoryEntry] = {}
    score_of: dict[str, float] = {}  # each entry's relevance: that of the result that brought it
    slots_done: set[tuple[str, str]] = set()
    for item in found.results:
        record = svc.store.get(item.id)
        if record is None:
            continue
        if record.kind == "fact" and record.subject and record.predicate:
            if (record.subject, record.predicate) in slots_done:
                continue
            slots_done.add((record.subject, record.predicate))
            rows = svc.store.find(Filter().projects([record.project]).slot(record.subject, record.predicate))
            found_entries = _slot_entries(svc, rows, now)
        else:
            found_entries = [_entry(record, now)]
        for entry in found_entries:
            entries.setdefault(entry.id, entry)
            score_of.setdefault(entry.id, item.score or 0.0)
    chosen = list(entries.values())[: bounded_int(limit, "limit", 1, MAX_LIMIT)]
    if not chosen:
        return HistoryResult(project=scope, kind="query", entries=[], message=found.message)
    projects = {p.lower() for p in svc.project_names().values()}
    timeline, rest = split_timeline(str(query), chosen, score_of, ignore=projects)
    ordered = timeline + rest
    head = f"{len(ordered)} memories about {query!r} in {scope}: the {len(timeline)} closest oldest first"
    return HistoryResult(project=scope, kind="query", entries=ordered, message=head + ".")


def search_history(svc: MemoryService, query: Any, project: str | None, limit: Any, kinds: Any = None) -> RecallResult:
    """Recall's search over every value valid by now, ended ones too (the `history` intent, asked by the tool
    rather than read off the question's words)."""
    now = svc.now()
    return search_slice(
        svc, query, at=now, known_at=now, project=project, scope="project", limit=limit, budget_tokens=None,
        kinds=kinds, intent="history",
    )


def split_timeline(
    query: str, chosen: list[HistoryEntry], score_of: dict[str, float], ignore: set[str]
) -> tuple[list[HistoryEntry], list[HistoryEntry]]:
    """What is about the query nearly as much as the best match, oldest first (a history is read in the order
    things happened), and the weaker matches after it by relevance. Pure: `score_of` gives each entry's relevance,
    `ignore` the names (projects) that tell nothing about what the query asks.

    The timeline begins where the best match's own history does (`_history_start`): a memory about the same thing
    from before that gives no value of the kind its history holds (another attribute of the thing: "exports-worker
    serves the exports module" in the history of exports-worker's port) follows by relevance instead of leading."""
    best = max(chosen, key=lambda e: score_of[e.id])
    bar = TIMELINE_SHARE * score_of[best.id]
    names = {n for n in named_things(query, ignore=ignore) if mentioned(n, best.text.lower())}

    def about_it(entry: HistoryEntry) -> bool:  # near the best match's relevance, naming what it names of the query
        text = entry.text.lower()
        return score_of[entry.id] >= bar and all(mentioned(n, text) for n in names)

    chain = _chain(best, chosen)
    chained = {e.id for e in chain}
    near = [about_it(e) or e.id in chained for e in chosen]
    timeline = sorted((e for e, in_it in zip(chosen, near, strict=True) if in_it), key=_when)
    start = _history_start(query, best, chain, timeline)
    if start is not None:
        timeline = [e for e in timeline if _when(e) >= _when(start)]
    told = {e.id for e in timeline}
    return timeline, [e for e in chosen if e.id not in told]


def _value_kinds(text: str, query: str) -> set[str]:
    """The kinds of the values a text gives (`values.value_kinds`) other than those the query names (a value the
    query names is the thing asked about, not a value of it). An address's port is a number too: the history of a
    port may begin at `localhost:6170`, before "rebound from port 6170 to 7940"."""
    asked = query.lower()
    out: set[str] = set()
    for kind, values in value_kinds(text).items():
        if any(v.lower() not in asked for v in values):
            out.add(kind)
        if kind == "address" and any(port not in asked for v in values for port in _PORT.findall(v)):
            out.add("number")
    return out


_PORT = re.compile(r":(\d{1,5})\b")


def _when(entry: HistoryEntry) -> tuple[str, str]:
    return entry.valid_at, entry.created_at


def _chain(best: HistoryEntry, chosen: list[HistoryEntry]) -> list[HistoryEntry]:
    """The best match and the memories that say the same words around other values, it or one of them: its updates
    by structure ("- Check: `uv run ruff check .`" → "- Check: `uv run --frozen ruff check .`"), in any wording."""
    chain = [best]
    for entry in chosen:
        if entry is not best and any(
            differs_only_in_values(m.text, entry.text) or differs_only_in_values(entry.text, m.text) for m in chain
        ):
            chain.append(entry)
    return chain


def _history_start(
    query: str, best: HistoryEntry, chain: list[HistoryEntry], timeline: list[HistoryEntry]
) -> HistoryEntry | None:
    """The oldest memory of the best match's history: of its chain when it has one, else of the timeline's memories
    that give a value of a kind the best match gives (values.py: a port is a number, a location a path;
    `_value_kinds`). None when the best match gives no value."""
    if len(chain) > 1:
        return min(chain, key=_when)
    wanted = _value_kinds(best.text, query)
    holding = [e for e in timeline if wanted & _value_kinds(e.text, query)] if wanted else []
    return min(holding, key=_when) if holding else None


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
        conflicts_with=list(r.conflicts_with),
    )


# ---------------------------------------------------------------------------------------------- over MCP


def mcp_arguments(
    id: Annotated[str | None, Field(description="Id of any memory in the chain.")] = None,
    subject: Annotated[str | None, Field(description="Fact subject (with predicate), instead of id.")] = None,
    predicate: Annotated[str | None, Field(description="Fact predicate (with subject), instead of id.")] = None,
    query: Annotated[
        str | None,
        Field(description="What to trace, in words, instead of id or subject+predicate: e.g. 'the payments port'."),
    ] = None,
    project: Project = None,
) -> dict[str, Any]:
    """`history`'s MCP parameters (the input schema) as the handler's keyword arguments."""
    return {"id": id, "subject": subject, "predicate": predicate, "project": project, "query": query}


DESCRIPTION = """\
Show how a fact changed over time: every value with its valid interval, oldest first.

Call it when asked when or why something changed, or to check a value recall returned, e.g.
history(subject="myproject", predicate="test_command") → pytest (Jan–Mar), then nox -s tests
(Mar–now). It also accepts the id of any memory from recall (for a plain memory: its revisions),
or a question in words: history(query="how has the payments port changed") returns the matching
chains and notes, ended ones too, oldest first. Ask `history` for how something changed; `recall`
answers what holds now.

Returns the entries with ids, valid and recorded times, what superseded what, why each ended,
which live facts disagree with it, and the git commit that was HEAD when each was written.
Reads only."""

SPEC = ToolSpec(
    name="history",
    title="History of a fact",
    description=DESCRIPTION,
    hints=Hints(read_only=True, destructive=False, idempotent=True),
    handler=history,
    result=HistoryResult,
    arguments=mcp_arguments,
    aliases={"memory_id": "id"},
)
