"""The rules stage of the consolidator: pending chunks → `extract_rules` → facts resolved like the agent's.

One call of `run` handles one bounded batch (`BATCH` chunks, oldest first):
extraction and embedding happen outside the store's write lock; resolution and commits
inside it; then the stage's watermark moves past the batch. Chunks the agent already
structured (they carry agent facts) are skipped: the agent's own facts are trusted first.

Beyond plain facts, the stage applies
- retractions ("ignore what I said about X"): the matching live fact is retracted (expired,
  never true), with the chunk that stated it when that chunk said nothing else; a stated
  right value is added in the same slot from the retracted fact's valid time;
- value moves ("we moved from X to Y"): the one live slot whose value is X gets Y.
Matching is conservative: a retraction that names the wrong value needs that value on the
fact plus a related topic; one that does not needs a close, unambiguous topic match.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from chronomem.consolidate.apply import resolve_and_commit
from chronomem.consolidate.extract_rules import Extraction, extract, split_sentences
from chronomem.consolidate.pending import (
    facts_of_edited_notes,
    facts_with_value,
    fact_row,
    live_facts_near,
    load_chunks,
    pending,
    phrase_of,
    sources_of_facts,
    value_matches,
)
from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES, is_event
from chronomem.consolidate.restate import (
    RESTATES_FACT,
    SHAPELESS_KINDS,
    SlotClue,
    SlotView,
    mentions_slot,
    pick,
    restatements,
    thing_words,
)
from chronomem.consolidate.slots import AMBIGUOUS_SLOT, SlotMatcher, cosine, slot_phrase
from chronomem.consolidate.watermark import ConsolidationState
from chronomem.facts import STRUCTURE_SOURCE, about_other_project
from chronomem.project import display_name
from chronomem.records import MemoryRecord, differs_only_in_values, fact_sentence, value_kind
from chronomem.service import MemoryService
from chronomem.storage import Filter, MemoryStore

log = logging.getLogger(__name__)

STAGE = "rules"
#: Chunks per batch (a waiting tool call ends a batch early, so this bounds work, not lock waits).
BATCH = 48
#: A retraction naming the wrong value: the fact must hold that value and its slot relate this much to the topic.
RETRACT_WITH_VALUE = 0.45
#: A retraction naming only a topic: the slot must match it this closely, and beat the runner-up by `RETRACT_MARGIN`.
RETRACT_TOPIC_ONLY = 0.80
RETRACT_MARGIN = 0.05
#: Longest the stage holds the write lock before it ends its batch (plus the chunk in progress).
LOCK_HOLD_BUDGET = 0.25
#: Who states the slots a fact-less note may restate (`_restating_candidates`): anyone but the extractors.
STATED_SOURCES = ("agent", "import", STRUCTURE_SOURCE)


@dataclass
class BatchReport:
    chunks: int = 0
    facts: int = 0
    retracted: int = 0
    skipped: int = 0
    yielded: bool = False

    def text(self) -> str:
        if self.yielded and not self.chunks:
            return "rules: yielded to a tool call before writing"
        return (
            f"rules: {self.chunks} chunk(s), {self.facts} fact(s), {self.retracted} retraction(s)"
            + (f", {self.skipped} skipped (agent-structured or done)" if self.skipped else "")
        )


class RulesStage:
    """Rule-based extraction over pending chunks, one bounded batch per `run`."""

    name = STAGE

    def __init__(self, svc: MemoryService, matcher: Callable[[], SlotMatcher], batch: int = BATCH) -> None:
        self.svc = svc
        self._matcher = matcher
        self.batch = batch
        self._vectors: dict[str, list[float]] = {}

    def run(self, state: ConsolidationState, should_yield: Callable[[], bool] = lambda: False) -> BatchReport | None:
        """Process one batch; None when nothing is pending.

        `should_yield` is asked between chunks: when a write is waiting for the lock, the batch
        ends after the current chunk (the rest stay pending) so the write goes next.
        """
        store = self.svc.store
        mark = state.mark(STAGE)
        keys = pending(store, mark, self.batch)
        if not keys:
            return None
        chunks = load_chunks(store, keys)
        done = sources_of_facts(store, [c.id for c in chunks])
        report = BatchReport(chunks=len(keys))
        work: list[tuple[MemoryRecord, list[Extraction]]] = []
        quiet: list[MemoryRecord] = []
        for chunk in chunks:
            if chunk.expired_at is not None or done[chunk.id] & {"agent", "import", STAGE, STRUCTURE_SOURCE}:
                report.skipped += 1
                continue
            found = extract(chunk.content, display_name(chunk.project))
            if found:
                work.append((chunk, found))
            else:
                quiet.append(chunk)
        restating = self._restating_candidates(store, quiet)
        found_in = dict((c.id, found) for c, found in work)
        work = [(c, found_in.get(c.id, [])) for c in chunks if c.id in found_in or c.id in restating]

        texts = [_query_text(e) for _, found in work for e in found]
        embedded = self._embed(texts)
        vectors = iter(embedded)
        matcher = self._matcher()
        if work and matcher.judge is not None:  # LLM questions about ambiguous slots: before the lock, not under it
            now = self.svc.now()
            provisional = [
                fact_row(c, e.subject, e.predicate, e.object, valid_at=e.valid_from or c.valid_at, now=now, vector=v,
                         embed_model=self.svc.embedder.name, source=STAGE)
                for (c, e), v in zip(((c, e) for c, found in work for e in found), embedded, strict=True)
                if e.kind == "fact" and e.subject and e.predicate and e.object
            ]
            matcher.prejudge(provisional, now)
        if work and should_yield():
            return BatchReport(yielded=True)  # a call arrived while we read: let it go first, redo later
        last = len(keys)
        if work:
            matcher.judging = False
            try:
                stopped_at = self._commit(store, matcher, work, vectors, report, should_yield, restating)
            finally:
                matcher.judging = True
            if stopped_at is not None:
                last = next(i for i, (memory_id, _) in enumerate(keys) if memory_id == stopped_at) + 1
                report.chunks, report.yielded = last, True
        keys = keys[:last]
        mark.advance(keys)
        state.set_mark(STAGE, mark)
        state.save()
        return report

    def _commit(
        self,
        store: MemoryStore,
        matcher: SlotMatcher,
        work: list[tuple[MemoryRecord, list[Extraction]]],
        vectors: Iterator[list[float]],
        report: BatchReport,
        should_yield: Callable[[], bool],
        restating: dict[str, dict[tuple[str, str], SlotClue]],
    ) -> str | None:
        """Resolve and write the batch's extractions under the write lock, in chunk order.

        Returns the id of the last chunk handled when it stopped early: for a write waiting on the
        lock, or after holding the lock `LOCK_HOLD_BUDGET` (writers in other processes wait too).
        """
        matcher.forget_slots()  # other writers may have added slots since the last batch
        with self.svc.writing():
            held_since = time.monotonic()
            now = self.svc.now()
            batch: list[MemoryRecord] = []
            for chunk, found in work:
                if not found:
                    report.facts += self._flush(store, batch, now, matcher)
                    batch = []
                    report.facts += self._restate(store, chunk, restating[chunk.id], now)
                for e in found:
                    vector = next(vectors)
                    if e.kind == "fact":
                        assert e.subject and e.predicate and e.object
                        fact = fact_row(
                            chunk, e.subject, e.predicate, e.object, valid_at=e.valid_from or chunk.valid_at,
                            now=now, vector=vector, embed_model=self.svc.embedder.name, source=STAGE,
                        )
                        if e.old_value:
                            fact = self._slot_by_old_value(store, matcher, fact, e.old_value, chunk, now)
                        batch.append(fact)
                        continue
                    report.facts += self._flush(store, batch, now, matcher)
                    batch = []
                    if e.kind == "retract":
                        retracted, added = self._retract(store, matcher, chunk, e, vector, now)
                        report.retracted += retracted
                        report.facts += added
                    else:
                        report.facts += self._move_value(store, chunk, e, vector, now)
                busy = should_yield() or time.monotonic() - held_since > LOCK_HOLD_BUDGET
                if busy and chunk is not work[-1][0]:
                    report.facts += self._flush(store, batch, now, matcher)
                    return chunk.id
            report.facts += self._flush(store, batch, now, matcher)
        return None

    def _embed(self, texts: list[str]) -> list[list[float]]:
        """Embeddings, kept across batches: a batch that ended early is picked up again next time."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            if len(self._vectors) > 4096:
                self._vectors.clear()
            self._vectors.update(zip(missing, self.svc.embedder.embed(missing), strict=True))
        return [self._vectors[t] for t in texts]

    # ------------------------------------------------------------------ writing
    def _flush(self, store: MemoryStore, facts: list[MemoryRecord], now: datetime, matcher: SlotMatcher) -> int:
        by_project: dict[str, list[MemoryRecord]] = {}
        for fact in facts:
            by_project.setdefault(fact.project, []).append(fact)
        for group in by_project.values():
            resolve_and_commit(store, group, now, matcher=matcher)
        return len(facts)

    def _new_fact(
        self, chunk: MemoryRecord, slot: tuple[str, str], obj: str, valid_at: datetime, now: datetime, source: str = STAGE
    ) -> MemoryRecord:
        vector = self.svc.embedder.embed([fact_sentence(slot[0], slot[1], obj)])[0]
        return fact_row(
            chunk, slot[0], slot[1], obj, valid_at=valid_at, now=now, vector=vector,
            embed_model=self.svc.embedder.name, source=source,
        )

    # ------------------------------------------------------------------ matching by stated values
    def _slot_by_old_value(
        self, store: MemoryStore, matcher: SlotMatcher, fact: MemoryRecord, old: str, chunk: MemoryRecord, now: datetime
    ) -> MemoryRecord:
        """"Switched X from A to B": when X names no live slot but one live slot holds A under a related name, use it."""
        assert fact.subject is not None and fact.predicate is not None
        own = Filter().projects([fact.project]).slot(fact.subject, fact.predicate).known(now)
        if store.count(own) > 0:
            return fact
        vector = self.svc.embedder.embed([old])[0]
        holders = [f for f in facts_with_value(store, fact.project, old, vector, at=fact.valid_at, now=now) if _before(f, chunk)]
        phrase = slot_phrase(fact.subject, fact.predicate)
        phrases = matcher.embed_phrases([phrase] + [phrase_of(f) for f in holders])
        related = {
            (f.subject, f.predicate)
            for f in holders
            if f.subject == fact.subject or cosine(phrases[phrase], phrases[phrase_of(f)]) >= AMBIGUOUS_SLOT
        }
        if len(related) != 1:
            return fact
        subject, predicate = next(iter(related))
        assert subject is not None and predicate is not None
        return self._new_fact(chunk, (subject, predicate), fact.object or "", fact.valid_at, now).copy(id=fact.id)

    def _restating_candidates(self, store: MemoryStore, chunks: list[MemoryRecord]) -> dict[str, dict[tuple[str, str], SlotClue]]:
        """For each chunk the rules read nothing in: the live state slots near it that it reads like and whose thing
        it names, or whose stating note's words it says around another value (`restate`; that note found by a
        full-text search of the notes, `facts_of_edited_notes`, whatever the slot's names read like), each with its
        clue. Only slots whose value someone stated (the agent, an import, a restatement): their names are the caller's own,
        while the rules already read their own patterns' changes (on text alone, restating the rules' slots moved
        the generated splits by ±1 answer and cost macro hit@1: dev 0.696 → 0.688, devmem_validation 0.623 → 0.619).

        Searched before the write lock; `_restate` reads the slots' values again under it, so a value an earlier
        chunk of the batch gave is the one replaced."""
        if not chunks:
            return {}
        now = self.svc.now()
        stated = Filter().kinds(["fact"]).sources(STATED_SOURCES).known(now)
        with_stated = {p for p in {c.project for c in chunks} if store.count(stated.projects([p])) > 0}
        chunks = [c for c in chunks if c.project in with_stated]  # a project of text alone: no search at all
        if not chunks:
            return {}
        names = self.svc.project_names()
        vectors = {r.id: r.vector for r in store.find(Filter().ids([c.id for c in chunks]), with_vectors=True)}
        near: dict[str, list[MemoryRecord]] = {}
        for chunk in chunks:
            vector = vectors.get(chunk.id)
            own = display_name(chunk.project)
            if vector is None or about_other_project(chunk.content, [own], [n for n in names.values() if n != own]):
                continue
            found = live_facts_near(store, chunk.project, vector, chunk.content, at=chunk.valid_at, now=now)
            found += facts_of_edited_notes(store, chunk.project, chunk.content, at=chunk.valid_at, now=now)
            near[chunk.id] = [
                f for f in {f.id: f for f in found}.values()
                if _before(f, chunk) and f.source in STATED_SOURCES and f.predicate not in MULTI_VALUED_PREDICATES
                and not is_event(f)
            ]
        ids = {f.id for found in near.values() for f in found}
        facts = {r.id: r for r in store.find(Filter().ids(sorted(ids)), with_vectors=True)} if ids else {}
        sources = {f.source_ids[0] for f in facts.values() if f.source_ids}
        notes = {r.id: r.content for r in store.find(Filter().ids(sorted(sources)))} if sources else {}
        out: dict[str, dict[tuple[str, str], SlotClue]] = {}
        for chunk in chunks:
            own = display_name(chunk.project)
            for f in near.get(chunk.id, []):
                fact = facts.get(f.id)
                key = (f.subject or "", f.predicate or "")
                if fact is None or fact.vector is None or key in out.get(chunk.id, {}):
                    continue
                stated_in = notes.get(fact.source_ids[0], "") if fact.source_ids else ""
                # the stating note's words around another value: how that note named the thing, whatever the fact's
                # own words read like ("final verification command" for "* Use `mage check` when you're done.")
                in_place = differs_only_in_values(stated_in, chunk.content)
                if not in_place and cosine(vectors[chunk.id], fact.vector) < RESTATES_FACT:
                    continue
                words = thing_words(key[0], key[1], own, stated_in)
                # a value of free text has no shape to find in prose, only its place in the stating note's words
                shapeless = value_kind(fact.object or "") in SHAPELESS_KINDS
                if in_place or (not shapeless and mentions_slot(chunk.content, words)):
                    out.setdefault(chunk.id, {})[key] = SlotClue(tuple(words), stated_in)
        return out

    def _restate(
        self, store: MemoryStore, chunk: MemoryRecord, slots: dict[tuple[str, str], SlotClue], now: datetime
    ) -> int:
        """A chunk with no facts that gives one of `slots` a new value (`restate.pick`): that slot now holds it, as a
        `structure` fact, which supersedes the value even when the agent stated it."""
        rows = store.find(Filter().projects([chunk.project]).slots(list(slots)).live(chunk.valid_at, now))
        by_slot: dict[tuple[str, str], list[MemoryRecord]] = {}
        for row in rows:
            if row.kind == "fact" and _before(row, chunk):
                by_slot.setdefault((row.subject or "", row.predicate or ""), []).append(row)
        views = [
            SlotView(key, held[0].object or "", slots[key].words, slots[key].stated_in)
            for key, held in by_slot.items() if len(held) == 1
        ]
        chosen = pick(restatements(chunk.content, views, display_name(chunk.project)))
        if chosen is None:
            return 0
        log.debug("%s restates %s: %r", chunk.id, chosen.slot, chosen.value)
        fact = self._new_fact(chunk, chosen.slot, chosen.value, chunk.valid_at, now, source=STRUCTURE_SOURCE)
        resolve_and_commit(store, [fact], now)
        return 1

    def _move_value(self, store: MemoryStore, chunk: MemoryRecord, e: Extraction, vector: list[float], now: datetime) -> int:
        """"We moved from X to Y": the one live slot holding X now holds Y (nothing when zero or several do)."""
        assert e.old_value and e.object
        holders = [
            f for f in facts_with_value(store, chunk.project, e.old_value, vector, at=chunk.valid_at, now=now)
            if _before(f, chunk)
        ]
        slots = {(f.subject, f.predicate) for f in holders}
        if len(slots) != 1:
            return 0
        subject, predicate = next(iter(slots))
        assert subject is not None and predicate is not None
        fact = self._new_fact(chunk, (subject, predicate), e.object, chunk.valid_at, now)
        resolve_and_commit(store, [fact], now)
        return 1

    def _retract(
        self, store: MemoryStore, matcher: SlotMatcher, chunk: MemoryRecord, e: Extraction, vector: list[float], now: datetime
    ) -> tuple[int, int]:
        """Retract the live fact `e` is about; add its stated right value. Returns (retracted, added)."""
        target = find_retraction_target(store, matcher, chunk, e, vector, now)
        if target is None:
            log.info("retraction in %s matched no live fact (topic %r)", chunk.id, e.topic)
            return 0, 0
        [target] = store.find(Filter().ids([target.id]), with_vectors=True)
        reason = f"retracted by {chunk.id}: {e.evidence[:200]}"
        writes = [MemoryStore.expired(target, now=now, reason=reason)]
        for source in store.find(Filter().ids(target.source_ids).kinds(["chunk"]).known(now), with_vectors=True):
            others = [
                f for f in store.find(Filter().derived_from([source.id]).kinds(["fact"]).known(now))
                if f.id != target.id and f.revision_of != target.id and f.id != target.revision_of
            ]
            if not others and len(split_sentences(source.content)) == 1 and source.id != chunk.id:
                writes.append(MemoryStore.expired(source, now=now, reason=reason))
        if not e.object:
            store.upsert(writes)
            return 1, 0
        assert target.subject is not None and target.predicate is not None
        right = self._new_fact(chunk, (target.subject, target.predicate), e.object, target.valid_at, now)
        resolve_and_commit(store, [right], now, extra_rows=writes)
        return 1, 1


