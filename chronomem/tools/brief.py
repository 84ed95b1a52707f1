"""`brief`: what a new session should know first, within a token budget.

The project's current facts (most important first), its recent changes (what replaced
what, and when), its counts (entity views that tally repeated statements: a test reported flaky
3 times; consolidate/entities.py), its latest notes (leaving out those the encoding gate found
below its thresholds, consolidate/gate.py), and the developer's `global` preferences — one
Markdown text whose every line carries the id to pass to `history` or `recall`.

It reads the live slice through filtered column scans and embeds nothing, so it answers
as soon as the store is open, before the embedding model has loaded. The budget counts
the whole rendered text with `estimate_tokens` (the estimate `recall` uses); lines are
cut whole, lowest priority first, and the text says how many were left out.

Importance of a fact: its effective salience (reinforcement by restatement and recall
hits, decayed by the time since it was last reinforced; consolidate/salience.py), halved
for facts chronomem extracted (`rules`, `llm`) rather than the agent stated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from chronomem.config import MAX_BRIEF_TOKENS, MIN_BRIEF_TOKENS
from chronomem.consolidate.entities import compute, load_views
from chronomem.consolidate.gate import GateSignals, decide
from chronomem.facts import EXTRACTED_SOURCES, record_salience
from chronomem.project import GLOBAL, display_name
from chronomem.records import MemoryRecord, normalize_subject
from chronomem.retrieval.fusion import estimate_tokens
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import iso
from chronomem.tools.validate import bounded_int

#: Weight of an extracted fact's salience against a fact the agent stated.
EXTRACTED_WEIGHT = 0.5
#: Slots whose latest change is considered for "Recent changes" (newest first).
MAX_CHANGES = 30
#: Most recent notes (chunks) considered, and global preferences shown.
MAX_NOTES = 5
MAX_GLOBAL = 8
#: Longest value and note excerpt shown; the id leads to the whole text.
VALUE_CHARS = 160
NOTE_CHARS = 200
#: Longest project name in the heading.
NAME_CHARS = 40
#: Share of the budget each section may take before the others had their turn (the rest is filled in order).
SHARES = {"facts": 0.5, "changes": 0.25, "tallies": 0.10, "notes": 0.15, "global": 0.10}
#: A counting view (consolidate/entities.py: count, time_compress) is worth a line in the brief from this many
#: statements on: a test reported flaky twice is a pattern, once is an event the notes already show.
MIN_TALLY = 2

#: The only columns the brief reads (never `content` of facts, never vectors).
_SLOT = ["id", "subject", "predicate", "object"]
FACT_COLUMNS = [*_SLOT, "valid_at", "created_at", "source", "salience", "source_ids", "tags", "supersedes", "conflicts_with"]
CHANGE_COLUMNS = [*_SLOT, "invalid_at", "created_at", "revision_of", "reason", "source_ids"]

INTRO = "Pass an [id] to `history`, or ask `recall`, for more."
#: The line of a project with nothing of its own stored (global preferences may follow it).
EMPTY = "No memories in project {name} yet: `remember` commands, decisions and conventions as you learn them."
HEADINGS = {
    "facts": "Current facts",
    "changes": "Recent changes",
    "tallies": "Counts",
    "notes": "Recent notes",
    "global": "Global preferences",
}
SECTIONS = tuple(HEADINGS)


class BriefFact(BaseModel):
    id: str
    subject: str
    predicate: str
    object: str = Field(description="The value (cut to a short excerpt; `history` with the id shows it whole)")
    since: str = Field(description="When it became true (valid time)")
    source: str
    importance: float = Field(description="Effective salience, weighted by source")
    conflicts_with: list[str] = Field(default_factory=list)

    def line(self, own: frozenset[str], dated: bool = True) -> str:
        label = self.predicate if self.subject in own else f"{self.subject} · {self.predicate}"
        since = f" (since {self.since[:10]})" if dated else ""
        flag = " — disputed, see `history`" if self.conflicts_with else ""
        return f"- {label}: {_code(self.object)}{since}{flag} [{self.id}]"


class BriefChange(BaseModel):
    subject: str
    predicate: str
    old_id: str = Field(description="The fact whose validity ended (as first recorded)")
    old_object: str
    at: str = Field(description="When it stopped being true")
    new_id: str | None = Field(default=None, description="The fact that replaced it; null = ended without replacement")
    new_object: str | None = None
    new_is_current: bool = False
    reason: str | None = None

    def line(self, own: frozenset[str]) -> str:
        label = self.predicate if self.subject in own else f"{self.subject} · {self.predicate}"
        day = self.at[:10]
        if self.new_id is not None and self.new_object is not None:
            now = "now" if self.new_is_current else "then"
            return (
                f"- {label}: {now} {_code(self.new_object)}, replaced {_code(self.old_object)} on {day} "
                f"[{self.new_id}; replaced {self.old_id}]"
            )
        why = f" ({_excerpt(self.reason, 80)})" if self.reason else ""
        return f"- {label}: {_code(self.old_object)} ended on {day}{why} [{self.old_id}]"


class BriefTally(BaseModel):
    """A counting entity view (`entity` tool): how often something was reported, from which facts."""

    view: str
    entity: str
    count: int
    summary: str
    fact_ids: list[str] = Field(default_factory=list)

    def line(self) -> str:
        shown = ", ".join(self.fact_ids[:3]) + (f" +{len(self.fact_ids) - 3}" if len(self.fact_ids) > 3 else "")
        return f"- {self.summary} [{shown}]"


class BriefNote(BaseModel):
    id: str
    text: str = Field(description="The note's opening (cut; `history` with the id shows the record)")
    created_at: str
    novelty: float | None = Field(default=None, description="Encoding gate signals when it was written")
    salience: float | None = None
    prediction_error: float | None = None

    def line(self) -> str:
        return f"- {self.created_at[:10]}: {self.text} [{self.id}]"


class BriefResult(BaseModel):
    """The session brief: structured, and as Markdown (`text()`) within `budget_tokens`."""

    project: str
    project_name: str = Field(description="The name people write for the project")
    at: str = Field(description="The moment the brief describes")
    budget_tokens: int
    tokens: int = Field(description="Estimated tokens of text()")
    facts: list[BriefFact] = Field(default_factory=list, description="Current facts, most important first")
    changes: list[BriefChange] = Field(
        default_factory=list, description="Latest change of each changed slot, newest first"
    )
    tallies: list[BriefTally] = Field(
        default_factory=list, description="Counting entity views with repeated statements (flaky tests, incidents)"
    )
    notes: list[BriefNote] = Field(
        default_factory=list,
        description="Most recent notes, newest first; notes the encoding gate found below its thresholds are left out",
    )
    global_preferences: list[BriefFact] = Field(default_factory=list, description="Facts of the `global` scope")
    global_notes: list[BriefNote] = Field(default_factory=list, description="Recent notes of the `global` scope")
    omitted: int = Field(description="Lines left out to stay within budget_tokens")
    stored: bool = Field(description="False when the project has nothing stored yet")

    def text(self) -> str:
        return "\n".join(_render(self))


# ---------------------------------------------------------------------------- building


@dataclass
class _Fact:
    """A live fact as read for ranking, with what the brief needs besides its line."""

    brief: BriefFact
    supersedes: str | None
    source_ids: tuple[str, ...]


def brief(
    svc: MemoryService,
    project: str | None = None,
    budget_tokens: Any = None,
    *,
    include_global: bool = True,
) -> BriefResult:
    """The session brief of `project` (default: the current one) in at most `budget_tokens` (default: settings)."""
    budget = _budget(svc, budget_tokens)
    key = svc.project(project)
    now = svc.now()
    live = Filter().live(now, now)

    ranked = _ranked_facts(svc, live.projects([key]).kinds(["fact"]), now)
    facts = [r.brief for r in ranked]
    changes, ended_sources = _changes(svc, key, now, ranked)
    global_items: list[BriefFact | BriefNote] = []
    if include_global and key != GLOBAL:
        global_ranked = _ranked_facts(svc, live.projects([GLOBAL]).kinds(["fact"]), now)
        stated = {s for r in global_ranked for s in r.source_ids}
        global_items = [r.brief for r in global_ranked[:MAX_GLOBAL]]
        global_items += _recent_notes(svc, live.projects([GLOBAL]).kinds(["chunk"]), exclude=stated, n=3)

    result = BriefResult(
        project=key,
        project_name=display_name(key),
        at=iso(now) or "",
        budget_tokens=budget,
        tokens=0,
        omitted=0,
        stored=bool(facts or changes),
    )
    tallies = _tallies(svc, key, now)
    result.stored = result.stored or bool(tallies)
    candidates: dict[str, list[Any]] = {"facts": facts, "changes": changes, "tallies": tallies, "notes": [], "global": global_items}
    most = len(facts) + len(changes) + len(tallies) + MAX_NOTES + len(global_items)  # bounds the "left out" count
    chosen = _Selection(result, budget * 4, _own_names(key), most)
    for section in SECTIONS:  # first pass: each section within its share, in order of priority
        if section == "notes":  # notes stating facts listed above (or ended) would repeat or mislead
            shown = {f.id for f in result.facts}
            sources = ended_sources | {s for r in ranked if r.brief.id in shown for s in r.source_ids}
            candidates["notes"] = _recent_notes(svc, live.projects([key]).kinds(["chunk"]), exclude=sources, n=MAX_NOTES)
            result.stored = result.stored or bool(candidates["notes"])
        chosen.fill(section, candidates[section], share=SHARES[section])
    for section in SECTIONS:  # second pass: what is left of the budget, in the same order
        chosen.fill(section, candidates[section])
    result.omitted = sum(len(items) for items in candidates.values()) - sum(chosen.taken.values())
    _enforce(result, budget)
    result.tokens = estimate_tokens(result.text())
    return result


def _budget(svc: MemoryService, value: Any) -> int:
    if value is None or value == "":
        return svc.settings.brief_tokens
    if isinstance(value, str) and value.strip().isdigit():  # prompt arguments arrive as strings
        value = int(value.strip())
    return bounded_int(value, "budget_tokens", MIN_BRIEF_TOKENS, MAX_BRIEF_TOKENS)


def _own_names(key: str) -> frozenset[str]:
    """Subjects that name the project itself: its facts are shown without the subject."""
    return frozenset({normalize_subject(key), normalize_subject(display_name(key))})


def _ranked_facts(svc: MemoryService, flt: Filter, now: datetime) -> list[_Fact]:
    """The facts passing `flt`, most important first (then the most recently valid, then the newest id)."""
    out = []
    usage = svc.store.usage.latest()  # recall hits, restatements and later conflicts: folded in as reads do
    for row in svc.store.columns(flt, FACT_COLUMNS):
        record = MemoryRecord(
            id=row["id"],
            kind="fact",
            project="",
            content="",
            valid_at=row["valid_at"],
            created_at=row["created_at"],
            salience=float(row["salience"] if row["salience"] is not None else 1.0),
            source_ids=list(row["source_ids"] or []),
            tags=list(row["tags"] or []),
            conflicts_with=list(row["conflicts_with"] or []),
        ).with_usage(usage.get(row["id"]))
        weight = EXTRACTED_WEIGHT if row["source"] in EXTRACTED_SOURCES else 1.0
        fact = BriefFact(
            id=row["id"],
            subject=row["subject"] or "",
            predicate=row["predicate"] or "",
            object=_excerpt(row["object"] or "", VALUE_CHARS),
            since=iso(row["valid_at"]) or "",
            source=row["source"] or "agent",
            importance=round(record_salience(record, now) * weight, 6),
            conflicts_with=list(record.conflicts_with),
        )
        out.append(_Fact(fact, row["supersedes"], tuple(record.source_ids)))
    out.sort(key=lambda r: (r.brief.importance, r.brief.since, r.brief.id), reverse=True)
    return out


def _changes(
    svc: MemoryService, key: str, now: datetime, ranked: list[_Fact]
) -> tuple[list[BriefChange], set[str]]:
    """Per fact slot, its latest ended value (superseded or forgotten), newest first; and the chunks that stated them."""
    store = svc.store
    known = Filter().projects([key]).kinds(["fact"]).known(now)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    ended_sources: set[str] = set()
    for row in store.columns(known.revisions().ended_by(now), CHANGE_COLUMNS):
        ended_sources.update(row["source_ids"] or [])
        slot = (row["subject"] or "", row["predicate"] or "")
        best = latest.get(slot)
        if best is None or (row["invalid_at"], row["created_at"]) > (best["invalid_at"], best["created_at"]):
            latest[slot] = row
    rows = sorted(latest.values(), key=lambda r: (r["invalid_at"], r["created_at"]), reverse=True)[:MAX_CHANGES]

    current = {r.supersedes: r.brief for r in ranked if r.supersedes}
    successors: dict[str, tuple[str, str, bool]] = {
        old: (fact.id, fact.object, True) for old, fact in current.items()
    }
    missing = [r["revision_of"] for r in rows if r["revision_of"] not in successors]
    if missing:  # replaced by a value that has itself ended since
        for r in store.columns(known.superseding(missing), ["id", "object", "supersedes"]):
            successors.setdefault(r["supersedes"], (r["id"], _excerpt(r["object"] or "", VALUE_CHARS), False))
    out = []
    for row in rows:
        new = successors.get(row["revision_of"])
        out.append(
            BriefChange(
                subject=row["subject"] or "",
                predicate=row["predicate"] or "",
                old_id=row["revision_of"],
                old_object=_excerpt(row["object"] or "", VALUE_CHARS),
                at=iso(row["invalid_at"]) or "",
                new_id=new[0] if new else None,
                new_object=new[1] if new else None,
                new_is_current=bool(new and new[2]),
                reason=None if new else row["reason"],
            )
        )
    return out, ended_sources


def _tallies(svc: MemoryService, key: str, now: datetime) -> list[BriefTally]:
    """The project's counting entity views with at least MIN_TALLY statements, most statements first."""
    views = [v for v in load_views(svc).values() if v.operator in ("count", "time_compress")]
    values = [v for v in compute(svc, key, views, now, now, by_meaning=False) if v.count >= MIN_TALLY]
    values.sort(key=lambda v: (-v.count, v.view, v.entity))
    return [BriefTally(view=v.view, entity=v.entity, count=v.count, summary=v.summary, fact_ids=v.fact_ids) for v in values]


