"""Entity views: an entity's state aggregated from the facts about it by declared operators (VikingMem).

A *view* names the fact predicate(s) it reads and an operator (a fact feeds it when its predicate is one of them
by normal form, holds its words, or means the same to the model: `flaky_report` and `marked flaky` feed `flaky`); an *entity* is a fact's subject (a test, a
dependency, a service, a module). The value of a view for an entity is computed from every statement of those
facts — `count`, `sum`, `max`, `min`, `avg` over them, `latest` (the value valid at the asked time) and
`time_compress` ("flaky 7 times between 2026-03-02 and 2026-05-14") — and lists the fact ids it came from.

Computed on read, from the `memories` table, not materialised: a view is then bi-temporal for free (the facts
read are those valid by `at` as known at `known_at`, so `as_of` on an entity is the same slice `as_of` reads),
never stale however the consolidator's resolution or a `forget` changes the facts, and needs no second table to
keep in step. Reading a view is one filtered scan of a few predicates' facts; the consolidator keeps the facts
themselves (extraction, supersession) up to date, which is all a view needs.

A statement is a chunk that stated the fact (its first one, and each restatement the consolidator recorded as
reinforcement), taken at that chunk's valid time; a fact with no chunk counts once at its own. Facts retracted
(expired by `known_at`) and statements recorded after `known_at` or valid after `at` are left out.

Views are declared in TOML — `[views.<name>]` with `predicates` (or `predicate`), `operator`, optional
`subject` (a glob over entity names) and `description` — in `entities.toml` of the store directory or the file
CHRONOMEM_ENTITIES names (stdlib `tomllib`); they add to, or replace by name, the built-in set `BUILTIN`.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chronomem.errors import InvalidInput
from chronomem.consolidate.slots import SAME_PREDICATE, cosine, predicate_form, predicate_words, slot_matcher, subject_form
from chronomem.records import MemoryRecord, normalize_predicate, normalize_subject
from chronomem.service import MemoryService
from chronomem.storage import Filter

OPERATORS = ("count", "sum", "max", "min", "avg", "latest", "time_compress")
#: The file a store's own views are declared in (beside its tables).
VIEWS_FILE = "entities.toml"


@dataclass(frozen=True)
class View:
    name: str
    predicates: tuple[str, ...]
    operator: str
    subject: str = "*"
    description: str = ""


#: Views for coding work, on the predicates agents and the rule extractor use (extract_rules: `version`, `owner`,
#: `port`); `flaky` and `incident` are for the agent's structured facts ({"subject": <test>, "predicate": "flaky",
#: "object": <where it flaked>}).
BUILTIN: tuple[View, ...] = (
    View("flaky", ("flaky",), "time_compress", description="how often a test was reported flaky, and when"),
    View("incidents", ("incident",), "count", description="incidents reported per service"),
    View("version", ("version",), "latest", description="the current version of each dependency"),
    View("owner", ("owner",), "latest", description="the current owner of each module"),
    View("port", ("port",), "latest", description="the port each service listens on"),
)


@dataclass(frozen=True)
class Statement:
    at: datetime  # valid time of the statement
    fact: MemoryRecord


@dataclass
class EntityValue:
    """One view's value for one entity, with what it was computed from."""

    view: str
    entity: str
    operator: str
    value: Any
    count: int
    first: datetime | None
    last: datetime | None
    fact_ids: list[str] = field(default_factory=list)
    summary: str = ""


def load_views(svc: MemoryService) -> dict[str, View]:
    """The built-in views, with the store's `entities.toml` (or CHRONOMEM_ENTITIES') added over them by name."""
    views = {v.name: v for v in BUILTIN}
    path = svc.settings.entities_file or svc.settings.store_path / VIEWS_FILE
    if path.is_file():
        views.update(parse_views(path.read_text(encoding="utf-8"), str(path)))
    return views


def parse_views(text: str, where: str = "entities.toml") -> dict[str, View]:
    """`[views.<name>]` tables as views; a malformed declaration is one clear InvalidInput line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{where}: not valid TOML ({exc})") from None
    out: dict[str, View] = {}
    for name, spec in (data.get("views") or {}).items():
        if not isinstance(spec, dict):
            raise InvalidInput(f"{where}: views.{name} must be a table")
        predicates = spec.get("predicates", spec.get("predicate"))
        if isinstance(predicates, str):
            predicates = [predicates]
        if not predicates or not all(isinstance(p, str) and p.strip() for p in predicates):
            raise InvalidInput(f"{where}: views.{name} needs predicate or predicates (strings)")
        operator = str(spec.get("operator", "latest")).lower()
        if operator not in OPERATORS:
            raise InvalidInput(f"{where}: views.{name}.operator must be one of {', '.join(OPERATORS)}")
        out[name] = View(
            name, tuple(normalize_predicate(p) for p in predicates), operator,
            normalize_subject(str(spec.get("subject", "*"))), str(spec.get("description", "")),
        )
    return out


def statements(facts: Sequence[MemoryRecord], chunks: dict[str, MemoryRecord], at: datetime, known_at: datetime) -> list[Statement]:
    """Each fact's statements valid by `at` as known at `known_at` (see the module), oldest first."""
    out: list[Statement] = []
    for fact in facts:
        if not fact.is_known_at(known_at) or fact.valid_at > at:
            continue
        # the first source is the chunk the fact came from (the fact's own valid time stands for it); later ones restated it
        again = [chunks[s] for s in fact.source_ids[1:] if s in chunks]
        again = [c for c in again if c.created_at <= known_at and c.valid_at <= at]
        out.extend(Statement(t, fact) for t in [fact.valid_at, *(c.valid_at for c in again)])
    return sorted(out, key=lambda s: (s.at, s.fact.id))


