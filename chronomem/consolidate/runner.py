"""The consolidator's scheduler: bounded background steps between tool calls, one per store.

After every tool call the server pokes the runner. It waits until no call has been in
flight for `idle_seconds`, then takes one bounded step under the store's consolidation lock
(storage/locks.py: a file lock in a local store directory, a lease in the bucket of a store in
object storage), so several servers on one store — on one machine or several — never consolidate
at once; the others skip. A step already running finishes but none starts while calls flow. A
crashed holder's lock is released by the OS with its process (flock), or its lease expires.

A step is the first of these that has work, cheapest and most urgent first:
1. rules extraction over pending chunks (stage_rules.py; up to 48 chunks, ended early by a waiting call);
2. LLM extraction when a model can be asked (stage_llm.py; 8 chunks, ≤ 8 calls): the MCP client's own model through
   sampling when the server was handed a client that offers it (`use_sampling`; within
   `CHRONOMEM_SAMPLING_CALLS_PER_HOUR`, off with `CHRONOMEM_SAMPLING=off`), else the litellm model of
   `CHRONOMEM_LLM_MODEL`; with neither, none (`usage` reports what each has cost);
3. recall hits → salience (salience.py; one commit);
4. index upkeep: `optimize()` once 50 rows are unindexed (~0.6 s at 100k rows);
5. the vector index, once the table is large (upkeep.py; tens of seconds, no write lock held).
Entity views (entities.py) have no step: they are computed on read from the facts these steps keep current,
so they are never stale and as_of on them needs no history of their own.
When none has work, an idle moment takes the scheduled backup (storage/backup.py: every
`BACKUP_INTERVAL` of changes, a snapshot file read from one version, no write lock held), a batch at a
time, pausing whenever calls flow: at 1M rows it reads and compresses gigabytes, which took the cores from
the calls (recall p95 511 ms against a 41 ms median in eval/results/latency.md before it paused).
One step does not wait for a quiet moment: after `upkeep.BURST_UPKEEP_COMMITS` appends without an
`optimize()` (a burst of writes), compaction runs while calls flow, because every further small
fragment makes each commit slower — where an `optimize()` is quick (upkeep.needs_burst_upkeep).
The bound on what a tool call waits for: reads never wait for the consolidator (they only
share the CPU). A write waits for the write lock at most for the chunk being committed
(the rules stage ends its batch as soon as a write is waiting, and releases the lock after
`stage_rules.LOCK_HOLD_BUDGET` = 0.25 s in any case), for one salience commit, or for one
`optimize()` (~0.6 s at 100k rows). LLM calls and vector-index builds never hold the lock.
A store that refuses writes — read-only or forbidden, a full disk or quota (storage/doctor.py's
`resource_errno`) — pauses consolidation: one warning line on stderr (no traceback; the server's reads
go on), a rest of `RESOURCE_BACKOFF_SECONDS` doubling up to `RESOURCE_BACKOFF_MAX_SECONDS` between
attempts, and a resume, said once, when a step goes through again. Nothing escapes the thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from chronomem.consolidate.extract_llm import LLMConfig, SamplingConfig
from chronomem.consolidate.salience import HitLog, apply_hits
from chronomem.consolidate.slots import SlotMatcher
from chronomem.consolidate.stage_rules import RulesStage
from chronomem.consolidate.upkeep import (
    UPKEEP_BACKLOG,
    UPKEEP_MIN_UNINDEXED,
    VECTOR_INDEX_MIN_ROWS,
    needs_burst_upkeep,
    needs_vector_index,
)
from chronomem.consolidate.watermark import ConsolidationState
from chronomem.errors import ChronomemError
from chronomem.service import MemoryService
from chronomem.storage.backup import BACKUP_INTERVAL
from chronomem.storage.locks import CONSOLIDATE_LOCK_NAME, store_lock

log = logging.getLogger(__name__)

#: Quiet time after the last tool call before a background step starts.
IDLE_SECONDS = 0.25
#: How often a waiting consolidator looks whether a burst of writes needs compacting.
BURST_POLL_SECONDS = 0.25
#: After a failure that is the machine's (a read-only or forbidden store, a full disk: storage/doctor.py's
#: `resource_errno`), how long the consolidator rests before it tries again; each failure in a row doubles it, up
#: to the max. One warning per streak says so; the calls themselves go on (reads need no write).
RESOURCE_BACKOFF_SECONDS = 30.0
RESOURCE_BACKOFF_MAX_SECONDS = 900.0


@dataclass
class StepReport:
    did: str
    seconds: float
    detail: str = ""
    counts: dict[str, int] = field(default_factory=dict)


class Consolidator:
    """Runs consolidation steps on a daemon thread while the server is idle."""

    def __init__(
        self,
        svc: MemoryService,
        idle_seconds: float = IDLE_SECONDS,
        llm: LLMConfig | None | str = "env",
        sampling: SamplingConfig | None | str = "env",
        vector_index_min_rows: int = VECTOR_INDEX_MIN_ROWS,
        backup_interval: timedelta = BACKUP_INTERVAL,
        resource_backoff: float = RESOURCE_BACKOFF_SECONDS,
    ) -> None:
        self.svc = svc
        self.idle_seconds = idle_seconds
        self.llm = LLMConfig.from_env() if llm == "env" else llm
        assert self.llm is None or isinstance(self.llm, LLMConfig)
        chosen = SamplingConfig.from_env() if sampling == "env" else sampling
        assert chosen is None or isinstance(chosen, SamplingConfig)
        #: How the client's own model may be asked (None or not `enabled`: never).
        self.sampling = chosen if chosen is not None and chosen.enabled else None
        self.vector_index_min_rows = vector_index_min_rows
        #: How old the newest backup may get before an idle moment takes another (storage/backup.py).
        self.backup_interval = backup_interval
        #: Backups this consolidator took.
        self.backups: list[Any] = []
        #: Ids recall returned, applied to salience by a later step.
        self.hits = HitLog()
        self._matcher: SlotMatcher | None = None
        self._rules = RulesStage(svc, self.matcher)
        self._llm_stage: Any = None
        self._client: Any = None  # the litellm client, when CHRONOMEM_LLM_MODEL is set
        self._sampler: Any = None  # the client's model through sampling, once the server hands one over
        if self.llm is not None:
            from chronomem.consolidate.extract_llm import LLMClient

            self._client = LLMClient(self.llm)
            self._stage()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._in_flight = 0
        self._last_call = time.monotonic()
        self._state = threading.Lock()
        self._thread: threading.Thread | None = None
        self.steps: list[StepReport] = []
        #: The consolidation lock (a lease on a shared store) while a step holds it, else None.
        self.lease: Any = None
        #: Why consolidation rests (the store cannot be written: read-only, forbidden, full), else None.
        self.paused: str | None = None
        #: Attempts the store refused (each followed by a rest), for status and tests.
        self.refusals = 0
        self._first_backoff = resource_backoff
        self._backoff = resource_backoff
        self._resume_at = 0.0

    # -- tool-call bookkeeping (called by the server) -------------------------------
    def call_started(self) -> None:
        with self._state:
            self._in_flight += 1

    def call_finished(self, wake: bool = True) -> None:
        """A call ended; with `wake`, the background thread (started on first use) gets its turn."""
        with self._state:
            self._in_flight -= 1
            self._last_call = time.monotonic()
        if wake:
            self._wake.set()
            self.start()

    def use_sampling(self, transport: Any) -> bool:
        """The server's hook: `transport` (server/sampling.py) asks the connected MCP client's model; it comes
        first among the models the LLM stage asks while `transport.available()`. False when sampling is off."""
        if self.sampling is None:
            return False
        from chronomem.consolidate.extract_llm import HourlyBudget, LLMClient

        # a client that fails is dropped by the transport until its next call; three failures in a row pause it
        self._sampler = LLMClient(self.sampling.llm_config(), transport=transport,
                                  hourly=HourlyBudget(self.sampling.calls_per_hour),
                                  pause_min=60.0, pause_max=600.0, free_failures=2)
        self._stage()
        return True

    def llm_clients(self) -> list[Any]:
        """The models the LLM stage may ask, in order of preference: the client's (sampling), then litellm's."""
        return [c for c in (self._sampler, self._client) if c is not None]

    def _stage(self) -> Any:
        if self._llm_stage is None:
            from chronomem.consolidate.stage_llm import LLMStage

            self._llm_stage = LLMStage(self.svc, self.llm_clients, self.matcher)
        return self._llm_stage

    def _asking(self) -> Any:
        """The model that would be asked now, or None (then the consolidator is today's rules alone)."""
        return self._llm_stage.client() if self._llm_stage is not None else None

    def usage(self) -> dict[str, dict[str, float]]:
        """Calls, tokens (when answers say them), notes and failures per LLM transport, over the store's life."""
        from chronomem.consolidate.stage_llm import usage_totals

        return usage_totals(ConsolidationState.load(self.svc.store.path))

    def record_hits(self, ids: Iterable[str], at: datetime | None = None) -> None:
        """Note that recall returned these ids (cheap; salience is raised by a later step)."""
        self.hits.record(ids, at or self.svc.now())

    def matcher(self) -> SlotMatcher:
        """The consolidator's slot matcher: with the LLM as judge of ambiguous slots while one can be asked."""
        store = self.svc.store
        if self._matcher is None or self._matcher.store is not store:
            self._matcher = SlotMatcher(store, self.svc.embedder)
        self._matcher.judge = self._judge if self._asking() is not None else None
        return self._matcher

    def _judge(self, new: Any, existing: Any) -> bool | None:
        from chronomem.consolidate.extract_llm import (
            BudgetExhausted,
            CallBudget,
            LLMError,
            MalformedAnswer,
            judge_messages,
            parse_judgement,
        )

        client = self._asking()
        if client is None:
            return None
        try:
            decided = client.ask(judge_messages(new, existing), parse_judgement, CallBudget(client.config.max_attempts))
        except LLMError as exc:
            log.info("LLM could not judge slot %s/%s (%s paused): %s", new.subject, new.predicate, client.name, exc)
            client.failed()
            return None
        except (BudgetExhausted, MalformedAnswer) as exc:
            log.info("LLM could not judge slot %s/%s: %s", new.subject, new.predicate, exc)
            return None
        client.succeeded()
        return decided

    def _call_waiting(self) -> bool:
        """A write of this process waits for the store's write lock (reads never wait for it)."""
        return self.svc.write_waiters() > 0

    def _idle_for(self) -> float:
        with self._state:
            if self._in_flight:
                return -1.0
            return time.monotonic() - self._last_call

    # -- the background thread ------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="chronomem-consolidator", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if time.monotonic() < self._resume_at:
                continue  # resting after the store refused a write (`_refused`): the next call after it tries again
            try:
                self._work()
            except Exception as exc:  # the thread must outlive anything: the server relies on it for good
                if not self._refused(exc):
                    log.exception("the consolidator's loop failed; it goes on at the next call")

    def _work(self) -> None:
        """Steps until none has work (or calls flow), then the scheduled backup."""
        while not self._stop.is_set():
            idle = self._idle_for()
            busy = idle < self.idle_seconds
            if busy and not self._burst_due():
                time.sleep(min(max(self.idle_seconds - max(idle, 0.0), 0.01), BURST_POLL_SECONDS))
                continue
            try:
                report = self.step(self._burst_upkeep if busy else self._one_step)
            except Exception as exc:
                if self._refused(exc):
                    return
                if isinstance(exc, ChronomemError):
                    log.warning("consolidation step skipped: %s", exc)
                else:  # keep the server up; the log says what failed
                    log.exception("consolidation step failed")
                report = None
            else:
                self._writable_again()
            if report is None:
                if not busy:
                    self._scheduled_backup()
                break

    def _refused(self, exc: BaseException) -> bool:
        """Whether `exc` is the machine refusing a write (read-only or forbidden store, full disk, quota); if so,
        rest before trying again (doubling up to RESOURCE_BACKOFF_MAX_SECONDS) and, the first time in a row, say so
        in one warning line — no traceback: nothing is wrong with chronomem or the store."""
        from chronomem.storage.doctor import resource_errno, resource_error

        if resource_errno(exc) is None:
            return False
        self.refusals += 1
        rest = self._backoff
        self._resume_at = time.monotonic() + rest
        self._backoff = min(rest * 2, RESOURCE_BACKOFF_MAX_SECONDS)
        if self.paused is None:
            said = resource_error(self.svc.settings.store_path, exc) or exc
            self.paused = str(said)
            log.warning(
                "consolidation paused (no facts extracted, no index upkeep, no backups): %s. Tool calls still "
                "answer; it tries again after %.0f s, then less often", self.paused, rest,
            )
        return True

    def _writable_again(self) -> None:
        """A step went through: a rest after a refused write is over."""
        if self.paused is not None:
            log.warning("consolidation resumed: the store takes writes again")
            self.paused = None
        self._backoff = self._first_backoff

    # -- one bounded step ---------------------------------------------------------------------
    def step(self, work: Callable[[Any], StepReport | None] | None = None) -> StepReport | None:
        """Do one unit of pending work (`work`: the next of the list above) under the store's consolidation lock;
        None when there is none."""
        from filelock import Timeout

        store = self.svc.store
        lock = store_lock(store.path, CONSOLIDATE_LOCK_NAME)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return None  # another process is consolidating this store
        try:
            start = time.perf_counter()
            self.lease = lock
            # on a shared store, this step's commits are fenced by the consolidation lease too (storage/remote.py)
            fence = lock.ensure_held if hasattr(lock, "ensure_held") else _unfenced
            with self.svc.fenced_by(fence):
                report = (work or self._one_step)(store)
            if report is None:
                return None
            report.seconds = time.perf_counter() - start
            self.steps.append(report)
            if len(self.steps) > 2000:
                del self.steps[:1000]
            return report
        finally:
            self.lease = None
            lock.release()

    def _scheduled_backup(self) -> None:
        """Nothing else to do: take the backup the schedule wants (storage/backup.py), under the consolidation
        lock, without the write lock (it reads one version). Kept out of `steps`: it is not consolidation."""
        from filelock import Timeout

        from chronomem.storage.backup import backup_due, take_backup

        try:
            store = self.svc.store
            if store.remote:
                return  # backups are files beside a local store; a bucket keeps its own versions (README)
            lock = store_lock(store.path, CONSOLIDATE_LOCK_NAME)
            lock.acquire(timeout=0)
        except (ChronomemError, Timeout):
            return
        except OSError as exc:  # the lock file cannot be made: a read-only or forbidden store rests (`_refused`)
            if not self._refused(exc):
                log.warning("the scheduled backup could not take the consolidation lock: %s", exc)
            return
        try:
            if backup_due(store, self.backup_interval):
                started = time.perf_counter()
                made = take_backup(store, pause=self._pause_for_calls)
                self.backups.append(made)
                log.info("backup %s taken in %.2f s", made.path.name, time.perf_counter() - started)
        except _Stopping:
            log.info("the scheduled backup was abandoned: the server is stopping")
        except Exception as exc:  # a backup that fails must not stop the server; doctor reports its age
            if not self._refused(exc):
                log.warning("the scheduled backup failed: %s", exc)
        finally:
            lock.release()

    def _pause_for_calls(self) -> None:
        """Wait until no call has been in flight for `idle_seconds` (between a backup's batches)."""
        while (idle := self._idle_for()) < self.idle_seconds:
            if self._stop.is_set():
                raise _Stopping
            time.sleep(min(max(self.idle_seconds - max(idle, 0.0), 0.01), BURST_POLL_SECONDS))
        if self._stop.is_set():
            raise _Stopping

    def _burst_due(self) -> bool:
        """Enough appends since the last `optimize()` to compact without waiting for a quiet moment."""
        try:
            return _burst_upkeep_due(self.svc.store)
        except ChronomemError:  # the store does not open: the step says so when the calls stop
            return False

    def _burst_upkeep(self, store: Any) -> StepReport | None:
        """Compaction during a burst of writes (checked again under the lock: another step may have done it)."""
        if not _burst_upkeep_due(store):
            return None
        with self.svc.writing():
            store.optimize()
        return StepReport("index upkeep", 0.0, "during a burst of writes")

    def _one_step(self, store: Any) -> StepReport | None:
        state = ConsolidationState.load(store.path)
        if store.unindexed_rows() >= UPKEEP_BACKLOG:  # a long backlog: compact between batches, or reads slow down
            with self.svc.writing():
                store.optimize()
            return StepReport("index upkeep", 0.0)
        extracted = self._rules.run(state, should_yield=self._call_waiting)
        if extracted is not None:
            counts = {k: int(v) for k, v in vars(extracted).items()}
            return StepReport("extract rules", 0.0, extracted.text(), counts)
        if self._llm_stage is not None:
            asked = self._llm_stage.run(state)
            if asked is not None:
                counts = {k: v for k, v in vars(asked).items() if isinstance(v, int)}
                return StepReport("extract llm", 0.0, asked.text(), counts)
        hits = self.hits.take()
        if hits:
            changed = apply_hits(self.svc, hits)
            return StepReport("salience", 0.0, f"{changed} recall hit(s) reinforced", {"hits": changed})
        if store.unindexed_rows() >= UPKEEP_MIN_UNINDEXED:
            with self.svc.writing():
                store.optimize()
            return StepReport("index upkeep", 0.0)
        rows = store.count()
        trained = state.data.get("vector_index", {}).get("trained_rows") or store.vector_index_rows()
        if needs_vector_index(rows, trained, min_rows=self.vector_index_min_rows):
            store.build_vector_index()  # long, but without the write lock: calls keep flowing
            state = ConsolidationState.load(store.path)
            state.data["vector_index"] = {"trained_rows": rows}
            state.save()
            return StepReport("vector index", 0.0, f"trained on {rows} rows", {"rows": rows})
        return None

    def run_to_completion(self, force_upkeep: bool = True) -> list[StepReport]:
        """Work until nothing is pending (for `chronomem consolidate`, CI and cron)."""
        done: list[StepReport] = []
        while (report := self.step()) is not None:
            done.append(report)
        if force_upkeep and (not done or done[-1].did != "index upkeep"):
            store = self.svc.store
            start = time.perf_counter()
            with self.svc.writing():
                store.optimize()
            done.append(StepReport("index upkeep", time.perf_counter() - start))
        return done

    def pending_chunks(self) -> dict[str, int]:
        """Chunks each extraction stage has yet to process (for status lines and tests)."""
        from chronomem.consolidate.pending import pending

        state = ConsolidationState.load(self.svc.store.path)
        stages = ["rules"] + (["llm"] if self.llm_clients() else [])
        return {s: len(pending(self.svc.store, state.mark(s), 1_000_000)) for s in stages}


def _burst_upkeep_due(store: Any) -> bool:
    return needs_burst_upkeep(store.commits_since_optimize, store.count, store.last_optimize_seconds)


class _Stopping(Exception):
    """The server stops while a backup waits for a quiet moment: the backup is abandoned (its file removed)."""


def _unfenced() -> None:
    """The fence of a local store's consolidation: its lock is a file lock, which a stalled holder keeps."""