def _recent_notes(svc: MemoryService, flt: Filter, exclude: set[str], n: int) -> list[BriefNote]:
    """The `n` newest live chunks passing `flt`, except those in `exclude` (or revising one of them) and those the
    encoding gate found below its thresholds (a restatement or filler: consolidate/gate.py), whatever its policy."""
    store = svc.store
    keys = sorted(store.keys(flt), key=lambda pair: (pair[1], pair[0]), reverse=True)
    wanted = [memory_id for memory_id, _ in keys if memory_id not in exclude][: n * 3]
    if not wanted:
        return []
    columns = ["id", "content", "created_at", "revision_of", "novelty", "event_salience", "prediction_error"]
    by_id = {r["id"]: r for r in store.columns(Filter().ids(wanted), columns)}
    settings = svc.settings
    notes = []
    for memory_id in wanted:
        row = by_id.get(memory_id)
        if row is None or row["revision_of"] in exclude:
            continue
        signals = None
        if row["novelty"] is not None:
            signals = GateSignals(row["novelty"], row["event_salience"], row["prediction_error"])
            if decide(signals, "record", settings.gate_novelty, settings.gate_salience).below:
                continue
        text = _excerpt(row["content"] or "", NOTE_CHARS)
        notes.append(BriefNote(
            id=memory_id, text=text, created_at=iso(row["created_at"]) or "",
            novelty=None if signals is None else round(signals.novelty, 4),
            salience=None if signals is None else round(signals.salience, 4),
            prediction_error=None if signals is None else signals.prediction_error,
        ))
    return notes[:n]


