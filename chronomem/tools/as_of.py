"""`as_of`: answer from the slice valid at `at` as known at `known_at` (default now).

Git-aware time: `at` and `known_at` may also name a commit, tag (annotated tags are peeled)
or branch of the project's repository — "what was our deploy procedure as of v1.4.0?" — read
as that commit's committer time (chronomem/codebase.py). The order is: an ISO 8601 time or
now/today/yesterday; then, for a single token, a ref of the repository; then a phrase such as
"3 weeks ago" or "june". So a tag named `1.4` is the tag, not 2024-01-04, and a branch named
`june` wins over the month. When none of them reads, the error names both possibilities.
The result's `at_ref` / `known_at_ref` and its message give the ref, commit and time used.

`SPEC` is the tool as MCP publishes it (title, description for the model, hints, input schema,
the alias `k` for `limit`); the CLI calls `as_of` directly.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from chronomem.codebase import Codebase, NotARef, looks_like_ref, short
from chronomem.errors import InvalidInput
from chronomem.service import MemoryService
from chronomem.timeparse import EARLIEST, LATEST, exact_time, iso, parse_time
from chronomem.tools.recall import search_slice
from chronomem.tools.results import GitRef, RecallResult
from chronomem.tools.spec import Budget, Hints, Kinds, Limit, Project, Scope, ToolSpec, default

AT_HELP = "an ISO 8601 date such as 2024-05-01, a phrase like '3 weeks ago', or a git commit, tag or branch such as v1.4.0"


def read_moment(
    svc: MemoryService, value: Any, now: datetime, *, field: str, project: str | None
) -> tuple[datetime, GitRef | None]:
    """`value` as a time: an exact time, else a git ref of the project's repository, else a phrase."""
    exact = exact_time(value, now, field=field)
    if exact is not None:
        return exact, None
    raw = value.strip()
    reason = ""
    if looks_like_ref(raw):
        codebase = Codebase.at(svc.workdir(project))
        if codebase is None:
            reason = "the project has no directory on this machine to find a repository in"
        else:
            try:
                found = codebase.resolve_ref(raw)
            except NotARef as exc:
                reason = exc.reason
            else:
                if not EARLIEST <= found.time < LATEST:
                    raise InvalidInput(f"{field} {raw!r} names commit {short(found.commit)}, dated outside 1970..2199")
                return found.time, GitRef(ref=raw, commit=found.commit, time=iso(found.time) or "")
    try:
        return parse_time(raw, now, field=field), None
    except InvalidInput as exc:
        if "cannot read" not in str(exc):
            raise  # a time, but out of range
    tail = f" ({reason})" if reason else ""
    raise InvalidInput(
        f"cannot read {field} {raw!r}: it is neither a time (an ISO 8601 date or time such as 2024-05-01 or "
        f"2024-05-01T14:30:00Z, or a phrase like '3 weeks ago') nor a commit, tag or branch of the project's "
        f"git repository{tail}"
    )


def as_of(
    svc: MemoryService,
    query: Any,
    at: Any,
    *,
    known_at: Any = None,
    project: str | None = None,
    scope: str = "project",
    limit: Any = 10,
    budget_tokens: Any = None,
    kinds: Any = None,
) -> RecallResult:
    """What was true at `at` (a time, a phrase, or a git ref), as recorded by `known_at`."""
    if at is None or (isinstance(at, str) and not at.strip()):
        raise InvalidInput(f"at is required: {AT_HELP}")
    now = svc.now()
    at_time, at_ref = read_moment(svc, at, now, field="at", project=project)
    known_time, known_ref = read_moment(svc, known_at, now, field="known_at", project=project) if known_at else (now, None)
    notes = [
        f"{name} {ref.ref} = commit {short(ref.commit)} ({ref.time})"
        for name, ref in (("at", at_ref), ("known_at", known_ref))
        if ref is not None
    ]
    result = search_slice(
        svc,
        query,
        at=at_time,
        known_at=known_time,
        project=project,
        scope=scope,
        limit=limit,
        budget_tokens=budget_tokens,
        kinds=kinds,
        narrow_to_phrase=False,
        preface="; ".join(notes) + ". " if notes else "",
    )
    result.at_ref, result.known_at_ref = at_ref, known_ref
    return result


# ---------------------------------------------------------------------------------------------- over MCP


def mcp_arguments(
    query: Annotated[str, Field(description="What you want to know.")],
    at: Annotated[
        str,
        Field(
            description="The moment: ISO 8601 (2024-05-01, 2024-05-01T14:00Z), '3 weeks ago', or a git "
            "commit, tag or branch of the project (v1.4.0), read as its commit time."
        ),
    ],
    known_at: Annotated[
        str | None,
        Field(description="Answer as chronomem knew it then (transaction time; a time or a git ref). Default now."),
    ] = None,
    limit: Limit = None,
    budget_tokens: Budget = None,
    scope: Scope = "project",
    kinds: Kinds = None,
    project: Project = None,
) -> dict[str, Any]:
    """`as_of`'s MCP parameters (the input schema) as the handler's keyword arguments."""
    return {
        "query": query,
        "at": at,
        "known_at": known_at,
        "project": project,
        "scope": scope,
        "limit": default(limit, 10),
        "budget_tokens": budget_tokens,
        "kinds": kinds,
    }


DESCRIPTION = """\
Look up what was true at an earlier time, e.g. "what was the test command in March?"

Call it when the question is about the past or about a release: query="test command",
at="2024-03-15", or query="deploy procedure", at="v1.4.0" (a tag, commit or branch: its commit
time). Answers from the memories valid at `at` as recorded by `known_at` (default now),
including values that were superseded since; for what is true now, use `recall`.

Returns the same shape as `recall` (facts and memories with ids, valid/recorded times and
score, or abstained=true when nothing was known then), plus the git ref and commit `at` was
read as. Reads only."""

SPEC = ToolSpec(
    name="as_of",
    title="Recall as of a time",
    description=DESCRIPTION,
    hints=Hints(read_only=True, destructive=False, idempotent=True),
    handler=as_of,
    result=RecallResult,
    arguments=mcp_arguments,
    aliases={"k": "limit"},
)
