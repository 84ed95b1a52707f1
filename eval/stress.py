"""Many writers on one store: N `chronomem serve` processes remembering and recalling at once.

    python -m eval.stress [--writers 4] [--per-writer 1000] [--recall-every 4]

Spawns `--writers` real MCP servers over stdio on one fresh store, each driven by its own
`mcp` client in one event loop: `--per-writer` remembers, a recall after every
`--recall-every`-th. A separate consolidator process runs index upkeep (LanceDB optimize:
compaction, index refresh, version cleanup) in a loop the whole time. Afterwards the store
is opened fresh and every acknowledged id must be there exactly once, with its text, and
no row may be duplicated. Writes eval/results/stress.{json,md}; `run_stress` is what
tests/robustness/test_stress.py calls with a smaller N.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from eval.common import REPO_ROOT

PROJECT = "stress"
QUERIES = ("which port does the service use", "how do we run the tests", "who owns the deploy", "flaky test in CI")


def child_env() -> dict[str, str]:
    """The environment a spawned chronomem process gets: the shipped model (or CHRONOMEM_MODEL_PATH), quiet logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    if os.environ.get("CHRONOMEM_MODEL_PATH"):
        env["CHRONOMEM_MODEL_PATH"] = os.environ["CHRONOMEM_MODEL_PATH"]
    env["CHRONOMEM_LOG_LEVEL"] = "WARNING"
    for name in ("CHRONOMEM_EMBED_PRECISION", "CHRONOMEM_CACHE_DIR"):  # the model this process embeds with
        if os.environ.get(name):
            env[name] = os.environ[name]
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@dataclass
class WriterLog:
    attempted: int = 0
    acknowledged: dict[str, str] = field(default_factory=dict)  # id -> content
    failures: list[str] = field(default_factory=list)
    recalls: int = 0
    recall_failures: list[str] = field(default_factory=list)
    remember_seconds: list[float] = field(default_factory=list)
    recall_seconds: list[float] = field(default_factory=list)


@dataclass
class StressResult:
    writers: int
    per_writer: int
    attempted: int
    acknowledged: int
    found_once: int
    missing: list[str]
    duplicated: list[str]
    wrong_text: list[str]
    duplicate_contents: int
    failures: list[str]
    recalls: int
    recall_failures: list[str]
    consolidator_steps: int
    consolidator_errors: list[str]
    rows: int
    seconds: float
    remember_ms_median: float | None
    remember_ms_p95: float | None
    recall_ms_median: float | None
    store_healthy: bool

    @property
    def ok(self) -> bool:
        return (
            not self.missing
            and not self.duplicated
            and not self.wrong_text
            and not self.duplicate_contents
            and self.found_once == self.acknowledged
            and self.store_healthy
        )


async def _writer(index: int, store: Path, per_writer: int, recall_every: int, log: WriterLog, cwd: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chronomem", "serve", "--store", str(store), "--project", PROJECT],
        env=child_env(),
        cwd=str(cwd),
    )
    rng = random.Random(index)
    async with Client(params, read_timeout_seconds=120) as client:
        for i in range(per_writer):
            content = f"writer {index} note {i}: service {rng.randrange(10_000)} listens on port {rng.randrange(1024, 65535)}"
            log.attempted += 1
            start = time.perf_counter()
            try:
                result = await client.call_tool("remember", {"content": content})
            except Exception as exc:  # transport-level failure: not acknowledged
                log.failures.append(f"writer {index} #{i}: {type(exc).__name__}: {exc}")
                continue
            log.remember_seconds.append(time.perf_counter() - start)
            if result.is_error or not result.structured_content:
                log.failures.append(f"writer {index} #{i}: " + " ".join(getattr(b, "text", "") for b in result.content))
                continue
            log.acknowledged[result.structured_content["id"]] = content
            if recall_every and i % recall_every == recall_every - 1:
                log.recalls += 1
                start = time.perf_counter()
                out = await client.call_tool("recall", {"query": rng.choice(QUERIES), "limit": 5})
                log.recall_seconds.append(time.perf_counter() - start)
                if out.is_error:
                    log.recall_failures.append(" ".join(getattr(b, "text", "") for b in out.content))