# ---------------------------------------------------------------------------- budget


@dataclass
class _Selection:
    """Adds whole lines to a result while its rendered text stays within `chars` (4 characters a token)."""

    result: BriefResult
    chars: int
    own: frozenset[str]
    most_left_out: int
    used: dict[str, int] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The heading and intro, plus room for the "left out" footer.
        footer = _footer(self.most_left_out, self.result.budget_tokens)
        self.size = len(_title(self.result)) + 1 + len(INTRO) + len("\n\n" + footer)

    def fill(self, section: str, items: list[Any], share: float | None = None) -> None:
        """Add `items` in order from the first not yet taken; stop at the first line that does not fit."""
        limit = None if share is None else self.chars * share
        for item in items[self.taken.get(section, 0) :]:
            heading = 0 if self.taken.get(section) else len(f"\n\n## {HEADINGS[section]}")
            cost = len(_line(section, item, self.own)) + 1 + heading
            if self.size + cost > self.chars or (limit is not None and self.used.get(section, 0) + cost > limit):
                return
            _target(self.result, section, item).append(item)
            self.size += cost
            self.used[section] = self.used.get(section, 0) + cost
            self.taken[section] = self.taken.get(section, 0) + 1


def _target(result: BriefResult, section: str, item: Any) -> list[Any]:
    if section == "global":
        return result.global_notes if isinstance(item, BriefNote) else result.global_preferences
    return {"facts": result.facts, "changes": result.changes, "tallies": result.tallies, "notes": result.notes}[section]


