"""`recall`: the best live facts and chunks for a query, now — or nothing, said plainly.

Code anchors (chronomem/codebase.py): a result of the call's own project that is anchored to
files whose content has changed since it was written (or that were deleted) carries `stale`
naming them, and is demoted (score × `RankConfig.stale_penalty`, `search.demote_stale`) before
`limit` and the budget apply. The files are hashed at most once per call, and only when a
candidate has anchors.

`recall(paths=[…])` answers what is known about those files, for an agent about to edit them:
the live memories whose stored paths (or anchored files) match any of the given paths — equal,
a glob either way (fnmatch, so `*` also crosses `/`), or a directory holding the other — ranked
by the query when one is given, else newest first (stale ones after the rest). The given paths
are read relative to the repository like `remember`'s. Matching runs in Python over the slice's
rows that have paths, at most `PATH_SCAN_LIMIT` of them.

An empty answer for a `project` the caller named that holds no memories at all says so instead, naming
the projects that do (`MemoryService.empty_project_note`); history and entity do the same.

`SPEC` is the tool as MCP publishes it (title, description for the model, hints, input schema,
the alias `k` for `limit`); the CLI and `as_of` call the functions directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from chronomem.codebase import Codebase, StalenessCheck, normalise_query_path, path_matches
from chronomem.config import MAX_LIMIT, MAX_QUERY_CHARS
from chronomem.consolidate.slots import slot_matcher
from chronomem.errors import InvalidInput
from chronomem.project import GLOBAL
from chronomem.records import MemoryRecord
from chronomem.retrieval.fusion import estimate_tokens
from chronomem.retrieval.pipeline import Hit, SearchOutcome, demote_stale, hybrid_search, within_budget
from chronomem.retrieval.rank import DEFAULT_CONFIG, NEVER_MENTIONED, NOTHING_IN_SLICE, QueryInfo
from chronomem.retrieval.temporal import TimeReading, read_time
from chronomem.search.engine import Search
from chronomem.search.terms import without_name
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso
from chronomem.tools.results import MemoryItem, RecallResult, Stale
from chronomem.tools.spec import Budget, Hints, Kinds, Limit, Project, Scope, ToolSpec, default
from chronomem.tools.validate import bounded_int, require_text, string_list

KINDS = ("fact", "chunk")
#: Longest stretch of the query a result message quotes.
MAX_QUOTED = 120
#: Most rows with paths that `recall(paths=…)` reads from the slice before matching them in Python.
PATH_SCAN_LIMIT = 20_000


class Anchors:
    """Staleness of the results of one call: only rows of the call's own project, files hashed once."""

    def __init__(self, svc: MemoryService, project: str | None) -> None:
        self._svc = svc
        self._project = project
        self._own: str | None = None
        self._check: StalenessCheck | None = None
        self.found: dict[str, Stale] = {}

    def stale(self, record: MemoryRecord) -> Stale | None:
        anchors = record.anchors
        if not anchors:
            return None
        if record.id in self.found:
            return self.found[record.id]
        if self._check is None:
            self._own = self._svc.project(self._project)
            self._check = StalenessCheck(Codebase.at(self._svc.workdir(self._project)))
        if record.project != self._own:
            return None  # its paths are relative to another project's files
        changed = self._check(anchors)
        if not changed:
            return None
        info = self.found[record.id] = Stale.of(changed, record.commit)
        return info

    def demote(self, hits: list[Hit]) -> list[Hit]:
        """The adjust step of the search: mark the stale hits and move them down (search.demote_stale)."""
        stale = {h.record.id for h in hits if self.stale(h.record) is not None}
        return demote_stale(hits, stale, DEFAULT_CONFIG.stale_penalty) if stale else hits