_NUMBER = re.compile(r"-?\d+(?:\.\d+)*")


def magnitude(value: str | None) -> tuple[float, ...] | None:
    """The first number or version in a value, comparable: `52 min` → (52,), `1.26.4` → (1, 26, 4)."""
    found = _NUMBER.search(value or "")
    if found is None:
        return None
    text = found.group()
    if text.count(".") == 1:
        return (float(text),)
    return tuple(float(p) for p in text.split("."))


def aggregate(view: View, entity: str, found: Sequence[Statement], at: datetime) -> EntityValue | None:
    """The value of `view` for `entity` from its statements (pure, deterministic: ties broken by id)."""
    if not found:
        return None
    facts = list({s.fact.id: s.fact for s in found}.values())
    first, last = found[0].at, found[-1].at
    value: Any
    op = view.operator
    used = [f.id for f in facts]
    if op in ("count", "time_compress"):
        value = len(found)
    elif op == "latest":
        live = [f for f in facts if f.is_valid_at(at)]
        if not live:  # every value it had has ended (invalidated): nothing is current
            return None
        best = max(live, key=lambda f: (f.valid_at, f.id))
        value, used = best.object, [best.id]
    else:
        numbers = [(magnitude(s.fact.object), s) for s in found]
        numbers = [(m, s) for m, s in numbers if m is not None]
        if not numbers:
            return None
        if op in ("max", "min"):
            pick = (max if op == "max" else min)(numbers, key=lambda pair: (pair[0], pair[1].fact.id))
            value, used = pick[1].fact.object, [pick[1].fact.id]
        else:
            total = sum(m[0] for m, _ in numbers)
            value = round(total if op == "sum" else total / len(numbers), 6)
            used = list(dict.fromkeys(s.fact.id for _, s in numbers))
    summary = _summary(view, entity, value, len(found), first, last)
    return EntityValue(view.name, entity, op, value, len(found), first, last, used, summary)


def _summary(view: View, entity: str, value: Any, count: int, first: datetime, last: datetime) -> str:
    day = lambda t: t.date().isoformat()  # noqa: E731
    if view.operator == "time_compress":
        times = "once" if count == 1 else f"{count} times"
        span = f"on {day(first)}" if day(first) == day(last) else f"between {day(first)} and {day(last)}"
        return f"{entity}: {view.name} {times} {span}"
    if view.operator == "count":
        return f"{entity}: {count} {view.name} ({day(first)} → {day(last)})"
    return f"{entity}: {view.name} {view.operator} = {value} (from {count} statement{'s' if count != 1 else ''})"


def view_predicates(
    svc: MemoryService, views: Sequence[View], predicates: Iterable[str], by_meaning: bool = True
) -> dict[str, set[str]]:
    """Per view, the stored predicates that feed it: as the view names them (normal form), holding the view's
    words (`flaky_report`, `marked flaky` feed `flaky`), or, with `by_meaning`, meaning the same to the model
    (`owned by` feeds `owner`, at the slot matcher's `SAME_PREDICATE`)."""
    predicates = sorted(set(predicates))
    texts = sorted({predicate_words(p) for p in [*predicates, *(q for v in views for q in v.predicates)]})
    vectors = slot_matcher(svc).embed_phrases(texts) if texts and by_meaning else {}
    out: dict[str, set[str]] = {}
    for view in views:
        fed: set[str] = set()
        for predicate in predicates:
            words = predicate_words(predicate)
            for named in view.predicates:
                mine = predicate_words(named)
                if predicate_form(named) == predicate_form(predicate) or set(mine.split()) <= set(words.split()):
                    fed.add(predicate)
                elif vectors and cosine(vectors[mine], vectors[words]) >= SAME_PREDICATE:
                    fed.add(predicate)
        out[view.name] = fed
    return out


def compute(
    svc: MemoryService,
    project: str,
    views: Iterable[View],
    at: datetime,
    known_at: datetime,
    entity: str | None = None,
    by_meaning: bool = True,
) -> list[EntityValue]:
    """Every view's value for every entity of `project` (or only `entity`), as of (`at`, `known_at`); `by_meaning`
    off finds a view's facts by their names alone (no model: the session brief must answer without one)."""
    views = list(views)
    predicates = sorted({p for v in views for p in v.predicates})
    if not predicates:
        return []
    flt = Filter().projects([project]).kinds(["fact"]).began_by(at)
    wanted = None if entity is None else subject_form(entity, project)
    facts = [
        f for f in svc.store.find(flt)
        if f.predicate and f.subject and (wanted is None or subject_form(f.subject, project) == wanted)
    ]
    feeds = view_predicates(svc, views, {f.predicate for f in facts if f.predicate}, by_meaning)
    revised = {f.revision_of for f in facts if f.revision_of and f.is_known_at(known_at)}
    facts = [f for f in facts if f.id not in revised]  # a revision stands for the row it closed
    chunk_ids = sorted({s for f in facts for s in f.source_ids})
    chunks = {c.id: c for c in svc.store.find(Filter().ids(chunk_ids))} if chunk_ids else {}
    out: list[EntityValue] = []
    for view in views:
        groups: dict[str, list[MemoryRecord]] = {}
        for f in facts:
            if f.predicate in feeds[view.name] and f.subject and fnmatch.fnmatchcase(f.subject, view.subject):
                groups.setdefault(f.subject, []).append(f)
        for subject in sorted(groups):
            value = aggregate(view, subject, statements(groups[subject], chunks, at, known_at), at)
            if value is not None:
                out.append(value)
    return out
