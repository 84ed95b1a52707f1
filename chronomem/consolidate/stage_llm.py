"""The LLM stage of the consolidator: each pending chunk, with the project's nearest live facts, goes to the LLM.

Runs only when an LLM is configured (extract_llm.py), after the rules stage has caught
up, one bounded batch per `run` (`BATCH` chunks, at most `calls_per_batch` LLM calls).
For a chunk it shows the LLM the chunk and the top live facts of its project (dense +
full-text search) and applies the answer's operations — ADD, UPDATE(id), INVALIDATE(id) —
all in one commit or not at all:

- every operation is validated before anything is written (ids must be among those shown);
- under the write lock the shown facts named by the answer are read again; if any changed
  meanwhile the whole answer is dropped with a log line;
- an UPDATE is a new fact in the shown fact's slot, resolved like any fact, so an agent-
  stated fact is never superseded by the LLM (the two are flagged as conflicting instead);
- an INVALIDATE of an agent-stated fact is not applied (logged): the agent outranks the LLM.

Rejected answers (malformed after retries) skip the chunk with a log line. When the LLM
is unreachable, the chunk stays pending and the stage pauses (30 s, doubling to 10 min).
The stage keeps its own watermark: when an LLM is configured on a store that already holds
notes, it works through that backlog too, `calls_per_batch` calls per step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from chronomem.consolidate.apply import resolve_and_commit
from chronomem.consolidate.extract_llm import (
    BudgetExhausted,
    CallBudget,
    LLMClient,
    LLMError,
    MalformedAnswer,
    Operation,
    extract_messages,
    parse_operations,
)
from chronomem.consolidate.pending import fact_row, live_facts_near, load_chunks, pending, sources_of_facts
from chronomem.consolidate.resolve import EXTRACTED_SOURCES
from chronomem.consolidate.slots import SlotMatcher
from chronomem.consolidate.watermark import ConsolidationState
from chronomem.project import display_name
from chronomem.records import MemoryRecord, fact_sentence, normalize_predicate, normalize_subject
from chronomem.service import MemoryService
from chronomem.storage import Filter, MemoryStore

log = logging.getLogger(__name__)

STAGE = "llm"
#: Chunks per batch.
BATCH = 8
#: Live facts of the project shown with each chunk.
CONTEXT_FACTS = 12
PAUSE_MIN, PAUSE_MAX = 30.0, 600.0


@dataclass
class LLMReport:
    chunks: int = 0
    applied: int = 0
    rejected: int = 0
    calls: int = 0
    stopped: str = ""

    def text(self) -> str:
        tail = f"; stopped: {self.stopped}" if self.stopped else ""
        return (
            f"llm: {self.chunks} chunk(s), {self.applied} operation(s) applied, {self.rejected} answer(s) rejected, "
            f"{self.calls} call(s){tail}"
        )


class LLMStage:
    """Context-aware LLM extraction over pending chunks, one bounded batch per `run`."""

    name = STAGE

    def __init__(
        self, svc: MemoryService, client: LLMClient, matcher: Callable[[], SlotMatcher], batch: int = BATCH
    ) -> None:
        self.svc = svc
        self.client = client
        self._matcher = matcher
        self.batch = batch
        self._paused_until = 0.0
        self._pause = PAUSE_MIN

    def paused(self) -> bool:
        return time.monotonic() < self._paused_until

    def run(self, state: ConsolidationState) -> LLMReport | None:
        """Process one batch; None when nothing is pending or the LLM is paused."""
        if self.paused():
            return None
        store = self.svc.store
        mark = state.mark(STAGE)
        keys = pending(store, mark, self.batch)
        if not keys:
            return None
        chunks = {c.id: c for c in load_chunks(store, keys, with_vectors=True)}
        done = sources_of_facts(store, list(chunks))
        budget = CallBudget(self.client.config.calls_per_batch)
        report = LLMReport()
        processed = []
        for key in keys:
            chunk = chunks.get(key[0])
            if chunk is None or chunk.expired_at is not None or done[chunk.id] & {"agent", "import", STAGE}:
                processed.append(key)
                continue
            now = self.svc.now()
            context = live_facts_near(
                store, chunk.project, chunk.vector or self.svc.embed_one(chunk.content), chunk.content,
                at=chunk.valid_at, now=now, limit=CONTEXT_FACTS,
            )
            shown = {f.id: f for f in context}
            messages = extract_messages(display_name(chunk.project), chunk, context)
            try:
                ids = set(shown)
                operations = self.client.ask(messages, lambda text, ids=ids: parse_operations(text, ids), budget)
            except BudgetExhausted:
                report.stopped = "call budget spent"
                if not report.chunks and not report.rejected:  # one chunk needs more than a whole batch: give up on it
                    log.warning("LLM extraction of chunk %s skipped: it needed more than %d calls", chunk.id, budget.used)
                    processed.append(key)
                    report.rejected += 1
                break
            except LLMError as exc:
                log.warning("LLM extraction paused for %.0f s: %s", self._pause, exc)
                self._paused_until = time.monotonic() + self._pause
                self._pause = min(self._pause * 2, PAUSE_MAX)
                report.stopped = "LLM unavailable"
                break
            except MalformedAnswer as exc:
                log.warning("LLM answer for chunk %s skipped: %s", chunk.id, exc)
                report.rejected += 1
                processed.append(key)
                report.chunks += 1
                continue
            self._pause = PAUSE_MIN
            report.applied += self._apply(store, chunk, operations, shown)
            processed.append(key)
            report.chunks += 1
        report.calls = budget.used
        mark.advance(processed)
        state.set_mark(STAGE, mark)
        state.save()
        return report

    def _apply(self, store: MemoryStore, chunk: MemoryRecord, ops: list[Operation], shown: dict[str, MemoryRecord]) -> int:
        """Write one answer's operations in one commit; 0 when it no longer applies."""
        if not ops:
            return 0
        slots: list[tuple[str, str, str]] = []
        for op in ops:
            if op.op == "ADD":
                assert op.subject and op.predicate and op.object
                slots.append((normalize_subject(op.subject), normalize_predicate(op.predicate), op.object))
            elif op.op == "UPDATE":
                target = shown[op.id or ""]
                assert target.subject and target.predicate and op.object
                slots.append((target.subject, target.predicate, op.object))
        vectors = self.svc.embedder.embed([fact_sentence(s, p, o) for s, p, o in slots]) if slots else []
        matcher = self._matcher()
        matcher.judging = False  # an ambiguous slot under the lock is flagged, never sent to the LLM
        try:
            with self.svc.writing():
                now = self.svc.now()
                named = [op.id for op in ops if op.id]
                current = {r.id: r for r in store.find(Filter().ids(named).known(now), with_vectors=True)} if named else {}
                changed = [i for i in named if i not in current or current[i].invalid_at != shown[i].invalid_at]
                if changed:
                    log.warning("LLM answer for chunk %s dropped: %s changed since it was shown", chunk.id, changed[0])
                    return 0
                facts: list[MemoryRecord] = []
                vector_iter = iter(vectors)
                for op in ops:
                    if op.op == "INVALIDATE":
                        continue
                    s, p, o = slots[len(facts)]
                    valid_at = op.valid_from or chunk.valid_at
                    if op.op == "UPDATE":
                        valid_at = max(valid_at, current[op.id or ""].valid_at)
                    facts.append(
                        fact_row(chunk, s, p, o, valid_at=valid_at, now=now, vector=next(vector_iter),
                                 embed_model=self.svc.embedder.name, source=STAGE)
                    )
                new_slots = {(f.subject, f.predicate) for f in facts}
                extra: list[MemoryRecord] = []
                for op in ops:
                    if op.op != "INVALIDATE":
                        continue
                    target = current[op.id or ""]
                    if target.source not in EXTRACTED_SOURCES:
                        log.info("LLM asked to invalidate %s, stated by %s: not applied", target.id, target.source)
                        continue
                    if (target.subject, target.predicate) in new_slots:
                        continue  # a new value in the same answer closes it already
                    end = max(chunk.valid_at, target.valid_at)
                    reason = f"invalidated by the LLM reading {chunk.id}" + (f": {op.reason}" if op.reason else "")
                    revision = MemoryStore.revision(target, invalid_at=end, now=now, reason=reason)
                    extra += [MemoryStore.expired(target, now=now, reason=f"revised as {revision.id}: {reason}"), revision]
                if facts:
                    resolve_and_commit(store, facts, now, extra_rows=extra, matcher=matcher)
                elif extra:
                    store.upsert(extra)
                return len(facts) + len(extra) // 2
        finally:
            matcher.judging = True
