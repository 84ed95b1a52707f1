"""Apply fact resolution to the store: read each slot, plan with `resolve.plan_fact`, commit atomically.

Also fits each chunk's validity to the facts stated in it: when every one of them has
ended (superseded, or placed in the past on arrival), the chunk ends then too, so the
verbatim statement of an old value stops surfacing as current.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES, REINFORCE_STEP, plan_fact
from chronomem.records import MemoryRecord
from chronomem.storage import Filter, MemoryStore


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


def resolve_and_commit(
    store: MemoryStore,
    facts: list[MemoryRecord],
    now: datetime,
    extra_rows: list[MemoryRecord] | None = None,
) -> list[FactOutcome]:
    """Resolve `facts` (in order) against their slots and write everything in one commit.

    `extra_rows` (e.g. the chunk the facts came from) are written in the same commit.
    """
    writes: dict[str, MemoryRecord] = {r.id: r for r in (extra_rows or [])}
    outcomes: list[FactOutcome] = []
    slot_cache: dict[tuple[str, str, str], list[MemoryRecord]] = {}

    for fact in facts:
        assert fact.subject is not None and fact.predicate is not None and fact.object is not None
        key = (fact.project, fact.subject, fact.predicate)
        if key not in slot_cache:
            slot_cache[key] = store.find(
                Filter().projects([fact.project]).slot(fact.subject, fact.predicate).known(now), with_vectors=True
            )
        rows = slot_cache[key]
        plan = plan_fact(fact, rows, multi_valued=fact.predicate in MULTI_VALUED_PREDICATES)
        if plan.reinforced is not None:
            target = writes.get(plan.reinforced.id, plan.reinforced)
            merged_sources = list(dict.fromkeys(target.source_ids + fact.source_ids))
            updated = target.copy(salience=target.salience + REINFORCE_STEP, source_ids=merged_sources)
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
        writes[plan.new_fact.id] = plan.new_fact
        rows.append(plan.new_fact)
        outcomes.append(
            FactOutcome(
                plan.action,
                plan.new_fact.id,
                fact.subject,
                fact.predicate,
                fact.object,
                supersedes=plan.new_fact.supersedes,
                closed_ids=tuple(closed_ids),
            )
        )

    for row in _fit_chunks_to_facts(store, writes, now):
        writes[row.id] = row

    store.upsert(list(writes.values()))
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


def _replace(rows: list[MemoryRecord], updated: MemoryRecord) -> None:
    for i, row in enumerate(rows):
        if row.id == updated.id:
            rows[i] = updated


def _remove(rows: list[MemoryRecord], memory_id: str) -> None:
    rows[:] = [r for r in rows if r.id != memory_id]