def _line(section: str, item: Any, own: frozenset[str]) -> str:
    """The Markdown line of one item in `section` (the same in the budget and in `text()`)."""
    if isinstance(item, BriefNote | BriefTally):
        return item.line()
    if isinstance(item, BriefChange):
        return item.line(own)
    if section == "global":
        return item.line(frozenset(), dated=False)
    return item.line(own)


def _enforce(result: BriefResult, budget: int) -> None:
    """Safety net: drop the lowest-priority lines until the whole text is within `budget`."""
    lists = [result.global_notes, result.global_preferences, result.notes, result.tallies, result.changes, result.facts]
    while estimate_tokens(result.text()) > budget:
        for items in lists:
            if items:
                items.pop()
                result.omitted += 1
                break
        else:
            return


def _footer(omitted: int, budget: int) -> str:
    return f"_{omitted} more left out to fit {budget} tokens: `recall` a topic for more._"


def _title(result: BriefResult) -> str:
    return f"# Project memory: {_excerpt(result.project_name, NAME_CHARS)}"


def _render(result: BriefResult) -> list[str]:
    lines = [_title(result)]
    if not result.stored:  # said plainly, even when the global scope's lines follow
        lines.append(EMPTY.format(name=_excerpt(result.project_name, NAME_CHARS)))
        if not result.global_preferences and not result.global_notes:
            return lines
    lines.append(INTRO)
    own = _own_names(result.project)
    sections = {
        "facts": result.facts,
        "changes": result.changes,
        "tallies": result.tallies,
        "notes": result.notes,
        "global": [*result.global_preferences, *result.global_notes],
    }
    for section in SECTIONS:
        if sections[section]:
            lines += ["", f"## {HEADINGS[section]}", *(_line(section, item, own) for item in sections[section])]
    if result.omitted:
        lines += ["", _footer(result.omitted, result.budget_tokens)]
    return lines