def _consolidator_loop(store: Path, stop_file: Path, interval: float) -> int:
    """Child process: force index upkeep (optimize) every `interval` s until `stop_file` exists."""
    from chronomem.config import Settings
    from chronomem.consolidate.runner import Consolidator
    from chronomem.service import MemoryService

    svc = MemoryService(Settings.from_env(store=store, project=PROJECT))
    consolidator = Consolidator(svc)
    steps = 0
    while not stop_file.exists():
        if (store / "memories.lance").exists():
            consolidator.run_to_completion(force_upkeep=True)
            steps += 1
            print(f"step {steps}", flush=True)
        time.sleep(interval)
    return 0


def verify(store: Path, acknowledged: dict[str, str]) -> dict[str, Any]:
    """Open the store fresh and account for every acknowledged id."""
    from chronomem.config import DEFAULT_MODEL_DIM
    from chronomem.storage import Filter, MemoryStore
    from chronomem.storage.doctor import check

    opened = MemoryStore.open(store, DEFAULT_MODEL_DIM, "verify")
    rows = opened.find(Filter())
    ids = Counter(r.id for r in rows)
    by_id = {r.id: r for r in rows}
    chunks = Counter(r.content for r in rows if r.kind == "chunk")
    missing = sorted(i for i in acknowledged if ids[i] == 0)
    duplicated = sorted(i for i, n in ids.items() if n > 1)
    wrong = sorted(i for i, text in acknowledged.items() if i in by_id and by_id[i].content != text)
    dup_contents = sum(1 for text in acknowledged.values() if chunks[text] > 1)
    found_once = sum(1 for i in acknowledged if ids[i] == 1)
    return {
        "rows": len(rows),
        "missing": missing,
        "duplicated": duplicated,
        "wrong_text": wrong,
        "duplicate_contents": dup_contents,
        "found_once": found_once,
        "healthy": check(store).ok,
    }


def run_stress(
    store: Path,
    writers: int = 4,
    per_writer: int = 150,
    recall_every: int = 4,
    consolidate_interval: float = 1.0,
    work_dir: Path | None = None,
) -> StressResult:
    """Run the whole experiment on `store` (a fresh directory) and account for every write."""
    work = work_dir or Path(tempfile.mkdtemp(prefix="chronomem-stress-"))
    work.mkdir(parents=True, exist_ok=True)
    stop_file = work / "stop"
    stop_file.unlink(missing_ok=True)
    logs = [WriterLog() for _ in range(writers)]
    cons_log = open(work / "consolidator.log", "w+")
    consolidator = subprocess.Popen(
        [sys.executable, "-m", "eval.stress", "--consolidator", str(store), "--stop-file", str(stop_file),
         "--interval", str(consolidate_interval)],
        env=child_env(),
        cwd=str(REPO_ROOT),
        stdout=cons_log,
        stderr=subprocess.STDOUT,
    )
    start = time.perf_counter()
    try:

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                for w in range(writers):
                    tg.start_soon(_writer, w, store, per_writer, recall_every, logs[w], work)

        anyio.run(main)
    finally:
        stop_file.touch()
        try:
            consolidator.wait(timeout=120)
        except subprocess.TimeoutExpired:
            consolidator.kill()
            consolidator.wait()
    seconds = time.perf_counter() - start
    cons_log.seek(0)
    cons_text = cons_log.read()
    cons_log.close()
    steps = sum(1 for line in cons_text.splitlines() if line.startswith("step "))
    cons_errors = [line for line in cons_text.splitlines() if line.strip() and not line.startswith("step ")]
    if consolidator.returncode not in (0, None):
        cons_errors.append(f"consolidator exited with {consolidator.returncode}")

    acknowledged: dict[str, str] = {}
    for log in logs:
        acknowledged.update(log.acknowledged)
    found = verify(store, acknowledged)
    remember_s = [s for log in logs for s in log.remember_seconds]
    recall_s = [s for log in logs for s in log.recall_seconds]
    return StressResult(
        writers=writers,
        per_writer=per_writer,
        attempted=sum(log.attempted for log in logs),
        acknowledged=len(acknowledged),
        found_once=found["found_once"],
        missing=found["missing"],
        duplicated=found["duplicated"],
        wrong_text=found["wrong_text"],
        duplicate_contents=found["duplicate_contents"],
        failures=[f for log in logs for f in log.failures],
        recalls=sum(log.recalls for log in logs),
        recall_failures=[f for log in logs for f in log.recall_failures],
        consolidator_steps=steps,
        consolidator_errors=cons_errors,
        rows=found["rows"],
        seconds=seconds,
        remember_ms_median=round(statistics.median(remember_s) * 1000, 1) if remember_s else None,
        remember_ms_p95=round(sorted(remember_s)[int(0.95 * (len(remember_s) - 1))] * 1000, 1) if remember_s else None,
        recall_ms_median=round(statistics.median(recall_s) * 1000, 1) if recall_s else None,
        store_healthy=found["healthy"],
    )