def search_slice(
    svc: MemoryService,
    query: Any,
    *,
    at: datetime,
    known_at: datetime,
    project: str | None,
    scope: str,
    limit: Any,
    budget_tokens: Any,
    kinds: Any,
    narrow_to_phrase: bool = True,
    check_anchors: bool = False,
    preface: str = "",
    intent: str | None = None,
) -> RecallResult:
    """Search the slice live at (`at`, `known_at`) — shared by recall, as_of and history by query.

    A dated phrase in the query ("on May 10, 2024", "in March") is taken off the text
    and, unless the caller fixed the moment (`narrow_to_phrase=False`), moves `at` back to it — unless
    nothing at all was stored by then: then it dates what a memory tells of, and `at` stays.
    A history question ("how has the port changed") searches every value valid by `at`,
    superseded ones included (still as recorded at `known_at`; retractions stay out).
    With `check_anchors` (recall: the slice is now) results whose files changed are marked and demoted.
    `preface` starts the message (as_of: which commit a ref named). `intent` is what the calling tool asks
    (`history`: every value, ended ones too), over what the query's words suggest.
    """
    text = require_text(query, "query", MAX_QUERY_CHARS)
    count = bounded_int(limit, "limit", 1, MAX_LIMIT)
    budget = None if budget_tokens is None else bounded_int(budget_tokens, "budget_tokens", 1, 1_000_000)
    wanted = _kinds(kinds)
    projects = svc.scope_projects(project, scope)

    reading = read_time(text, svc.now())
    if intent is not None:
        reading = replace(reading, intent=intent)
    ask = _Ask(text, reading, projects, wanted, count, budget, project, check_anchors)
    named = ask.reading.at
    if named is None or not narrow_to_phrase:
        return _named_project(svc, _search(svc, ask, at, known_at, None, preface)[1], project, scope)
    moment = min(named, at)
    since = ask.reading.since
    period = (since, moment) if since is not None and since <= moment else None
    outcome, result = _search(svc, ask, moment, known_at, period, preface)
    if outcome.abstained and outcome.reason == NOTHING_IN_SLICE:
        # Nothing at all was stored by the time the phrase names ("where did she move from 4 years ago", asked
        # of a store begun last year): the phrase dates what a memory tells of, not when it was recorded.
        note = f"Nothing was stored by {iso(moment)}, the time the query names; searched what holds at {iso(at)}. "
        result = _search(svc, ask, at, known_at, None, preface + note)[1]
    return _named_project(svc, result, project, scope)


def _named_project(svc: MemoryService, result: RecallResult, project: str | None, scope: str) -> RecallResult:
    """An empty answer for a `project` the caller named that holds no memories says so, naming those that do
    (`MemoryService.empty_project_note`): still an empty result, not an error — an agent may ask before it writes."""
    if result.results or scope not in ("project", "both"):
        return result
    note = svc.empty_project_note(project)
    if note is not None:
        result.message = note
        result.abstained = True
    return result


@dataclass(frozen=True)
class _Ask:
    """A validated query of `search_slice`, to search at one moment or another."""

    text: str
    reading: TimeReading
    projects: list[str] | None
    kinds: tuple[str, ...]
    count: int
    budget: int | None
    project: str | None
    check_anchors: bool


def _search(
    svc: MemoryService,
    ask: _Ask,
    at: datetime,
    known_at: datetime,
    period: tuple[datetime, datetime] | None,
    preface: str,
) -> tuple[SearchOutcome, RecallResult]:
    """One search of the slice live at (`at`, `known_at`) and the answer it makes.

    When the names gate finds a name of the query in no live memory, the memories that had ended by `at` are
    searched too, with the same query vector, before abstaining: a name that only ended memories mention was
    mentioned, and the answer is those memories, each showing when it ended, not "never mentioned".
    """
    info = _query_info(svc, ask.reading.text, ask.reading.intent, ask.projects, period)
    vector = svc.embed_one(info.text)
    where = "all projects" if ask.projects is None else ", ".join(ask.projects)
    subject = f"for {_shown(ask.text)}"
    anchors = Anchors(svc, ask.project) if ask.check_anchors else None
    item = _item_maker(anchors, scored=True)

    def run(ended_too: bool, preface: str) -> SearchOutcome:
        flt = Filter().known(known_at).began_by(at) if ended_too else Filter().live(at, known_at)
        if ask.projects is not None:
            flt = flt.projects(ask.projects)
        if ask.kinds != KINDS:
            flt = flt.kinds(ask.kinds)
        room, cost = _budget(ask.budget, ask.count, subject, where, item, preface)
        return hybrid_search(
            Search(svc.store, flt), info, vector, ask.count, room, cost=cost,
            adjust=anchors.demote if anchors is not None else None, slot_vectors=slot_matcher(svc).embed_phrases,
        )

    widened = ask.reading.intent == "history"  # every value it had by `at`, ended ones too
    outcome = run(widened, preface)
    if outcome.abstained and outcome.reason.startswith(NEVER_MENTIONED) and not widened:
        names = outcome.reason.removeprefix(NEVER_MENTIONED)
        note = f"Only memories that had ended by {iso(at)} mention {names}; each shows when it ended. "
        ended = run(True, preface + note)
        if not ended.abstained:
            outcome, preface = ended, preface + note
    base = dict(query=ask.text, projects=ask.projects, at=iso(at) or "", known_at=iso(known_at) or "")
    nothing = f"Nothing relevant is stored {subject} in {where}"
    nothing += f" ({outcome.reason})." if outcome.reason else "."
    return outcome, _respond(outcome, item, subject, where, ask.budget, nothing, base, preface)


