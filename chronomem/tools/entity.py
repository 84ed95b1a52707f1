"""`entity`: an entity's views — counts, latest values, extremes — aggregated from the facts about it.

Answers what ranking notes cannot: how many times a test was reported flaky and when, the latest version of
a dependency, how many incidents a service had, the highest value ever stated. Each value lists the fact ids it
was computed from (pass them to `history`). `as_of` / `known_at` read the same bi-temporal slice as the `as_of`
tool. The views and operators are consolidate/entities.py's (built-in set plus the store's `entities.toml`).

`SPEC` is the tool as MCP publishes it; the CLI calls `entity` directly.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from chronomem.consolidate.entities import EntityValue, compute, load_views
from chronomem.errors import InvalidInput
from chronomem.records import normalize_subject
from chronomem.service import MemoryService
from chronomem.timeparse import iso
from chronomem.tools.as_of import AT_HELP, read_moment
from chronomem.tools.spec import Hints, Project, ToolSpec
from chronomem.tools.validate import require_text


class EntityView(BaseModel):
    view: str = Field(description="The view's name, e.g. flaky, version, incidents")
    entity: str = Field(description="What it is about (a fact's subject): a test, a dependency, a service")
    operator: str = Field(description="count, sum, max, min, avg, latest or time_compress")
    value: Any = Field(description="The aggregate: a number for count/sum/avg, a fact's value for latest/max/min")
    count: int = Field(description="How many statements it was computed from")
    first: str | None = Field(default=None, description="Valid time of the first statement")
    last: str | None = Field(default=None, description="Valid time of the last statement")
    fact_ids: list[str] = Field(description="The facts it was computed from (see `history`)")
    summary: str = Field(description="One readable line, e.g. 'tests/test_sync.py: flaky 3 times between … and …'")

    @classmethod
    def of(cls, value: EntityValue) -> EntityView:
        return cls(
            view=value.view, entity=value.entity, operator=value.operator, value=value.value, count=value.count,
            first=iso(value.first), last=iso(value.last), fact_ids=value.fact_ids, summary=value.summary,
        )


class EntityResult(BaseModel):
    entity: str | None = Field(description="The entity asked about; null = every entity of the views")
    project: str
    at: str = Field(description="Valid time of the slice")
    known_at: str = Field(description="Transaction time of the slice")
    views: list[EntityView]
    message: str

    def text(self) -> str:
        return "\n".join([self.message, *(f"  {v.summary}  [{', '.join(v.fact_ids)}]" for v in self.views)])


def entity(
    svc: MemoryService,
    name: Any = None,
    *,
    view: Any = None,
    as_of: Any = None,
    known_at: Any = None,
    project: str | None = None,
) -> EntityResult:
    """The views of entity `name` (or of every entity, for `view`) in `project`, as of (`as_of`, `known_at`)."""
    if (name is None or name == "") and (view is None or view == ""):
        raise InvalidInput("pass name (an entity such as a test, dependency or service) or view (e.g. flaky, version)")
    scope = svc.project(project)
    now = svc.now()
    at, _ = read_moment(svc, as_of, now, field="as_of", project=project) if as_of else (now, None)
    known, _ = read_moment(svc, known_at, now, field="known_at", project=project) if known_at else (now, None)
    views = load_views(svc)
    chosen = list(views.values())
    if view is not None and view != "":
        wanted = require_text(view, "view", 200).strip().lower()
        if wanted not in views:
            raise InvalidInput(f"no view named {wanted!r}; views: {', '.join(sorted(views))}")
        chosen = [views[wanted]]
    subject = normalize_subject(require_text(name, "name", 500)) if name not in (None, "") else None
    values = [EntityView.of(v) for v in compute(svc, scope, chosen, at, known, subject)]
    what = subject or "every entity"
    if values:
        message = f"{len(values)} view value{'s' if len(values) != 1 else ''} for {what} in project {scope}"
    elif (note := svc.empty_project_note(project)) is not None:  # a named project that holds nothing: said so
        return EntityResult(entity=subject, project=scope, at=iso(at) or "", known_at=iso(known) or "", views=[], message=note)
    else:
        message = f"No facts for {what} in project {scope} feed {'view ' + chosen[0].name if len(chosen) == 1 else 'any view'}"
    if as_of or known_at:
        message += f" as of {iso(at)}" + (f", known at {iso(known)}" if known_at else "")
    return EntityResult(entity=subject, project=scope, at=iso(at) or "", known_at=iso(known) or "", views=values, message=message + ".")


def mcp_arguments(
    name: Annotated[str | None, Field(description="The entity: a test id, dependency, service or module name.")] = None,
    view: Annotated[str | None, Field(description="One view (flaky, incidents, version, owner, port, or a declared one); default all.")] = None,
    as_of: Annotated[str | None, Field(description=f"Valid time to read at: {AT_HELP}. Default now.")] = None,
    known_at: Annotated[str | None, Field(description="Transaction time: as recorded by then. Default now.")] = None,
    project: Project = None,
) -> dict[str, Any]:
    """`entity`'s MCP parameters as the handler's keyword arguments."""
    return {"name": name, "view": view, "as_of": as_of, "known_at": known_at, "project": project}


DESCRIPTION = """\
Aggregate what is known about one entity: counts, the latest value, extremes, over all the facts about it.

Use it for questions ranking cannot answer by returning notes: "how many times was test_retry flaky?",
"what is the latest version of fastapi?", "how many incidents did checkout-svc have this quarter?". Example:
entity(name="tests/test_sync.py::test_retry") → flaky: 3 times between 2026-03-02 and 2026-05-14 (count 3);
entity(view="version") lists every dependency's current version. Each value lists the fact ids it was computed
from. as_of / known_at read the past like the as_of tool. Facts come from remember's `facts` (e.g.
{"subject": "tests/test_sync.py::test_retry", "predicate": "flaky", "object": "CI run 4411"}) and from notes."""

SPEC = ToolSpec(
    name="entity",
    title="Entity views",
    description=DESCRIPTION,
    hints=Hints(read_only=True, destructive=False, idempotent=True),
    handler=entity,
    result=EntityResult,
    arguments=mcp_arguments,
    aliases={"entity": "name", "subject": "name", "at": "as_of"},
)