def render(r: StressResult, env: dict[str, Any]) -> str:
    from eval.report import env_lines, md_table

    return "\n".join(
        [
            "# Many writers on one store",
            "",
            env_lines(env),
            "",
            f"`python -m eval.stress --writers {r.writers} --per-writer {r.per_writer}`: {r.writers} `chronomem serve` "
            "processes over stdio on one store, each remembering and recalling through a real MCP client, while a "
            "consolidator process runs LanceDB optimize (compaction, index refresh, version cleanup) in a loop.",
            "",
            md_table(
                ["figure", "value"],
                [
                    ["writes attempted", r.attempted],
                    ["writes acknowledged", r.acknowledged],
                    ["acknowledged writes found exactly once", r.found_once],
                    ["missing / duplicated ids / wrong text / duplicated contents",
                     f"{len(r.missing)} / {len(r.duplicated)} / {len(r.wrong_text)} / {r.duplicate_contents}"],
                    ["failed remembers (not acknowledged)", len(r.failures)],
                    ["recalls (failed)", f"{r.recalls} ({len(r.recall_failures)})"],
                    ["consolidator optimize runs (errors)", f"{r.consolidator_steps} ({len(r.consolidator_errors)})"],
                    ["rows in the store afterwards", r.rows],
                    ["store check (opens, every row reads, full-text query)", "healthy" if r.store_healthy else "DAMAGED"],
                    ["wall time", f"{r.seconds:.0f} s"],
                    ["remember latency median / p95 (client-side, under contention)",
                     f"{r.remember_ms_median} / {r.remember_ms_p95} ms"],
                    ["recall latency median", f"{r.recall_ms_median} ms"],
                ],
            ),
            "",
            "Verdict: " + ("every acknowledged write is present exactly once." if r.ok else "FAILED — see the JSON."),
            "",
            "Writes are serialised by a cross-process file lock in the store directory (`.write.lock`), so LanceDB sees "
            "one committer at a time (no commit conflict surfaced in this run); readers check for a newer table version "
            "on every read. Limits: throughput is bounded by that lock (one write at a time per store, whatever the number of "
            "processes); a write waits at most 30 s for it, then fails with advice rather than hanging.",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--per-writer", type=int, default=1000)
    parser.add_argument("--recall-every", type=int, default=4)
    parser.add_argument("--consolidator", metavar="STORE", help=argparse.SUPPRESS)
    parser.add_argument("--stop-file", help=argparse.SUPPRESS)
    parser.add_argument("--interval", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.consolidator:
        return _consolidator_loop(Path(args.consolidator), Path(args.stop_file), args.interval)

    from dataclasses import asdict

    from eval.report import environment, write_results

    folder = Path(tempfile.mkdtemp(prefix="chronomem-stress-"))
    try:
        result = run_stress(folder / "store", args.writers, args.per_writer, args.recall_every, work_dir=folder / "work")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    env = environment()
    payload = {"environment": env, **asdict(result), "ok": result.ok}
    payload["failures"] = payload["failures"][:20]
    _, md = write_results("stress", payload, render(result, env))
    print(
        f"attempted {result.attempted}, acknowledged {result.acknowledged}, found exactly once {result.found_once}; "
        f"missing {len(result.missing)}, duplicated {len(result.duplicated)}; {result.consolidator_steps} optimize runs; "
        f"{result.seconds:.0f} s → {md.relative_to(REPO_ROOT)}"
    )
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
