"""The encoding gate: three signals scored on every `remember`, and the policy that acts on them.

The signals (True Memory's encoding gate; each in [0, 1], stored on the chunk's row — storage/schema.py v3):

- **novelty** — 1 − the highest cosine similarity between the new statement and the live chunks of its project
  (the search component's dense channel, `search.engine.nearest_ids`): 0 restates something stored word for
  word, 1 is unlike anything stored (an empty project).
- **salience** — what the statement says on its own (`consolidate.salience.event_salience`): identifiers,
  numbers, versions, paths and rare words against filler made of frequent words. No store, no model.
- **prediction_error** — whether it changes what is currently believed: the facts the rule extractor reads in it
  (`extract_rules.extract`) and the agent's structured facts are planned against the live facts of their slots
  by the consolidator's own resolution (`resolve.plan_fact`): 1 when one changes or contradicts a current value
  (or the statement retracts or replaces one), 0.5 when it opens a slot nothing held yet, 0 when it only restates
  values already held or states no fact at all.

A statement is *below the gate* when it changes and adds no fact (prediction_error 0) and either nearly restates
a stored memory (novelty < `novelty_min`) or says little (salience < `salience_min`); a statement carrying the
agent's structured facts never is (the agent said it matters). The policy decides what happens then:
`record` (the default) keeps it like any other and only reports it; `demote` keeps it marked `demoted`, and
ranking multiplies its score (retrieval/rank.py, `gate_penalty`); `skip` does not store it, and `remember`
answers saying so and why. eval/gate.py measures each on DevMem and eval/results/gate.md has the figures the
defaults come from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from chronomem.consolidate.extract_rules import extract
from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES, plan_fact
from chronomem.consolidate.salience import event_salience
from chronomem.project import display_name
from chronomem.records import MemoryRecord, new_id, normalize_predicate, normalize_subject
from chronomem.search.engine import nearest_ids
from chronomem.service import MemoryService
from chronomem.storage import Filter

#: prediction_error of a statement that changes a current value / opens a new slot / restates or states nothing.
CHANGES, OPENS, NOTHING = 1.0, 0.5, 0.0


@dataclass(frozen=True)
class GateSignals:
    novelty: float
    salience: float
    prediction_error: float
    #: The stored chunk most like the statement (the one novelty was measured against), if any.
    nearest: str | None = None
    #: What the prediction error is about: the slots changed or opened (`subject predicate`), or retractions.
    changes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided for one write, and why (for the reply and the row)."""

    signals: GateSignals
    policy: str
    below: bool  # under the thresholds
    decision: str  # "kept" | "demoted" | "skipped"
    reasons: list[str] = field(default_factory=list)


def novelty(svc: MemoryService, project: str, vector: Sequence[float], now: datetime) -> tuple[float, str | None]:
    """1 − the best cosine to the project's live chunks (1.0 when it holds none), and that chunk's id."""
    found = nearest_ids(svc.store, vector, Filter().projects([project]).kinds(["chunk"]).live(now, now), 1)
    if not found:
        return 1.0, None
    memory_id, score = found[0]
    return min(max(1.0 - float(score), 0.0), 1.0), memory_id


def prediction_error(
    svc: MemoryService, project: str, text: str, facts: Sequence[tuple[str, str, str]], valid_at: datetime, now: datetime
) -> tuple[float, tuple[str, ...]]:
    """How much `text` (and the agent's (subject, predicate, object) `facts`) changes the project's current facts."""
    stated: list[tuple[str, str, str, datetime | None]] = [
        (normalize_subject(s), normalize_predicate(p), o, None) for s, p, o in facts
    ]
    error, about = NOTHING, []
    for e in extract(text, display_name(project)):  # as the rules stage reads it (stage_rules.py)
        if e.kind in ("retract", "replace"):  # by its form it ends or moves a value stored before
            error = CHANGES
            about.append(f"{e.kind} {e.topic or e.old_value or e.object or ''}".strip())
        elif e.subject and e.predicate and e.object:
            stated.append((e.subject, e.predicate, e.object, e.valid_from))
    # One read for every slot the statement names (none when it names none). Not the slot matcher's cached slot
    # list: it can lag the rules stage's own writes by seconds, and would call a restatement a new slot.
    rows_of: dict[tuple[str, str], list[MemoryRecord]] = {}
    if stated:
        for row in svc.store.find(Filter().projects([project]).slots([(s, p) for s, p, _, _ in stated]).known(now)):
            if row.expired_at is None:
                rows_of.setdefault((row.subject or "", row.predicate or ""), []).append(row)
    for subject, predicate, obj, when in stated:
        probe = MemoryRecord(
            id=new_id(now), kind="fact", project=project, content="", subject=subject, predicate=predicate,
            object=obj, valid_at=when or valid_at, created_at=now, source="rules",
        )
        rows = rows_of.get((subject, predicate), [])
        plan = plan_fact(probe, rows, multi_valued=predicate in MULTI_VALUED_PREDICATES)
        if plan.action in ("superseded", "conflict"):
            error = CHANGES
            about.append(f"changes {subject} {predicate}")
        elif plan.action in ("added", "placed_in_past") and not rows:
            error = max(error, OPENS)
            about.append(f"opens {subject} {predicate}")
    return error, tuple(dict.fromkeys(about))


def signals(
    svc: MemoryService,
    project: str,
    text: str,
    vector: Sequence[float],
    facts: Sequence[tuple[str, str, str]],
    valid_at: datetime,
    now: datetime,
) -> GateSignals:
    """The three signals of one statement about to be written."""
    new, nearest = novelty(svc, project, vector, now)
    error, changes = prediction_error(svc, project, text, facts, valid_at, now)
    return GateSignals(round(new, 4), round(event_salience(text), 4), error, nearest, changes)


def decide(found: GateSignals, policy: str, novelty_min: float, salience_min: float, structured: bool = False) -> GateDecision:
    """Apply `policy` to `found` (pure): below the gate when no fact changes or is added and the statement nearly
    restates a stored one or says little; `structured` (the agent passed facts) is never below it."""
    reasons: list[str] = []
    if found.novelty < novelty_min:
        reasons.append(f"novelty {found.novelty:.2f} < {novelty_min:.2f}" + (f" (close to {found.nearest})" if found.nearest else ""))
    if found.salience < salience_min:
        reasons.append(f"salience {found.salience:.2f} < {salience_min:.2f}")
    below = bool(reasons) and found.prediction_error == NOTHING and not structured
    if not below:
        return GateDecision(found, policy, False, "kept", [])
    reasons.append("prediction_error 0 (changes no current fact)")
    decision = {"record": "kept", "demote": "demoted", "skip": "skipped"}[policy]
    return GateDecision(found, policy, True, decision, reasons)
