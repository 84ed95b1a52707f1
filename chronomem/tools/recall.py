"""`recall`: the best live facts and chunks for a query, now — or nothing, said plainly."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chronomem.config import MAX_LIMIT, MAX_QUERY_CHARS
from chronomem.errors import InvalidInput
from chronomem.retrieval.rank import QueryInfo
from chronomem.retrieval.search import hybrid_search
from chronomem.retrieval.temporal import read_time
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso
from chronomem.tools.results import MemoryItem, RecallResult
from chronomem.tools.validate import bounded_int, require_text

KINDS = ("fact", "chunk")


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
) -> RecallResult:
    """Search the slice live at (`at`, `known_at`) — shared by recall and as_of.

    A dated phrase in the query ("on May 10, 2024", "in March") is taken off the text
    and, unless the caller fixed the moment (`narrow_to_phrase=False`), moves `at` back to it.
    """
    text = require_text(query, "query", MAX_QUERY_CHARS)
    count = bounded_int(limit, "limit", 1, MAX_LIMIT)
    budget = None if budget_tokens is None else bounded_int(budget_tokens, "budget_tokens", 1, 1_000_000)
    wanted = _kinds(kinds)
    projects = svc.scope_projects(project, scope)

    reading = read_time(text, svc.now())
    if reading.at is not None and narrow_to_phrase:
        at = min(reading.at, at)
    flt = Filter().live(at, known_at)
    if projects is not None:
        flt = flt.projects(projects)
    if wanted != KINDS:
        flt = flt.kinds(wanted)
    names = svc.project_names()
    searched = tuple(names.get(p, p) for p in projects) if projects is not None else tuple(names.values())
    info = QueryInfo(
        text=reading.text,
        intent=reading.intent,
        project_names=searched,
        other_project_names=tuple(n for p, n in names.items() if n not in searched),
    )
    vector = svc.embed_one(reading.text)
    outcome = hybrid_search(svc.store, info, vector, flt, count, budget)
    items = [MemoryItem.of(h.record, h.score, h.channels) for h in outcome.hits]
    where = "all projects" if projects is None else ", ".join(projects)
    if outcome.abstained:
        message = f"Nothing relevant is stored for {text!r} in {where}"
        message += f" ({outcome.reason})." if outcome.reason else "."
    elif not items:
        message = f"Relevant memories exist for {text!r} but none fit budget_tokens={budget}."
    else:
        noun = "memory" if len(items) == 1 else "memories"
        message = f"{len(items)} {noun} for {text!r} in {where}"
        if outcome.truncated:
            message += f" (more left out to stay within {budget} tokens)"
        message += ":"
    return RecallResult(
        query=text,
        projects=projects,
        at=iso(at) or "",
        known_at=iso(known_at) or "",
        abstained=outcome.abstained,
        message=message,
        results=items,
        tokens=outcome.tokens,
        truncated=outcome.truncated,
    )


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
    query: Any,
    *,
    project: str | None = None,
    scope: str = "project",
    limit: Any = 10,
    budget_tokens: Any = None,
    kinds: Any = None,
) -> RecallResult:
    """Live facts and chunks relevant to `query` now, best first."""
    now = svc.now()
    return search_slice(
        svc, query, at=now, known_at=now, project=project, scope=scope, limit=limit, budget_tokens=budget_tokens, kinds=kinds
    )
