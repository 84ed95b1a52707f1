"""Pure conflict resolution for a fact slot (project, subject, predicate).

Given a new fact and the slot's rows as currently known, decide what to write:
- the same object already valid at the new fact's time ⇒ reinforce it (no new row);
- a different object ⇒ the row valid at that time has its validity closed at the
  new fact's `valid_at` (a revision row) and the new fact links `supersedes` to it;
- an out-of-order arrival (a later fact is already known) ⇒ the new fact is placed
  in the past: its own validity ends where the next known fact begins;
- multi-valued predicates accumulate: nothing is superseded; so do events (`is_event`: a fact marked
  `event`, or whose object is a date or time, or a fact on a slot that holds events), which count
  rather than replace each other;
- objects are compared as values (`records.same_value`): `port 8443` restates `8443`, `v1.2.3` `1.2.3`;
- a fact the agent stated outranks an extracted one (source `rules` / `llm`): an extracted
  fact never closes a live agent fact with a different object — both stay live and the
  plan names the agent facts as `conflicts`, which the caller flags on both rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from chronomem.facts import EXTRACTED_SOURCES
from chronomem.records import MemoryRecord, is_time_value, same_value

#: Predicates whose slot holds many values at once (a project has many dependencies).
MULTI_VALUED_PREDICATES = frozenset(
    {"depends_on", "has_bug", "uses", "has", "tag", "tags", "contains", "owns", "knows", "likes", "related_to"}
)

#: The tag a fact row carries when it is an event (it accumulates; see `is_event`); prefixed so that a note's own
#: tags (`event`, `state`) never change what its facts are.
EVENT_TAG = "kind:event"
#: The tag of a fact the agent marked as a state (it replaces, whatever its object looks like).
STATE_TAG = "kind:state"

#: How much a repeated statement adds to a fact's salience.
REINFORCE_STEP = 0.5



@dataclass
class SlotPlan:
    """What one new fact does to its slot."""

    action: str  # "added" | "reinforced" | "superseded" | "placed_in_past" | "conflict"
    new_fact: MemoryRecord | None
    reinforced: MemoryRecord | None = None
    closed: list[tuple[MemoryRecord, datetime]] = field(default_factory=list)
    conflicts: list[MemoryRecord] = field(default_factory=list)


def is_event(fact: MemoryRecord, slot_rows: Sequence[MemoryRecord] = ()) -> bool:
    """An event accumulates; a state replaces. The agent's `kind` (a tag on the row) decides; else a fact whose
    object is a date or time (`flaky_report: 2026-03-02`) is an event, and so is one on a slot already holding events."""
    if STATE_TAG in fact.tags:
        return False
    if EVENT_TAG in fact.tags or is_time_value(fact.object or ""):
        return True
    return any(EVENT_TAG in r.tags for r in slot_rows)


def plan_fact(new: MemoryRecord, slot_rows: list[MemoryRecord], multi_valued: bool = False) -> SlotPlan:
    """Plan the writes for `new` given the slot's non-expired rows (any valid time)."""
    t = new.valid_at
    valid_then = [r for r in slot_rows if r.is_valid_at(t)]
    event = is_event(new, slot_rows)
    # an event restates another only at the same time; a state restates the value valid then
    same = [
        r for r in (slot_rows if event else valid_then)
        if same_value(r.object or "", new.object or "") and (not event or r.valid_at == t)
    ]
    if same:
        return SlotPlan("reinforced", None, reinforced=min(same, key=lambda r: r.valid_at))
    if multi_valued or event:
        return SlotPlan("added", new)
    protected: list[MemoryRecord] = []
    if new.source in EXTRACTED_SOURCES:
        protected = [r for r in valid_then if r.source not in EXTRACTED_SOURCES]
        valid_then = [r for r in valid_then if r.source in EXTRACTED_SOURCES]

    later = sorted((r for r in slot_rows if r.valid_at > t), key=lambda r: r.valid_at)
    placed = new
    action = "added"
    if later:
        placed = new.copy(invalid_at=later[0].valid_at)
        action = "placed_in_past"

    closed: list[tuple[MemoryRecord, datetime]] = []
    for row in valid_then:
        closed.append((row, t))
    if closed:
        placed = placed.copy(supersedes=max((r for r, _ in closed), key=lambda r: r.valid_at).id)
        if action == "added":
            action = "superseded"
    if protected:
        action = "conflict"
    return SlotPlan(action, placed, closed=closed, conflicts=protected)
