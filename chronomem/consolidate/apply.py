"""Apply fact resolution to the store: read each slot, plan with `resolve.plan_fact`, commit atomically.

Also ends a chunk's validity when every live fact derived from it has been superseded,
so the verbatim statement of an old value stops surfacing as current.
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
    closed_facts: list[tuple[MemoryRecord, datetime]] = []

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
            if old.is_valid_at(now) and not revision.is_valid_at(now):
                closed_facts.append((old, end))
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

    for chunk_revision, expired in _close_orphaned_chunks(store, closed_facts, writes, now):
        writes[expired.id] = expired
        writes[chunk_revision.id] = chunk_revision

    store.upsert(list(writes.values()))
    return outcomes


def _close_orphaned_chunks(
    store: MemoryStore,
    closed_facts: list[tuple[MemoryRecord, datetime]],
    writes: dict[str, MemoryRecord],
    now: datetime,
) -> list[tuple[MemoryRecord, MemoryRecord]]:
    """Chunks all of whose live facts were just superseded: their validity ends when the last fact's did."""
    ends: dict[str, datetime] = {}
    for fact, end in closed_facts:
        for cid in fact.source_ids:
            ends[cid] = max(end, ends.get(cid, end))
    chunk_ids = sorted(ends)
    if not chunk_ids:
        return []
    project = closed_facts[0][0].project
    closed_ids = {f.id for f, _ in closed_facts}
    still_live = store.find(Filter().projects([project]).derived_from(chunk_ids).live(now, now))
    supported = {
        cid
        for f in still_live
        if f.id not in closed_ids and f.kind == "fact" and not _closed_in(writes, f.id)
        for cid in f.source_ids
    }
    orphans = [cid for cid in chunk_ids if cid not in supported and cid not in writes]
    if not orphans:
        return []
    out = []
    for chunk in store.find(Filter().ids(orphans).kinds(["chunk"]).live(now, now), with_vectors=True):
        reason = "every fact stated here was superseded"
        end = max(ends[chunk.id], chunk.valid_at)
        revision = MemoryStore.revision(chunk, invalid_at=end, now=now, reason=reason)
        out.append((revision, MemoryStore.expired(chunk, now=now, reason=f"revised as {revision.id}: {reason}")))
    return out


def _closed_in(writes: dict[str, MemoryRecord], memory_id: str) -> bool:
    row = writes.get(memory_id)
    return row is not None and row.expired_at is not None


def _replace(rows: list[MemoryRecord], updated: MemoryRecord) -> None:
    for i, row in enumerate(rows):
        if row.id == updated.id:
            rows[i] = updated


def _remove(rows: list[MemoryRecord], memory_id: str) -> None:
    rows[:] = [r for r in rows if r.id != memory_id]
