"""A store in object storage against a local directory: remember / recall latency, commits per second with 1, 2
and 4 writer processes, and the S3 requests each operation makes (from which real S3 latency is estimated).

    python -m eval.bench_s3 [--ops 30] [--writes 30] [--writers 1,2,4] [--out eval/results]

The S3 side is scripts/local_s3.py (moto's server, conditional writes serialised) in its own process on this
machine, so its latencies are a local server's: what a cloud bucket adds is estimated from the request counts
(`--s3-ms`, the per-request latency assumed, 20 ms by default: a same-region S3 GET/PUT of a small object takes
~10-30 ms). Every writer is a process with its own `MemoryService` (the server's write path, through the tools),
loading the shipped model before a common start; memories are distinct short sentences. Writes
`s3.json` and `s3.md` under `--out`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
QUERIES = ["which unit is configured", "how is the service deployed", "what port does staging use",
           "where do the logs go", "who owns the billing module"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _stats(endpoint: str, reset: bool = False) -> dict[str, int]:
    url = f"{endpoint}/__local_s3/{'reset' if reset else 'stats'}"
    with urllib.request.urlopen(urllib.request.Request(url, method="POST" if reset else "GET"), timeout=10) as r:
        return json.loads(r.read())


def _service(store: str) -> Any:
    from chronomem.config import Settings, parse_store
    from chronomem.service import MemoryService

    svc = MemoryService(Settings(store_path=parse_store(store), project="bench"))
    svc.embedder.embed(["warm up"])
    svc.store  # noqa: B018 - opened before the clock starts
    return svc


def single_writer(store: str, ops: int, endpoint: str | None) -> dict[str, Any]:
    """remember then recall, `ops` of each, in this process; request counts per operation when on S3."""
    from chronomem.tools import recall, remember

    svc = _service(store)
    out: dict[str, Any] = {}
    for name, call in (
        ("remember", lambda i: remember(svc, f"Bench note {i}: unit u{i} is configured on host h{i % 7}.")),
        ("recall", lambda i: recall(svc, QUERIES[i % len(QUERIES)])),
    ):
        times, requests = [], []
        for i in range(ops):
            if endpoint:
                _stats(endpoint, reset=True)
            started = time.perf_counter()
            call(i)
            times.append((time.perf_counter() - started) * 1000)
            if endpoint:
                requests.append(_stats(endpoint))
        row: dict[str, Any] = {"p50_ms": round(_pct(times, 0.5), 1), "p95_ms": round(_pct(times, 0.95), 1)}
        if requests:
            kinds = sorted({k for r in requests for k in r})
            row["requests"] = {k: round(statistics.mean(r.get(k, 0) for r in requests), 1) for k in kinds}
            row["requests_total"] = round(statistics.mean(sum(r.values()) for r in requests), 1)
        out[name] = row
    return out


def _writer(store: str, tag: str, count: int, env: dict[str, str], ready: Any, go: Any, results: Any) -> None:
    os.environ.update(env)
    from chronomem.tools import remember

    svc = _service(store)
    ready.put(tag)
    go.wait()
    started = time.perf_counter()
    done = 0
    for i in range(count):
        remember(svc, f"Writer {tag} note {i}: unit {tag}-{i} is configured.")
        done += 1
    results.put((tag, done, started, time.perf_counter()))


def _version(store: str) -> int:
    """The `memories` table's newest version (every commit makes one)."""
    import lancedb

    from chronomem.config import is_remote, parse_store

    location = parse_store(store)
    options = location.storage_options() if is_remote(location) else None  # type: ignore[union-attr]
    return int(lancedb.connect(str(location), storage_options=options or None).open_table("memories").version)


def _load_sampler(samples: list[float], stop: Any) -> None:
    while not stop.wait(2.0):
        samples.append(os.getloadavg()[0])


