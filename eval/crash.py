"""Crash safety: SIGKILL a writer at random moments, then check the store opens, answers, keeps every ack.

    python -m eval.crash [--rounds 50] [--seed 6]

Each round starts a writer process on the same store. The writer loops over remembers
(half with a structured fact on a few shared slots, so supersession rewrites rows in one
`merge_insert` commit), forgets, and forced consolidator steps (LanceDB optimize:
compaction, index refresh, old-version cleanup). It writes `begin <phase>` before each
step and `ack <id>` after each remember returns (`forgot <id>` after each forget), flushing each line, to a log file. The
parent kills it with SIGKILL — at a random time, or right after it begins an optimize, a
remember or a forget — then opens the store in a fresh process-local
connection, reads every row (`chronomem doctor`'s check), runs a recall, and requires
every id acknowledged so far (in any round) to be present and every acknowledged forget
to have expired its row. Writes
eval/results/crash.{json,md}; `run_crash` is what tests/robustness/test_crash.py calls
with fewer rounds.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.stress import PROJECT, child_env

TARGETS = ("random", "optimize", "remember", "forget")
SLOTS = ("port", "test_command", "owner", "db_host")


# ---------------------------------------------------------------------------- the writer (child process)


def _writer(store: Path, log_path: Path, seed: int) -> int:
    from chronomem import tools
    from chronomem.config import Settings
    from chronomem.consolidate.runner import Consolidator
    from chronomem.errors import ChronomemError
    from chronomem.service import MemoryService

    rng = random.Random(seed)
    svc = MemoryService(Settings.from_env(store=store, project=PROJECT))
    svc.embedder.embed(["warm up"])
    svc.store
    consolidator = Consolidator(svc)
    acked: list[str] = []
    with open(log_path, "a", encoding="utf-8") as log:

        def say(event: str) -> None:
            log.write(f"{time.monotonic():.4f} {event}\n")
            log.flush()

        say("ready")
        for i in range(100_000):
            roll = rng.random()
            if roll < 0.15:
                say("begin optimize")
                consolidator.run_to_completion(force_upkeep=True)
                say("end optimize")
            elif roll < 0.25 and acked:
                say("begin forget")
                target = rng.choice(acked)
                try:
                    tools.forget(svc, target, "crash test")
                except ChronomemError:
                    say("end forget")  # refused: nothing to acknowledge
                else:
                    say(f"forgot {target}")
            else:
                slot = rng.choice(SLOTS)
                value = f"{slot}-{seed}-{i}-{rng.randrange(1000)}"
                facts = [{"subject": "svc", "predicate": slot, "object": value}] if rng.random() < 0.5 else None
                say("begin remember")
                result = tools.remember(svc, f"round {seed} write {i}: the {slot} is now {value}", facts=facts)
                acked.append(result.id)
                say(f"ack {result.id}")
    return 0


# ---------------------------------------------------------------------------- the parent


@dataclass
class RoundReport:
    target: str
    killed_in: str
    acked_this_round: int
    ok: bool
    problem: str | None = None


@dataclass
class CrashResult:
    rounds: int
    survived: int
    acknowledged: int
    found: int
    forgets: int = 0
    killed_in: dict[str, int] = field(default_factory=dict)
    targets: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    rows: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.survived == self.rounds and self.found == self.acknowledged


def _read_log(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.split("\n")[:-1]  # the last element is a partial line (or empty)
    return [line.split(" ", 1)[1] for line in lines if " " in line]  # events without their time stamps


def _wait_for(path: Path, predicate: Any, timeout: float, proc: subprocess.Popen[bytes]) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = _read_log(path)
        if predicate(lines):
            return lines
        if proc.poll() is not None:
            raise RuntimeError(f"writer exited with {proc.returncode} before it was killed")
        time.sleep(0.002)
    raise TimeoutError("the writer did not reach the moment to kill it")


def _phase(lines: list[str]) -> str:
    for line in reversed(lines):
        if line.startswith("begin "):
            return line.split(" ", 1)[1]
        if line.startswith(("end ", "ack ", "forgot ")):
            return "between steps"
        if line == "ready":
            return "start-up"
    return "start-up"


def _check_round(store: Path, svc_factory: Any, acked: set[str], forgotten: set[str]) -> tuple[str | None, int]:
    """None when the store opens, reads whole, answers a recall, holds every acked id and shows every
    acknowledged forget (the row expired); else the problem."""
    from chronomem import tools
    from chronomem.storage.doctor import check

    health = check(store)
    if not health.ok:
        return "; ".join(health.problems), health.rows or 0
    svc = svc_factory()
    held = svc.store.ids_exist(acked)
    missing = acked - held
    if missing:
        return f"{len(missing)} acknowledged ids missing, e.g. {sorted(missing)[0]}", health.rows or 0
    if forgotten:
        from chronomem.storage import Filter

        still_open = {r.id for r in svc.store.find(Filter().ids(sorted(forgotten))) if r.expired_at is None}
        if still_open:
            return f"{len(still_open)} acknowledged forgets lost, e.g. {sorted(still_open)[0]}", health.rows or 0
    tools.recall(svc, "what is the port now", limit=5)
    return None, health.rows or 0


def run_crash(store: Path, rounds: int = 50, seed: int = 6, work_dir: Path | None = None) -> CrashResult:
    """`rounds` kill-and-check rounds on `store`; every round must leave a whole store with all acks."""
    from chronomem.config import Settings
    from chronomem.embed import FastEmbedder
    from chronomem.service import MemoryService

    work = work_dir or Path(tempfile.mkdtemp(prefix="chronomem-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    env = child_env()
    model_path = env.get("CHRONOMEM_MODEL_PATH")  # else the shipped model, as the child processes load
    embedder = FastEmbedder(model_path=Path(model_path) if model_path else None)
    embedder.wait()

    def svc_factory() -> MemoryService:
        return MemoryService(Settings.from_env(store=store, project=PROJECT, environ=env), embedder=embedder)

    acked: set[str] = set()
    forgotten: set[str] = set()
    result = CrashResult(rounds=rounds, survived=0, acknowledged=0, found=0)
    killed_in: Counter[str] = Counter()
    targets: Counter[str] = Counter()
    start = time.perf_counter()
    for number in range(rounds):
        target = TARGETS[number % len(TARGETS)]
        targets[target] += 1
        log_path = work / f"round-{number}.log"
        with open(work / f"round-{number}.err", "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "eval.crash", "--writer", str(store), "--log", str(log_path),
                 "--seed", str(seed * 1000 + number)],
                env=env,
                cwd=str(Path(__file__).resolve().parent.parent),
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            try:
                lines = _wait_for(log_path, lambda ls: "ready" in ls, 120, proc)
                if target == "random":
                    time.sleep(rng.uniform(0.05, 2.5))
                else:  # the n-th time it begins that step, so the store has grown a little first
                    seen, marker, nth = len(lines), f"begin {target}", rng.randint(1, 6)
                    _wait_for(log_path, lambda ls, s=seen, m=marker, n=nth: ls[s:].count(m) >= n, 120, proc)
                    time.sleep(rng.uniform(0.0, 0.02))
            finally:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        lines = _read_log(log_path)
        killed_in[_phase(lines)] += 1
        acked |= {line.split(" ", 1)[1] for line in lines if line.startswith("ack ")}
        forgotten |= {line.split(" ", 1)[1] for line in lines if line.startswith("forgot ")}
        problem, rows = _check_round(store, svc_factory, acked, forgotten)
        result.rows = rows
        if problem is None:
            result.survived += 1
        else:
            result.problems.append(f"round {number} ({target}, killed in {_phase(lines)}): {problem}")
    result.seconds = time.perf_counter() - start
    result.acknowledged = len(acked)
    result.forgets = len(forgotten)
    result.found = len(svc_factory().store.ids_exist(acked)) if acked else 0
    result.killed_in = dict(killed_in)
    result.targets = dict(targets)
    return result


def render(r: CrashResult, env: dict[str, Any]) -> str:
    from eval.report import env_lines, md_table

    return "\n".join(
        [
            "# Crash safety: SIGKILL during writes and upkeep",
            "",
            env_lines(env),
            "",
            f"`python -m eval.crash --rounds {r.rounds}`: each round a writer process (remembers, half with a fact "
            "that supersedes the previous value; forgets; forced optimize) is SIGKILLed on the same store — at a "
            "random time, or right after it begins an optimize, a remember or a forget — and the store is "
            "then checked: it opens, every row of the newest version reads, a full-text query and a recall answer, "
            "and every id acknowledged in any round so far is present.",
            "",
            md_table(
                ["figure", "value"],
                [
                    ["rounds survived", f"{r.survived} / {r.rounds}"],
                    ["writes acknowledged (all rounds)", r.acknowledged],
                    ["acknowledged writes found at the end", r.found],
                    ["acknowledged forgets (each still in force after every later kill)", r.forgets],
                    ["rows in the store at the end", r.rows],
                    ["kill aimed at", ", ".join(f"{k} {v}" for k, v in sorted(r.targets.items()))],
                    ["killed while in", ", ".join(f"{k} {v}" for k, v in sorted(r.killed_in.items()))],
                    ["wall time", f"{r.seconds:.0f} s"],
                ],
            ),
            "",
            "Verdict: " + ("the store survived every kill with every acknowledged write." if r.ok else "FAILED:"),
            *[f"- {p}" for p in r.problems],
            "",
            "Why it holds: every chronomem write is one LanceDB commit (an append, or a `merge_insert` that expires "
            "and revises rows together), and a LanceDB commit is the atomic appearance of a new manifest; data files "
            "of an unfinished commit are never referenced. The write lock is an OS file lock, released when its "
            "holder dies, so the next writer never waits on a dead one.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--writer", metavar="STORE", help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        return _writer(Path(args.writer), Path(args.log), args.seed)

    from dataclasses import asdict

    from eval.common import REPO_ROOT
    from eval.report import environment, write_results

    folder = Path(tempfile.mkdtemp(prefix="chronomem-crash-"))
    try:
        result = run_crash(folder / "store", args.rounds, args.seed, work_dir=folder / "work")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    env = environment()
    _, md = write_results("crash", {"environment": env, **asdict(result), "ok": result.ok}, render(result, env))
    print(
        f"survived {result.survived}/{result.rounds} rounds; acknowledged {result.acknowledged}, found {result.found}; "
        f"killed in {result.killed_in}; {result.seconds:.0f} s → {md.relative_to(REPO_ROOT)}"
    )
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