def _query_info(
    svc: MemoryService,
    text: str,
    intent: str,
    projects: list[str] | None,
    period: tuple[datetime, datetime] | None = None,
) -> QueryInfo:
    """What ranking needs about the query; searching one project, the text loses that project's name."""
    names = svc.project_names()
    searched = tuple(names.get(p, p) for p in projects) if projects is not None else tuple(names.values())
    return QueryInfo(
        text=search_text(text, projects, names),
        intent=intent,
        project_names=searched,
        other_project_names=tuple(n for p, n in names.items() if n not in searched),
        now=svc.now(),
        period=period,
    )


def search_text(text: str, projects: list[str] | None, names: dict[str, str]) -> str:
    """`text` as the channels search it: without the project's name when one project is searched
    (with or without `global`), as `RankConfig.own_name_off` says; unchanged for several or all projects."""
    own = [p for p in projects or () if p != GLOBAL]
    if not DEFAULT_CONFIG.own_name_off or projects is None or len(own) != 1:
        return text
    return without_name(text, names.get(own[0], own[0]))


def _item_maker(anchors: Anchors | None, scored: bool) -> Callable[[Hit], MemoryItem]:
    def item(h: Hit) -> MemoryItem:
        stale = anchors.stale(h.record) if anchors is not None else None
        return MemoryItem.of(h.record, h.score if scored else None, h.channels, stale, h.note, h.note_record)

    return item


def _budget(
    budget: int | None, count: int, subject: str, where: str, item: Callable[[Hit], MemoryItem], preface: str = ""
) -> tuple[int | None, Callable[[Hit], int] | None]:
    """What the hits may spend of `budget` (after the heading line), and what one hit's numbered line costs."""
    if budget is None:
        return None, None
    # The budget covers the whole readable answer: the heading line, then each item's numbered line.
    heading = preface + _message(subject, where, count, budget, truncated=True, stale=count)
    room = budget - estimate_tokens(heading + "\n")
    return room, lambda h: estimate_tokens(f"{count}. {item(h).line()}\n")


def _respond(
    outcome: SearchOutcome,
    item: Callable[[Hit], MemoryItem],
    subject: str,
    where: str,
    budget: int | None,
    nothing: str,
    base: dict[str, Any],
    preface: str = "",
) -> RecallResult:
    items = [item(h) for h in outcome.hits]
    truncated = outcome.truncated
    while True:
        if outcome.abstained:
            message = nothing
        elif not items:
            message = f"Relevant memories exist for this query but none fit budget_tokens={budget}."
        else:
            stale = sum(1 for i in items if i.stale is not None)
            message = _message(subject, where, len(items), budget, truncated, stale)
        result = RecallResult(
            **base,
            abstained=outcome.abstained,
            message=preface + message,
            results=items,
            tokens=0,
            truncated=truncated,
        )
        rendered = estimate_tokens(result.text()) if items else 0
        if budget is None or not items or rendered <= budget:
            result.tokens = rendered
            return result
        items, truncated = items[:-1], True  # safety net: never more than the budget, whatever the rendering