def many_writers(store: str, writers: int, count: int, env: dict[str, str]) -> dict[str, Any]:
    """`writers` processes, `count` remembers each, released together: notes (acknowledged remembers) and LanceDB
    commits (table versions made) per second over the whole run — several notes per commit when they are grouped
    (storage/groupcommit.py) — and the 1-minute load average sampled every 2 s meanwhile."""
    import threading

    ctx = mp.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_writer, args=(store, f"w{n}", count, env, ready, go, results)) for n in range(writers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=300)
    before = _version(store)
    loads: list[float] = [os.getloadavg()[0]]
    stop = threading.Event()
    sampler = threading.Thread(target=_load_sampler, args=(loads, stop), daemon=True)
    sampler.start()
    go.set()
    finished = [results.get(timeout=1800) for _ in procs]
    stop.set()
    loads.append(os.getloadavg()[0])
    for p in procs:
        p.join()
    first, last = min(f[2] for f in finished), max(f[3] for f in finished)
    total = sum(f[1] for f in finished)
    commits = _version(store) - before
    seconds = last - first
    return {"writers": writers, "notes": total, "commits": commits, "seconds": round(seconds, 2),
            "notes_per_s": round(total / seconds, 2), "commits_per_s": round(commits / seconds, 2),
            "notes_per_commit": round(total / max(commits, 1), 2),
            "load_1min": [round(min(loads), 2), round(max(loads), 2)]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=30, help="remembers and recalls timed in one process")
    parser.add_argument("--writes", type=int, default=30, help="remembers per writer process")
    parser.add_argument("--writers", default="1,2,4")
    parser.add_argument("--s3-ms", type=float, default=20.0, help="assumed per-request latency of a cloud bucket")
    parser.add_argument("--out", default=str(REPO / "eval" / "results"))
    parser.add_argument("--backends", default="local,s3", help="local,s3 or one of them (the report needs both)")
    parser.add_argument("--no-single", action="store_true", help="skip the one-process latencies")
    args = parser.parse_args(argv)
    writer_counts = [int(w) for w in args.writers.split(",")]

    server = subprocess.Popen([sys.executable, str(REPO / "scripts" / "local_s3.py"), "--port", "0",
                               "--bucket", "bench"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    endpoint = server.stdout.readline().strip()
    sys.path.insert(0, str(REPO / "scripts"))
    from local_s3 import client_env

    env = client_env(endpoint)
    os.environ.update(env)
    report: dict[str, Any] = {"ops": args.ops, "writes_per_writer": args.writes, "s3_ms_assumed": args.s3_ms,
                              "backends": {}}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for backend in args.backends.split(","):
                def fresh() -> str:
                    name = uuid.uuid4().hex[:8]
                    return f"{tmp}/{name}" if backend == "local" else f"s3://bench/{name}"

                print(f"[{backend}] single writer", file=sys.stderr, flush=True)
                row: dict[str, Any] = {} if args.no_single else {
                    "single": single_writer(fresh(), args.ops, endpoint if backend == "s3" else None)}
                row["writers"] = []
                for n in writer_counts:
                    store = fresh()
                    _service(store)  # created before the writers start: they measure commits, not creation
                    print(f"[{backend}] {n} writer(s)", file=sys.stderr, flush=True)
                    row["writers"].append(many_writers(store, n, args.writes, env))
                    print(f"[{backend}] {json.dumps(row['writers'][-1])}", file=sys.stderr, flush=True)
                report["backends"][backend] = row
    finally:
        server.kill()
        server.wait()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if set(report["backends"]) != {"local", "s3"} or args.no_single:
        print(json.dumps(report, indent=2))  # a partial run: printed, the results files are left alone
        return 0
    (out / "s3.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "s3.md").write_text(render(report) + "\n")
    print(render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    local, s3 = report["backends"]["local"], report["backends"]["s3"]
    ms = report["s3_ms_assumed"]
    lines = [
        "# A store in object storage vs a local directory (eval/bench_s3.py)",
        "",
        f"One process, {report['ops']} operations each, then 1/2/4 writer processes x {report['writes_per_writer']} "
        "remembers. S3 is scripts/local_s3.py (moto, conditional writes serialised) on this 2-core machine, shared "
        "with the writers. Estimated cloud latency = local-S3 time + requests x "
        f"{ms:.0f} ms (requests issued one after another; an assumption, not a measurement).",
        "",
        "| operation | local p50 / p95 ms | local S3 p50 / p95 ms | S3 requests per call | est. cloud S3 p50 ms |",
        "|---|---|---|---|---|",
    ]
    for op in ("remember", "recall"):
        a, b = local["single"][op], s3["single"][op]
        kinds = ", ".join(f"{k} {v:g}" for k, v in b.get("requests", {}).items())
        lines.append(f"| {op} | {a['p50_ms']} / {a['p95_ms']} | {b['p50_ms']} / {b['p95_ms']} | "
                     f"{b.get('requests_total', 0):g} ({kinds}) | {b['p50_ms'] + b.get('requests_total', 0) * ms:.0f} |")
    lines += ["", "| writers | local notes/s (commits/s) | local S3 notes/s | local S3 commits/s | notes per commit | "
              "load 1-min (min-max) local / S3 |", "|---|---|---|---|---|---|"]
    for a, b in zip(local["writers"], s3["writers"], strict=True):
        lines.append(f"| {a['writers']} | {a['notes_per_s']} ({a['commits_per_s']}) | {b['notes_per_s']} | "
                     f"{b['commits_per_s']} | {b['notes_per_commit']} | {'-'.join(map(str, a['load_1min']))} / "
                     f"{'-'.join(map(str, b['load_1min']))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