# ---------------------------------------------------------------------------- text helpers

_SPACE = re.compile(r"\s+")


def _excerpt(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _code(value: str) -> str:
    """`value` as inline code, with a fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


# ---------------------------------------------------------------------------- slot vocabulary


def slot_vocabulary(svc: MemoryService, project: str | None = None) -> str:
    """The project's fact slots in use (subject, predicate, how many current values), as Markdown, so an agent
    names a new value of one of them the same way (`remember`'s facts) instead of opening another slot."""
    scope = svc.project(project)
    now = svc.now()
    facts = svc.store.find(Filter().projects([scope]).kinds(["fact"]).live(now, now))
    counts: dict[tuple[str, str], int] = {}
    for row in facts:
        if row.subject and row.predicate:
            counts[(row.subject, row.predicate)] = counts.get((row.subject, row.predicate), 0) + 1
    if not counts:
        return f"# Fact slots of {scope}\n\nNo facts yet: name subject and predicate plainly (e.g. `billing-api` / `port`)."
    lines = [f"# Fact slots of {scope}", "", "Reuse these names for a new value of the same thing (subject · predicate · current values):", ""]
    lines += [f"- {subject} · {predicate} · {n}" for (subject, predicate), n in sorted(counts.items())]
    return "\n".join(lines)
