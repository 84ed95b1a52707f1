"""The consolidator's scheduler: bounded background steps between tool calls, one per store.

After every tool call the server pokes the runner. It waits until no call has been in
flight for `idle_seconds`, then takes one bounded step (today: index upkeep when enough
rows are unindexed) under a cross-process lock in the store directory, so several
servers on one store never consolidate at once. A step already running finishes (a
LanceDB optimize is one call, ~0.6 s at 100k rows) but none starts while calls flow.
A crashed holder's lock is released by the OS with its process (flock), so it never
blocks others for good.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from chronomem.errors import ChronomemError
from chronomem.service import MemoryService

log = logging.getLogger(__name__)

CONSOLIDATE_LOCK_NAME = ".consolidate.lock"
#: Unindexed rows that make a full-text index refresh worthwhile.
UPKEEP_MIN_UNINDEXED = 50
#: Quiet time after the last tool call before a background step starts.
IDLE_SECONDS = 0.25


@dataclass
class StepReport:
    did: str
    seconds: float


class Consolidator:
    """Runs consolidation steps on a daemon thread while the server is idle."""

    def __init__(self, svc: MemoryService, idle_seconds: float = IDLE_SECONDS) -> None:
        self.svc = svc
        self.idle_seconds = idle_seconds
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._in_flight = 0
        self._last_call = time.monotonic()
        self._state = threading.Lock()
        self._thread: threading.Thread | None = None
        self.steps: list[StepReport] = []

    # -- tool-call bookkeeping (called by the server) -------------------------------
    def call_started(self) -> None:
        with self._state:
            self._in_flight += 1

    def call_finished(self) -> None:
        with self._state:
            self._in_flight -= 1
            self._last_call = time.monotonic()
        self._wake.set()
        self.start()

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
            while not self._stop.is_set():
                idle = self._idle_for()
                if idle < self.idle_seconds:
                    time.sleep(max(self.idle_seconds - max(idle, 0.0), 0.01))
                    continue
                try:
                    report = self.step()
                except ChronomemError as exc:
                    log.warning("consolidation step skipped: %s", exc)
                    report = None
                except Exception:  # keep the server up; the log says what failed
                    log.exception("consolidation step failed")
                    report = None
                if report is None:
                    break

    # -- one bounded step ---------------------------------------------------------------------
    def step(self) -> StepReport | None:
        """Do one unit of pending work under the store's consolidation lock; None when there is none."""
        from filelock import FileLock, Timeout

        store = self.svc.store
        lock = FileLock(str(store.path / CONSOLIDATE_LOCK_NAME))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            return None  # another process is consolidating this store
        try:
            start = time.perf_counter()
            if store.unindexed_rows() >= UPKEEP_MIN_UNINDEXED:
                with self.svc.writing():
                    store.optimize()
                report = StepReport("index upkeep", time.perf_counter() - start)
                self.steps.append(report)
                return report
            return None
        finally:
            lock.release()

    def run_to_completion(self, force_upkeep: bool = True) -> list[StepReport]:
        """Work until nothing is pending (for `chronomem consolidate`, CI and cron)."""
        done: list[StepReport] = []
        while (report := self.step()) is not None:
            done.append(report)
        if force_upkeep and not done:
            store = self.svc.store
            start = time.perf_counter()
            with self.svc.writing():
                store.optimize()
            done.append(StepReport("index upkeep", time.perf_counter() - start))
        return done
