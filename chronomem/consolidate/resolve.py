"""Pure conflict resolution for a fact slot (project, subject, predicate).

Given a new fact and the slot's rows as currently known, decide what to write:
- the same object already valid at the new fact's time ⇒ reinforce it (no new row);
- a different object ⇒ the row valid at that time has its validity closed at the
  new fact's `valid_at` (a revision row) and the new fact links `supersedes` to it;
- an out-of-order arrival (a later fact is already known) ⇒ the new fact is placed
  in the past: its own validity ends where the next known fact begins;
- multi-valued predicates accumulate: nothing is superseded;
- a fact the agent stated outranks an extracted one (source `rules` / `llm`): an extracted
  fact never closes a live agent fact with a different object — both stay live and the
  plan names the agent facts as `conflicts`, which the caller flags on both rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from chronomem.facts import EXTRACTED_SOURCES
from chronomem.records import MemoryRecord, normalize_object

#: Predicates whose slot holds many values at once (a project has many dependencies).
MULTI_VALUED_PREDICATES = frozenset(
    {"depends_on", "has_bug", "uses", "has", "tag", "tags", "contains", "owns", "knows", "likes", "related_to"}
)

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


def plan_fact(new: MemoryRecord, slot_rows: list[MemoryRecord], multi_valued: bool = False) -> SlotPlan:
    """Plan the writes for `new` given the slot's non-expired rows (any valid time)."""
    t = new.valid_at
    key = normalize_object(new.object or "")
    valid_then = [r for r in slot_rows if r.is_valid_at(t)]
    same = [r for r in valid_then if normalize_object(r.object or "") == key]
    if same:
        return SlotPlan("reinforced", None, reinforced=min(same, key=lambda r: r.valid_at))
    if multi_valued:
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
