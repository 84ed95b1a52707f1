"""Consolidator benchmark: recall latency after many single writes, extraction throughput, latency added to tool calls.

Three measurements, each on fresh temporary stores with the real model:

1. recall latency after `--remembers` (1,000) single `remember` calls, once without any
   upkeep and once with the consolidator given its turn after every write (as the server
   does between calls: rule extraction of the new chunk, then index upkeep every 50 rows);
2. consolidation throughput, rules only: `--chunks` (3,000) pending chunks bulk-written, then
   `Consolidator.run_to_completion()` timed (chunks/s, with the facts it extracted);
3. tool-call latency while the server's background consolidator works through `--chunks`
   pending chunks: recall (and every fourth time remember) called with short agent-like
   pauses, against the same calls on the same store before consolidation started (the
   worst and 95th-percentile latency added).

Notes are synthetic coding-agent notes (commands, ports, versions, moves, deprecations,
retractions, and as much chatter), generated from a fixed seed; they are not DevMem.

    python -m eval.bench_consolidate [--remembers 1000] [--chunks 3000] [--queries 60]

Writes eval/results/bench_consolidate.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from datetime import timedelta
from typing import Any

from chronomem.consolidate.runner import Consolidator
from chronomem.embed import FastEmbedder
from chronomem.records import MemoryRecord, new_id
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
from eval.common import make_embedder, median_ms, p95_ms, temp_service
from eval.report import env_lines, environment, md_table, write_results

PROJECT = "bench"
SERVICES = ["api", "auth-gateway", "billing-svc", "search", "worker", "web", "ledger", "exporter", "ingest", "mailer"]
PACKAGES = ["numpy", "django", "react", "serde", "tokio", "requests", "pydantic", "prisma", "vite", "pytest"]
TOOLS = [("test command", ["pytest -q", "nox -s tests", "tox -e py312", "make test", "just test"]),
         ("lint command", ["ruff check .", "flake8", "eslint .", "cargo clippy"]),
         ("build command", ["make build", "cargo build --release", "pnpm build", "tsc -b"]),
         ("package manager", ["uv", "poetry", "pnpm", "npm", "cargo"]),
         ("deploy command", ["fly deploy", "kamal deploy", "helm upgrade app ./chart", "./scripts/deploy.sh"])]
CHATTER = [
    "Standup moved to {n}:30 tomorrow.", "Spent the afternoon reading through {s}; nothing to record yet.",
    "Renamed a local variable in {s} for readability, no behaviour change.", "Demo for stakeholders went fine.",
    "Someone asked whether {s} could move to port {p}; no decision.", "Maybe we should bump {k} to {v} at some point?",
    "Read a blog post where {s} listens on port {p}. Interesting, not ours.", "Typo fix in the {s} docstring merged.",
    "Pairing with Sam on the {s} flaky test, no root cause yet.", "Reviewed the {s} dashboards; latency looks normal.",
]


def synthetic_notes(n: int, seed: int = 7) -> list[str]:
    """`n` notes an agent might write: about half state or change a value, half are chatter."""
    rng = random.Random(seed)
    notes = []
    for _ in range(n):
        s, k = rng.choice(SERVICES), rng.choice(PACKAGES)
        p, v = rng.randint(2000, 9999), f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}"
        attr, values = rng.choice(TOOLS)
        a, b = rng.sample(values, 2)
        kind = rng.random()
        if kind < 0.5:
            notes.append(rng.choice(CHATTER).format(s=s, p=p, k=k, v=v, n=rng.randint(8, 16)))
        elif kind < 0.62:
            notes.append(rng.choice([f"{s} listens on port {p}.", f"The port for {s} is {p}.", f"{s} runs on localhost:{p}."]))
        elif kind < 0.74:
            notes.append(rng.choice([f"Bumped {k} to {v}.", f"{k} is pinned at {v}.", f"We're on {k} {v} now."]))
        elif kind < 0.86:
            notes.append(rng.choice([f"The {attr} is now {b}.", f"Switched the {attr} from {a} to {b}.", f"We changed the {attr} to {b}."]))
        elif kind < 0.93:
            notes.append(rng.choice([f"{a} is deprecated, use {b} instead.", f"We moved from {a} to {b}."]))
        else:
            notes.append(rng.choice([f"Ignore what I said about the {attr}; it's actually {a}.",
                                     f"Disregard my note that the {k} version is {v}."]))
    return notes


def bulk_chunks(svc: MemoryService, notes: list[str], vectors: list[list[float]]) -> None:
    """Write `notes` as pending chunks in a few commits (stamped in order, a millisecond apart)."""
    start = svc.now() - timedelta(seconds=len(notes) / 1000 + 1)
    rows = []
    for i, (text, vector) in enumerate(zip(notes, vectors, strict=True)):
        at = start + timedelta(milliseconds=i)
        rows.append(MemoryRecord(id=new_id(at), kind="chunk", project=PROJECT, content=text, valid_at=at, created_at=at,
                                 vector=vector, embed_model=svc.embedder.name))
    for i in range(0, len(rows), 1000):
        svc.store.add(rows[i : i + 1000])
    svc.store.optimize()


def queries(n: int) -> list[str]:
    rng = random.Random(11)
    forms = ["which port does {s} use", "what version of {k} are we on", "how do we run the tests", "how do we deploy",
             "what is the {s} setup", "is {k} deprecated", "what is the build command", "who looked at {s}"]
    return [rng.choice(forms).format(s=rng.choice(SERVICES), k=rng.choice(PACKAGES)) for _ in range(n)]


def timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    t = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t


# --------------------------------------------------------------------------- 1. recall after single writes
def recall_after_writes(embedder: FastEmbedder, n: int, n_queries: int, upkeep: bool) -> dict[str, Any]:
    notes = synthetic_notes(n, seed=1)
    with temp_service(PROJECT, embedder) as svc:
        runner = Consolidator(svc, llm=None) if upkeep else None
        writes, steps = [], 0
        for text in notes:
            writes.append(timed(remember, svc, text))
            while runner is not None and runner.step() is not None:
                steps += 1
        latencies = [timed(recall, svc, q) for q in queries(n_queries)]
        return {
            "upkeep": upkeep, "remembers": n, "consolidator_steps": steps,
            "unindexed_rows": svc.store.unindexed_rows(), "rows": svc.store.count(),
            "remember_median_ms": median_ms(writes), "recall_median_ms": median_ms(latencies),
            "recall_p95_ms": p95_ms(latencies), "recall_max_ms": round(max(latencies) * 1000, 2),
        }


# --------------------------------------------------------------------------- 2. throughput
def throughput(embedder: FastEmbedder, n: int) -> dict[str, Any]:
    notes = synthetic_notes(n)
    vectors = embedder.embed(notes)
    with temp_service(PROJECT, embedder) as svc:
        bulk_chunks(svc, notes, vectors)
        runner = Consolidator(svc, llm=None)
        t = time.perf_counter()
        steps = runner.run_to_completion(force_upkeep=False)
        total = time.perf_counter() - t
        extract = [s for s in steps if s.did == "extract rules"]
        seconds = sum(s.seconds for s in extract)
        return {
            "chunks": n, "seconds_total": round(total, 2), "seconds_extracting": round(seconds, 2),
            "chunks_per_second": round(n / seconds, 1) if seconds else None,
            "batches": len(extract), "facts": sum(s.counts.get("facts", 0) for s in extract),
            "retractions": sum(s.counts.get("retracted", 0) for s in extract),
            "other_steps": sorted({s.did for s in steps} - {"extract rules"}),
        }


# --------------------------------------------------------------------------- 3. latency added to tool calls
#: Pause between an agent's tool calls in the latency measurement (an agent thinks between calls).
AGENT_PAUSE = 0.3


def added_latency(embedder: FastEmbedder, n: int, n_queries: int) -> dict[str, Any]:
    """Tool calls paced like an agent's while the server's own background consolidator drains `n` chunks."""
    notes = synthetic_notes(n, seed=3)
    vectors = embedder.embed(notes)
    qs = queries(n_queries)
    with temp_service(PROJECT, embedder) as svc:
        bulk_chunks(svc, notes, vectors)
        runner = Consolidator(svc, llm=None, idle_seconds=0.05)

        def call(fn: Any, *args: Any, wake: bool) -> float:  # what the server does around every tool call
            runner.call_started()
            try:
                return timed(fn, svc, *args)
            finally:
                runner.call_finished(wake=wake)

        def calls(wake: bool, rounds: int | None = None) -> dict[str, list[float]]:
            out: dict[str, list[float]] = {"recall": [], "remember": []}
            i, checked = 0, time.monotonic()
            while True:
                if rounds is not None and i >= rounds:
                    return out
                if rounds is None and time.monotonic() - checked > 1.0:
                    checked = time.monotonic()
                    if runner.pending_chunks()["rules"] == 0:
                        return out
                out["recall"].append(call(recall, qs[i % len(qs)], wake=wake))
                if i % 4 == 0:
                    out["remember"].append(call(remember, f"Scratch note {i}: read the {SERVICES[i % 10]} logs.", wake=wake))
                i += 1
                time.sleep(AGENT_PAUSE)

        baseline = calls(wake=False, rounds=n_queries)
        t = time.perf_counter()
        during = calls(wake=True)
        seconds = time.perf_counter() - t
        runner.stop()
        extract = [s for s in runner.steps if s.did == "extract rules"]
        out: dict[str, Any] = {
            "chunks": n, "agent_pause_s": AGENT_PAUSE, "consolidation_seconds": round(seconds, 2),
            "batches": len(extract), "yielded_batches": sum(1 for s in extract if s.counts.get("yielded")),
        }
        for tool in ("recall", "remember"):
            base, load = baseline[tool], during[tool]
            out[tool] = {
                "calls_during": len(load), "baseline_median_ms": median_ms(base), "baseline_max_ms": _max_ms(base),
                "during_median_ms": median_ms(load), "during_p95_ms": p95_ms(load), "during_max_ms": _max_ms(load),
                "worst_added_ms": round((max(load) - statistics.median(base)) * 1000, 2) if load else None,
                "p95_added_ms": round((sorted(load)[int(0.95 * (len(load) - 1))] - statistics.median(base)) * 1000, 2)
                if load else None,
            }
        return out


def _max_ms(values: list[float]) -> float | None:
    return round(max(values) * 1000, 2) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remembers", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    embedder = make_embedder()
    env = environment()
    print("1/3 recall after single remembers …", flush=True)
    without = recall_after_writes(embedder, args.remembers, args.queries, upkeep=False)
    with_upkeep = recall_after_writes(embedder, args.remembers, args.queries, upkeep=True)
    print("2/3 consolidation throughput …", flush=True)
    speed = throughput(embedder, args.chunks)
    print("3/3 tool-call latency during consolidation …", flush=True)
    load = added_latency(embedder, args.chunks, args.queries)
    load_avg = [round(x, 2) for x in os.getloadavg()]
    payload = {"environment": env, "load_average_at_end": load_avg, "recall_after_writes": [without, with_upkeep],
               "throughput": speed, "latency_added": load}
    md = "\n\n".join([
        "# Consolidator benchmark", env_lines(env),
        f"Load average at the end (1, 5, 15 min): {load_avg} — the 2 cores may be shared with other jobs.",
        f"## Recall after {args.remembers} single remembers ({args.queries} queries)",
        md_table(["upkeep", "recall median ms", "recall p95 ms", "recall max ms", "remember median ms",
                  "unindexed rows", "rows", "consolidator steps"],
                 [[r["upkeep"], r["recall_median_ms"], r["recall_p95_ms"], r["recall_max_ms"], r["remember_median_ms"],
                   r["unindexed_rows"], r["rows"], r["consolidator_steps"]] for r in (without, with_upkeep)]),
        "With upkeep, the consolidator ran after every write as the server runs it between calls "
        "(rule extraction of the new chunk, index refresh every 50 unindexed rows).",
        f"## Consolidation throughput, rules only ({speed['chunks']} pending chunks)",
        md_table(["chunks/s", "extracting s", "total s", "batches", "facts", "retractions"],
                 [[speed["chunks_per_second"], speed["seconds_extracting"], speed["seconds_total"], speed["batches"],
                   speed["facts"], speed["retractions"]]]),
        f"## Tool-call latency while the consolidator works through {load['chunks']} chunks",
        md_table(["tool", "calls during", "baseline median ms", "during median ms", "during p95 ms", "during max ms",
                  "worst added ms", "p95 added ms"],
                 [[t, load[t]["calls_during"], load[t]["baseline_median_ms"], load[t]["during_median_ms"],
                   load[t]["during_p95_ms"], load[t]["during_max_ms"], load[t]["worst_added_ms"], load[t]["p95_added_ms"]]
                  for t in ("recall", "remember")]),
        f"The server's own background consolidator (idle threshold 0.05 s) drained the chunks in "
        f"{load['consolidation_seconds']} s while an agent called recall (and every 4th time remember) with "
        f"{AGENT_PAUSE} s pauses; {load['yielded_batches']} of {load['batches']} batches ended early (a write waiting for the lock, "
        f"or the stage's 0.25 s lock budget spent).",
    ])
    json_path, md_path = write_results("bench_consolidate", payload, md)
    print(md)
    print(f"\nwrote {json_path} and {md_path}")


if __name__ == "__main__":
    main()