def _shown(query: str) -> str:
    """The query as the message quotes it: at most `MAX_QUOTED` characters."""
    return repr(query if len(query) <= MAX_QUOTED else query[: MAX_QUOTED - 1] + "…")


def _message(subject: str, where: str, n: int, budget: int | None, truncated: bool, stale: int = 0) -> str:
    noun = "memory" if n == 1 else "memories"
    message = f"{n} {noun} {subject} in {where}"
    if truncated:
        message += f" (more left out to stay within {budget} tokens)"
    if stale:
        message += f" ({stale} stale: files they are about changed since)"
    return message + ":"


def _kinds(kinds: Any) -> tuple[str, ...]:
    if kinds is None:
        return KINDS
    if isinstance(kinds, str):
        kinds = [kinds]
    if not isinstance(kinds, list | tuple) or not kinds or any(k not in KINDS for k in kinds):
        raise InvalidInput("kinds must be a list drawn from 'fact' and 'chunk'")
    return tuple(k for k in KINDS if k in kinds)


def recall(
    svc: MemoryService,
    query: Any = None,
    *,
    paths: Any = None,
    project: str | None = None,
    scope: str = "project",
    limit: Any = 10,
    budget_tokens: Any = None,
    kinds: Any = None,
) -> RecallResult:
    """Live facts and chunks relevant to `query` now, best first; with `paths`, those about these files."""
    now = svc.now()
    given = string_list(paths, "paths")
    if given:
        return recall_paths(
            svc, given, query, project=project, scope=scope, limit=limit, budget_tokens=budget_tokens, kinds=kinds
        )
    if query is None:
        raise InvalidInput("query is required (or pass paths to recall what is known about those files)")
    if isinstance(query, str) and not query.strip():
        raise InvalidInput("query is empty (pass a query, or paths to recall what is known about those files)")
    return search_slice(
        svc,
        query,
        at=now,
        known_at=now,
        project=project,
        scope=scope,
        limit=limit,
        budget_tokens=budget_tokens,
        kinds=kinds,
        check_anchors=True,
    )


def about(record: MemoryRecord, asked: list[str]) -> bool:
    """Is `record` about any of the `asked` paths (by its stored paths or its anchored files)?"""
    mine = list(record.paths) + list(record.anchors)
    return any(path_matches(stored, given) for stored in mine for given in asked)


def recall_paths(
    svc: MemoryService,
    paths: list[str],
    query: Any = None,
    *,
    project: str | None = None,
    scope: str = "project",
    limit: Any = 10,
    budget_tokens: Any = None,
    kinds: Any = None,
) -> RecallResult:
    """The live memories about `paths`, ranked by `query` if given, else newest first."""
    text = None if query is None or (isinstance(query, str) and not query.strip()) else require_text(
        query, "query", MAX_QUERY_CHARS
    )
    count = bounded_int(limit, "limit", 1, MAX_LIMIT)
    budget = None if budget_tokens is None else bounded_int(budget_tokens, "budget_tokens", 1, 1_000_000)
    wanted = _kinds(kinds)
    projects = svc.scope_projects(project, scope)
    codebase = Codebase.at(svc.workdir(project))
    asked = list(dict.fromkeys(normalise_query_path(p, codebase) for p in paths))
    now = svc.now()

    flt = Filter().live(now, now).with_paths()
    if projects is not None:
        flt = flt.projects(projects)
    if wanted != KINDS:
        flt = flt.kinds(wanted)
    matched = [r for r in svc.store.find(flt, limit=PATH_SCAN_LIMIT) if about(r, asked)]

    anchors = Anchors(svc, project)
    where = "all projects" if projects is None else ", ".join(projects)
    subject = "about " + ", ".join(asked) + (f" matching {_shown(text)}" if text else "")
    ranked: list[Hit] = []
    if text and matched:
        reading = read_time(text, now)
        info = _query_info(svc, reading.text, reading.intent, projects)
        found = hybrid_search(Search(svc.store, flt.ids([r.id for r in matched])), info, svc.embed_one(info.text), len(matched))
        ranked = found.hits
    by_recency = sorted(matched, key=lambda r: (r.valid_at, r.created_at, r.id), reverse=True)
    hits = _fold(ranked + [Hit(r, 0.0) for r in by_recency])
    stale = {h.record.id for h in hits if anchors.stale(h.record) is not None}
    if ranked:
        scored = {h.record.id for h in ranked}
        head = demote_stale([h for h in hits if h.record.id in scored], stale, DEFAULT_CONFIG.stale_penalty)
        rest = [h for h in hits if h.record.id not in scored]
        hits = head + [h for h in rest if h.record.id not in stale] + [h for h in rest if h.record.id in stale]
    else:
        hits = [h for h in hits if h.record.id not in stale] + [h for h in hits if h.record.id in stale]

    scores = {h.record.id for h in ranked}

    def item(h: Hit) -> MemoryItem:
        return MemoryItem.of(h.record, h.score if h.record.id in scores else None, h.channels, anchors.stale(h.record))

    room, cost = _budget(budget, count, subject, where, item)
    outcome = within_budget(hits, count, room, cost)
    outcome.abstained = not matched
    base = dict(query=text, paths=asked, projects=projects, at=iso(now) or "", known_at=iso(now) or "")
    nothing = f"Nothing is stored about {', '.join(asked)} in {where}."
    return _named_project(svc, _respond(outcome, item, subject, where, budget, nothing, base), project, scope)


