"""Apply fact resolution to the store: read each slot, plan with `resolve.plan_fact`, commit atomically.

Also fits each chunk's validity to the facts stated in it: when every one of them has
ended (superseded, or placed in the past on arrival), the chunk ends then too, so the
verbatim statement of an old value stops surfacing as current.

With a `SlotMatcher` a fact named differently from an equivalent live slot is resolved
against that slot (slots.py). Facts that disagree but must both stay live (an extracted
value against an agent-stated one, or an ambiguous slot match) are flagged on both rows
with a `cm:conflict:<id>` mark (marks.py), which `history` shows as `conflicts_with`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from datetime import datetime

from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES, REINFORCE_STEP, plan_fact
from chronomem.marks import anchors_of, with_anchors, with_conflicts
from chronomem.records import MemoryRecord
from chronomem.storage import Filter, MemoryStore

if TYPE_CHECKING:
    from chronomem.consolidate.slots import SlotMatcher


@dataclass
class FactOutcome:
    """What happened to one new fact."""

    action: str
    fact_id: str
    subject: str
    predicate: str
    object: str
    supersedes: str | None = None
    closed_ids: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()


def resolve_and_commit(
    store: MemoryStore,
    facts: list[MemoryRecord],
    now: datetime,
    extra_rows: list[MemoryRecord] | None = None,
    matcher: SlotMatcher | None = None,
    multi_valued: frozenset[str] = frozenset(),
) -> list[FactOutcome]:
    """Resolve `facts` (in order) against their slots and write everything in one commit.

    `extra_rows` (e.g. the chunk the facts came from, or rows a retraction expires) are
    written in the same commit, and slots are read as if they were already stored.
    `multi_valued` names predicates that accumulate for this call, besides
    `MULTI_VALUED_PREDICATES` (an imported graph's relations: all of them hold at once).
    """
    writes: dict[str, MemoryRecord] = {r.id: r for r in (extra_rows or [])}
    outcomes: list[FactOutcome] = []
    slot_cache: dict[tuple[str, str, str], list[MemoryRecord]] = {}

    # Pass 1: where each fact resolves (semantic slot matching sees the facts before it as written).
    matched: list[tuple[MemoryRecord, list[str]]] = []
    provisional = dict(writes)
    for fact in facts:
        assert fact.subject is not None and fact.predicate is not None and fact.object is not None
        flagged: list[str] = []
        if matcher is not None:
            match = matcher.match(fact, now, provisional)
            fact, flagged = match.fact, match.conflicts
        provisional[fact.id] = fact
        matched.append((fact, flagged))
    # Every slot the facts touch, read in one query, as it will be with this commit's rows.
    wanted = {_slot_key(f) for f, _ in matched}
    for project in sorted({k[0] for k in wanted}):
        pairs = [(k[1], k[2]) for k in wanted if k[0] == project]
        stored = store.find(Filter().projects([project]).slots(pairs).known(now), with_vectors=True)
        stored_ids = {r.id for r in stored}
        rows_in = [writes.get(r.id, r) for r in stored]
        rows_in += [r for r in writes.values() if r.kind == "fact" and r.id not in stored_ids]
        for key in wanted:
            if key[0] == project:
                slot_cache[key] = [r for r in rows_in if _slot_key(r) == key and r.expired_at is None]

    for fact, flagged in matched:
        assert fact.subject is not None and fact.predicate is not None and fact.object is not None
        rows = slot_cache[_slot_key(fact)]
        plan = plan_fact(fact, rows, multi_valued=fact.predicate in MULTI_VALUED_PREDICATES or fact.predicate in multi_valued)
        flagged += [r.id for r in plan.conflicts if r.id not in flagged]
        if plan.reinforced is not None:
            target = writes.get(plan.reinforced.id, plan.reinforced)
            merged_sources = list(dict.fromkeys(target.source_ids + fact.source_ids))
            # Restated about the same files: their anchors now hold the hashes the files have today.
            updated = target.copy(
                salience=target.salience + REINFORCE_STEP,
                source_ids=merged_sources,
                tags=with_anchors(target.tags, anchors_of(fact.tags)),
                paths=list(dict.fromkeys(target.paths + fact.paths)),
            )
            writes[updated.id] = updated
            _replace(rows, updated)
            outcomes.append(FactOutcome("reinforced", updated.id, fact.subject, fact.predicate, fact.object))
            continue
        closed_ids = []
        for old, end in plan.closed:
            reason = f"superseded by {fact.id}: {fact.predicate} is now {fact.object!r}"
            revision = MemoryStore.revision(old, invalid_at=end, now=now, reason=reason)
            writes[old.id] = MemoryStore.expired(old, now=now, reason=f"revised as {revision.id}: {reason}")
            writes[revision.id] = revision
            _remove(rows, old.id)
            rows.append(revision)
            closed_ids.append(old.id)
        assert plan.new_fact is not None
        new_fact = plan.new_fact
        if flagged:
            new_fact = new_fact.copy(tags=with_conflicts(new_fact.tags, flagged))
            for other in _flag(store, writes, flagged, new_fact.id):
                _replace(rows, other)
            plan.action = "conflict"
        writes[new_fact.id] = new_fact
        rows.append(new_fact)
        outcomes.append(
            FactOutcome(
                plan.action,
                new_fact.id,
                fact.subject,
                fact.predicate,
                fact.object,
                supersedes=new_fact.supersedes,
                closed_ids=tuple(closed_ids),
                conflicts_with=tuple(flagged),
            )
        )

    for row in _fit_chunks_to_facts(store, writes, now):
        writes[row.id] = row

    store.upsert(list(writes.values()))
    if matcher is not None:
        matcher.note_written(writes.values())
    return outcomes


def _fit_chunks_to_facts(store: MemoryStore, writes: dict[str, MemoryRecord], now: datetime) -> list[MemoryRecord]:
    """End a chunk's validity where the validity of every fact stated in it ends.

    A chunk whose facts were all superseded (or were placed in the past on arrival) stops
    surfacing as current; one with any fact still open stays open.
    """
    facts_written = [r for r in writes.values() if r.kind == "fact"]
    chunk_ids = sorted({cid for f in facts_written for cid in f.source_ids})
    if not chunk_ids:
        return []
    project = facts_written[0].project
    known = {r.id: r for r in store.find(Filter().projects([project]).derived_from(chunk_ids).kinds(["fact"]).known(now))}
    for row in facts_written:
        known[row.id] = row
    current_facts = [r for r in known.values() if r.expired_at is None]

    out: list[MemoryRecord] = []
    stored_chunks = {c.id: c for c in store.find(Filter().ids(chunk_ids).kinds(["chunk"]).known(now), with_vectors=True)}
    for cid in chunk_ids:
        chunk = writes.get(cid) or stored_chunks.get(cid)
        if chunk is None or chunk.kind != "chunk" or chunk.expired_at is not None:
            continue
        stated = [f for f in current_facts if cid in f.source_ids]
        if not stated or any(f.invalid_at is None for f in stated):
            continue
        end = max(max(f.invalid_at for f in stated if f.invalid_at is not None), chunk.valid_at)
        if chunk.invalid_at is not None and chunk.invalid_at <= end:
            continue
        if cid in writes and chunk.created_at == now and chunk.revision_of is None:
            out.append(chunk.copy(invalid_at=end))  # written in this same commit: born closed
            continue
        reason = "every fact stated here was superseded"
        revision = MemoryStore.revision(chunk, invalid_at=end, now=now, reason=reason)
        out.append(MemoryStore.expired(chunk, now=now, reason=f"revised as {revision.id}: {reason}"))
        out.append(revision)
    return out


def _flag(store: MemoryStore, writes: dict[str, MemoryRecord], ids: list[str], new_id: str) -> list[MemoryRecord]:
    """Mark each live row of `ids` as conflicting with `new_id` (in `writes`); returns the marked rows."""
    missing = [i for i in ids if i not in writes]
    loaded = {r.id: r for r in store.find(Filter().ids(missing), with_vectors=True)} if missing else {}
    marked = []
    for memory_id in ids:
        row = writes.get(memory_id) or loaded.get(memory_id)
        if row is None or row.expired_at is not None:
            continue
        updated = row.copy(tags=with_conflicts(row.tags, [new_id]))
        writes[updated.id] = updated
        marked.append(updated)
    return marked


def _slot_key(row: MemoryRecord) -> tuple[str, str, str]:
    return (row.project, row.subject or "", row.predicate or "")


def _replace(rows: list[MemoryRecord], updated: MemoryRecord) -> None:
    for i, row in enumerate(rows):
        if row.id == updated.id:
            rows[i] = updated


def _remove(rows: list[MemoryRecord], memory_id: str) -> None:
    rows[:] = [r for r in rows if r.id != memory_id]
