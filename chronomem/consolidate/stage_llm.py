"""The LLM stage of the consolidator: each pending chunk, with the project's nearest live facts, goes to the LLM.

Runs only when a model can be asked (extract_llm.py), after the rules stage has caught up, one bounded
batch per `run` (`BATCH` chunks, at most `calls_per_batch` calls). The model is the first of the runner's
clients that is available now: the MCP client's own model through sampling (when the connected client
offers it, within its calls per hour), else the litellm model the user configured; with neither the stage
does nothing and the rules alone extract. For a chunk it shows the model the chunk, the top live facts of
its project (dense + full-text search) and the project's slot vocabulary (the subject · predicate names
in use), and applies the answer's operations — ADD, UPDATE(id), INVALIDATE(id) — all in one commit or not
at all:

- every operation is validated before anything is written (ids must be among those shown);
- under the write lock the shown facts named by the answer are read again; if any changed
  meanwhile the whole answer is dropped with a log line;
- an UPDATE is a new fact in the shown fact's slot, resolved like any fact, so an agent-
  stated fact is never superseded by the LLM (the two are flagged as conflicting instead);
- an INVALIDATE of an agent-stated fact is not applied (logged): the agent outranks the LLM.

Rejected answers (malformed after retries) skip the chunk with a log line. When the model is unreachable
(or the client stops answering), the chunk stays pending and that client pauses (extract_llm.LLMClient.failed);
the next step asks the next client, if any. A spent hourly budget leaves the chunk pending too. The stage
keeps its own watermark, shared by both transports: when a model becomes available on a store that already
holds notes, it works through that backlog too, `calls_per_batch` calls per step. Each batch's calls, tokens
(when the answer says them) and notes are in its report, and added up per transport in the consolidator's
state file (`llm_usage`, read by `usage_totals`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from chronomem.consolidate.apply import resolve_and_commit
from chronomem.consolidate.extract_llm import (
    BudgetExhausted,
    CallBudget,
    LLMClient,
    LLMError,
    MalformedAnswer,
    Operation,
    Usage,
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
#: Slot names (subject · predicate) of the project shown with each chunk, the most used first.
VOCABULARY = 40
#: The state file's key for the calls, tokens and notes of each transport, added up over the store's life.
USAGE_KEY = "llm_usage"
USAGE_FIELDS = tuple(f.name for f in fields(Usage))  # what a transport's `Usage` counts


@dataclass
class LLMReport:
    chunks: int = 0
    applied: int = 0
    rejected: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    stopped: str = ""
    transport: str = ""

    def text(self) -> str:
        tail = f"; stopped: {self.stopped}" if self.stopped else ""
        tokens = f", {self.prompt_tokens}+{self.completion_tokens} tokens" if self.prompt_tokens or self.completion_tokens else ""
        via = f" via {self.transport}" if self.transport else ""
        return (
            f"llm{via}: {self.chunks} chunk(s), {self.applied} operation(s) applied, {self.rejected} answer(s) rejected, "
            f"{self.calls} call(s){tokens}{tail}"
        )


def usage_totals(state: ConsolidationState) -> dict[str, dict[str, float]]:
    """Calls, tokens, notes and failures of each transport over the store's life, with calls and tokens per note."""
    out: dict[str, dict[str, float]] = {}
    for name, raw in (state.data.get(USAGE_KEY) or {}).items():
        row: dict[str, float] = {k: int(raw.get(k, 0)) for k in USAGE_FIELDS}
        notes = row["notes"]
        row["calls_per_note"] = round(row["calls"] / notes, 2) if notes else 0.0
        row["tokens_per_note"] = round((row["prompt_tokens"] + row["completion_tokens"]) / notes, 1) if notes else 0.0
        out[name] = row
    return out


class LLMStage:
    """Context-aware LLM extraction over pending chunks, one bounded batch per `run`."""

    name = STAGE

    def __init__(
        self,
        svc: MemoryService,
        clients: Callable[[], Sequence[LLMClient]],
        matcher: Callable[[], SlotMatcher],
        batch: int = BATCH,
    ) -> None:
        self.svc = svc
        self.clients = clients
        self._matcher = matcher
        self.batch = batch

    def client(self) -> LLMClient | None:
        """The model to ask now: the first available client, in the runner's order of preference."""
        return next((c for c in self.clients() if c.available()), None)

    def run(self, state: ConsolidationState) -> LLMReport | None:
        """Process one batch; None when nothing is pending or no model can be asked now."""
        client = self.client()
        if client is None:
            return None
        store = self.svc.store
        mark = state.mark(STAGE)
        keys = pending(store, mark, self.batch)
        if not keys:
            return None
        chunks = {c.id: c for c in load_chunks(store, keys, with_vectors=True)}
        done = sources_of_facts(store, list(chunks))
        budget = CallBudget(client.calls_left())
        report = LLMReport(transport=client.name)
        before = client.usage.as_dict()
        vocabularies: dict[str, list[tuple[str, str]]] = {}
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
            if chunk.project not in vocabularies:
                vocabularies[chunk.project] = slot_names(store, chunk.project, now)
            shown = {f.id: f for f in context}
            messages = extract_messages(display_name(chunk.project), chunk, context, vocabularies[chunk.project])
            try:
                ids = set(shown)
                operations = client.ask(messages, lambda text, ids=ids: parse_operations(text, ids), budget)
            except BudgetExhausted:
                report.stopped = "call budget spent"
                whole_batch = budget.used >= client.config.calls_per_batch
                if whole_batch and not report.chunks and not report.rejected:  # one chunk needs more than a batch
                    log.warning("LLM extraction of chunk %s skipped: it needed more than %d calls", chunk.id, budget.used)
                    processed.append(key)
                    report.rejected += 1
                    client.usage.notes += 1
                break
            except LLMError as exc:
                pause = client.failed()
                log.warning("LLM extraction through %s stopped%s: %s", client.name,
                            f" for {pause:.0f} s" if pause else "", exc)
                report.stopped = "LLM unavailable"
                break
            except MalformedAnswer as exc:
                log.warning("LLM answer for chunk %s skipped: %s", chunk.id, exc)
                client.succeeded()
                client.usage.notes += 1
                report.rejected += 1
                processed.append(key)
                report.chunks += 1
                continue
            client.succeeded()
            client.usage.notes += 1
            report.applied += self._apply(store, chunk, operations, shown)
            processed.append(key)
            report.chunks += 1
        after = client.usage.as_dict()
        spent = {k: after[k] - before[k] for k in USAGE_FIELDS}
        report.calls, report.prompt_tokens, report.completion_tokens, report.failures = (
            spent["calls"], spent["prompt_tokens"], spent["completion_tokens"], spent["failures"])
        totals = state.data.setdefault(USAGE_KEY, {}).setdefault(client.name, {})
        for k, v in spent.items():
            totals[k] = int(totals.get(k, 0)) + v
        mark.advance(processed)
        state.set_mark(STAGE, mark)
        state.save()
        log.info("%s", report.text())
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


def slot_names(store: MemoryStore, project: str, now: Any, limit: int = VOCABULARY) -> list[tuple[str, str]]:
    """The project's slot vocabulary: (subject, predicate) of its live facts, the most used first."""
    counts: dict[tuple[str, str], int] = {}
    for row in store.find(Filter().projects([project]).kinds(["fact"]).live(now, now)):
        if row.subject and row.predicate:
            counts[(row.subject, row.predicate)] = counts.get((row.subject, row.predicate), 0) + 1
    return sorted(counts, key=lambda slot: (-counts[slot], slot))[:limit]
