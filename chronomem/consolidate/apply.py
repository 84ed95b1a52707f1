"""Apply fact resolution to the store: read each slot, plan with `resolve.plan_fact`, commit atomically.

Also fits each chunk's validity to the facts stated in it: when every one of them has
ended (superseded, or placed in the past on arrival), the chunk ends then too, so the
verbatim statement of an old value stops surfacing as current.

With a `SlotMatcher` a fact named differently from an equivalent live slot is resolved
against that slot (slots.py). Facts that disagree but must both stay live (an extracted
value against an agent-stated one, or an ambiguous slot match) are linked on the row written
later: its `conflicts_with` column names the earlier facts. A stored row is written once, so it
cannot gain the link in a column: the other end is appended to its state in the `usage` side table
(`Usage.conflicts_with`), which every read folds into `record.conflicts_with` — so `history`, `recall`
and the brief show the link on both facts, and nothing is rewritten.

A restatement (the same value again) reinforces the stored fact without rewriting it: the fact's
new state — salience step, the restating chunk, refreshed anchors, added paths — is appended to the
`usage` side table (storage/usage.py) after the commit of the rows, and reads fold it in
(`MemoryRecord.with_usage`). The two are separate commits: a crash between them loses only the
reinforcement, never a row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from datetime import datetime

from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES, REINFORCE_STEP, plan_fact
from chronomem.records import MemoryRecord, Usage
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
    #: The slot as the caller named it, when it was filed under an existing slot named otherwise.
    named: tuple[str, str] | None = None
    #: Slots it came close to without being merged (subject, predicate, score), best first.
    near: tuple[tuple[str, str, float], ...] = ()


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
    usage: dict[str, Usage] = {}  # restated stored facts → their new usage state
    stored_ids: set[str] = set()
    outcomes: list[FactOutcome] = []
    slot_cache: dict[tuple[str, str, str], list[MemoryRecord]] = {}

    # Pass 1: where each fact resolves (semantic slot matching sees the facts before it as written).
    matched: list[tuple[MemoryRecord, list[str]]] = []
    naming: dict[str, tuple[tuple[str, str] | None, tuple[tuple[str, str, float], ...]]] = {}
    provisional = dict(writes)
    for fact in facts:
        assert fact.subject is not None and fact.predicate is not None and fact.object is not None
        flagged: list[str] = []
        if matcher is not None:
            match = matcher.match(fact, now, provisional)
            named = (fact.subject, fact.predicate) if match.matched is not None else None
            naming[fact.id] = (named, tuple((k[0], k[1], round(score, 3)) for k, score in match.near))
            fact, flagged = match.fact, match.conflicts
        provisional[fact.id] = fact
        matched.append((fact, flagged))
    # Every slot the facts touch, read in one query, as it will be with this commit's rows.
    wanted = {_slot_key(f) for f, _ in matched}
    for project in sorted({k[0] for k in wanted}):
        pairs = [(k[1], k[2]) for k in wanted if k[0] == project]
        stored = store.find(Filter().projects([project]).slots(pairs).known(now), with_vectors=True)
        stored_ids.update(r.id for r in stored)
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
            anchors = {**target.anchors, **fact.anchors}
            paths = list(dict.fromkeys(target.paths + fact.paths))
            if target.id in stored_ids and target.id not in writes:  # stored: its row stays as written
                state = _state(usage, target, now)
                state = replace(
                    state,
                    boost=state.boost + REINFORCE_STEP,
                    restated_by=list(dict.fromkeys([*state.restated_by, *fact.source_ids])),
                    paths=list(dict.fromkeys([*state.paths, *fact.paths])),
                    anchors={**state.anchors, **fact.anchors},
                )
                usage[target.id] = state
                updated = target.raw().with_usage(state)
            else:  # written in this same commit: the new row takes the restatement
                updated = target.copy(
                    salience=target.salience + REINFORCE_STEP, source_ids=merged_sources, anchors=anchors, paths=paths
                )
                writes[updated.id] = updated
            _replace(rows, updated)
            named, near = naming.get(fact.id, (None, ()))
            outcomes.append(
                FactOutcome("reinforced", updated.id, fact.subject, fact.predicate, fact.object, named=named, near=near)
            )
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
            new_fact = new_fact.copy(conflicts_with=list(dict.fromkeys([*new_fact.conflicts_with, *flagged])))
            for other in _flag(store, writes, usage, stored_ids, flagged, new_fact.id, now):
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
                named=naming.get(fact.id, (None, ()))[0],
                near=naming.get(fact.id, (None, ()))[1],
            )
        )

    for row in _fit_chunks_to_facts(store, writes, now):
        writes[row.id] = row

    store.upsert(list(writes.values()))
    store.usage.append(list(usage.values()))
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


def _flag(
    store: MemoryStore,
    writes: dict[str, MemoryRecord],
    usage: dict[str, Usage],
    stored_ids: set[str],
    ids: list[str],
    new_id: str,
    now: datetime,
) -> list[MemoryRecord]:
    """The other end of a conflict: each live row of `ids` learns that `new_id` disagrees with it — a row new
    in this commit in its own column, a stored one in its usage state. Returns the rows as readers now see them."""
    missing = [i for i in ids if i not in writes]
    loaded = {r.id: r for r in store.find(Filter().ids(missing))} if missing else {}
    marked = []
    for memory_id in ids:
        row = writes.get(memory_id) or loaded.get(memory_id)
        if row is None or row.expired_at is not None:
            continue
        if memory_id in writes and memory_id not in stored_ids:
            updated = row.copy(conflicts_with=list(dict.fromkeys([*row.conflicts_with, new_id])))
            writes[memory_id] = updated
        else:
            state = _state(usage, row, now)
            usage[memory_id] = state = replace(state, conflicts_with=list(dict.fromkeys([*state.conflicts_with, new_id])))
            updated = row.raw().with_usage(state)
        marked.append(updated)
    return marked


def _state(usage: dict[str, Usage], row: MemoryRecord, now: datetime) -> Usage:
    """The usage state a new change of stored `row` extends (this commit's, else the stored one), stamped `now`."""
    state = usage.get(row.id) or row.usage or Usage(id=row.id, at=now)
    return replace(state, at=max(now, state.at))


def _slot_key(row: MemoryRecord) -> tuple[str, str, str]:
    return (row.project, row.subject or "", row.predicate or "")


def _replace(rows: list[MemoryRecord], updated: MemoryRecord) -> None:
    for i, row in enumerate(rows):
        if row.id == updated.id:
            rows[i] = updated


def _remove(rows: list[MemoryRecord], memory_id: str) -> None:
    rows[:] = [r for r in rows if r.id != memory_id]