def find_retraction_target(
    store: MemoryStore, matcher: SlotMatcher, chunk: MemoryRecord, e: Extraction, vector: list[float], now: datetime
) -> MemoryRecord | None:
    """The live fact a retraction is about, or None when no fact matches clearly enough."""
    assert e.topic is not None
    candidates = [
        f for f in live_facts_near(store, chunk.project, vector, f"{e.topic} {e.old_value or ''}", at=chunk.valid_at, now=now)
        if _before(f, chunk) and f.subject and f.predicate
    ]
    if not candidates:
        return None
    # A topic names the attribute ("the lint command"), rarely the project: compare without the project's name too.
    own = display_name(chunk.project)
    forms = {f.id: [phrase_of(f)] + ([slot_phrase("", f.predicate or "")] if f.subject == own else []) for f in candidates}
    phrases = matcher.embed_phrases([e.topic] + [p for ps in forms.values() for p in ps])
    scored = sorted(
        ((max(cosine(phrases[e.topic], phrases[p]) for p in forms[f.id]), f) for f in candidates),
        key=lambda p: (-p[0], p[1].id),
    )
    if e.old_value:
        holding = [(s, f) for s, f in scored if value_matches(e.old_value, f.object or "")]
        if holding and holding[0][0] >= RETRACT_WITH_VALUE:
            return holding[0][1]
        return None
    best_score, best = scored[0]
    runner_up = next((s for s, f in scored[1:] if (f.subject, f.predicate) != (best.subject, best.predicate)), 0.0)
    if best_score >= RETRACT_TOPIC_ONLY and best_score - runner_up >= RETRACT_MARGIN:
        return best
    return None


def _before(fact: MemoryRecord, chunk: MemoryRecord) -> bool:
    """True when `fact` was first stated before `chunk` (its earliest source chunk is older)."""
    if chunk.id in fact.source_ids:
        return False
    if fact.source_ids:
        return min(fact.source_ids) < chunk.id  # ULIDs sort by the time they were made
    return fact.created_at <= chunk.created_at


def _query_text(e: Extraction) -> str:
    if e.kind == "fact":
        return fact_sentence(e.subject or "", e.predicate or "", e.object or "")
    if e.kind == "retract":
        return f"{e.topic} {e.old_value or ''}".strip()
    return e.old_value or ""