def _fold(hits: list[Hit]) -> list[Hit]:
    """Each memory once (first occurrence wins), and a chunk left out when a fact derived from it is listed."""
    seen: set[str] = set()
    unique = []
    for h in hits:
        if h.record.id not in seen:
            seen.add(h.record.id)
            unique.append(h)
    covered = {cid for h in unique if h.record.kind == "fact" for cid in h.record.source_ids}
    return [h for h in unique if h.record.kind != "chunk" or not ({h.record.id, h.record.revision_of} & covered)]


# ---------------------------------------------------------------------------------------------- over MCP


def mcp_arguments(
    query: Annotated[
        str | None, Field(description="What you want to know, in words or identifiers. Optional with `paths`.")
    ] = None,
    paths: Annotated[
        list[str] | None,
        Field(
            description="Files or globs (relative to the repository): return what is known about them, "
            "e.g. before editing them; ranked by `query` if given, else newest first."
        ),
    ] = None,
    limit: Limit = None,
    budget_tokens: Budget = None,
    scope: Scope = "project",
    kinds: Kinds = None,
    project: Project = None,
) -> dict[str, Any]:
    """`recall`'s MCP parameters (the input schema) as the handler's keyword arguments."""
    return {
        "query": query,
        "paths": paths,
        "project": project,
        "scope": scope,
        "limit": default(limit, 10),
        "budget_tokens": budget_tokens,
        "kinds": kinds,
    }


DESCRIPTION = """\
Look up what is currently true and remembered about this project.

Call it before answering questions about the project's setup, commands, conventions, decisions,
ports, owners or past bugs, e.g. query="how do we run the tests"; before editing files,
recall(paths=["src/auth/*.py"]) returns what is known about them.

Returns live facts and verbatim memories, best first, each with id, kind, text, valid/recorded
times, provenance, score and the channels that matched. When nothing relevant is stored it says
so and returns no results (abstained=true): do not guess then. Superseded values are not
returned (use `as_of` or `history` for the past), except when a name you ask about is mentioned
only by memories that have ended: then those come back, each with its invalid_at, and the message
says so. A result whose files changed since it was
written carries `stale` (which files) and is ranked lower: check it against the code.
It changes no memory's content or validity; being returned raises a memory's rank a little later."""

SPEC = ToolSpec(
    name="recall",
    title="Recall",
    description=DESCRIPTION,
    hints=Hints(read_only=True, destructive=False, idempotent=True),
    handler=recall,
    result=RecallResult,
    arguments=mcp_arguments,
    aliases={"k": "limit"},
    reinforces_hits=True,  # a recall hit is a sign the memory matters now (consolidate/salience.py)
)
