"""Cold start: spawn `chronomem serve` (stdio) → `initialize` answered, → first `recall` answered, and → the
first `remember` after it answered (a server's first write opens LanceDB, which its reads need not).

Speaks raw JSON-RPC over the child's pipes so nothing but the server is timed. Beside the wall times it reports
the CPU seconds the server had used when its first recall was answered (Linux: /proc), a figure other load on
the machine barely moves: on two cores, wall time cannot fall far below it.
Usage: python -m eval.bench_startup [--runs 5]. Prints medians; writes nothing else.
With `--side old=../wt/old --side new=.` it runs the servers of two (or more) checkouts in turn instead, on one store
with a note (or on `--store DIR`, reopened as it is), and prints each one's medians and their ratios to the first
side's.

With `--store DIR` (a large store, e.g. one `eval.bench_latency --keep` filled, or one `--fill N` makes there), it
measures a *reopened* store instead, with the read index snapshot off (CHRONOMEM_READ_INDEX_SNAPSHOT=0: the index is
built from the table after the first search, LanceDB answering meanwhile) and on (search/snapshot.py: loaded at
open), runs alternating so the machine's load falls on both alike: spawn → first recall, then recalls one after
another for `--window` seconds from spawn (their median: a fresh server's first half minute), then `--settled`
more (the settled median). Writes `startup_snapshot.{json,md}` under `--out`, with the load average.
    python -m eval.bench_startup --store /tmp/store100k --fill 100000 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    pipe.write((json.dumps(message) + "\n").encode())
    pipe.flush()


def _read_reply(pipe: IO[bytes], want_id: int) -> dict[str, Any]:
    while True:
        line = pipe.readline()
        if not line:
            raise RuntimeError("server closed stdout")
        message = json.loads(line)
        if message.get("id") == want_id:
            return message


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far (NaN where /proc is missing)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A memory figure of process `pid` from /proc/<pid>/status in MB (VmRSS: resident; RssAnon: its private part,
    what the process alone holds; RssFile: mapped files, the page cache's; VmHWM: peak resident), NaN without /proc."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(f"{field}:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


def one_run(store: str, checkout: str | None = None, remember: bool = True) -> tuple[float, float, float, float]:
    """Spawn → initialize, spawn → first recall (s), the server's CPU seconds then, and spawn → the first remember
    (sent when the recall was answered; it adds a note to `store`; NaN with `remember` off); `checkout`: the
    chronomem checkout the server runs from (its folder is the child's working directory, first on its path)."""
    env = {**os.environ, "CHRONOMEM_HOME": store, "CHRONOMEM_PROJECT": "bench"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "chronomem", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=checkout,
    )
    assert proc.stdin and proc.stdout
    try:
        _send(proc.stdin, INIT)
        _read_reply(proc.stdout, 1)
        initialized = time.perf_counter() - start
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _call_tool(proc, 2, "recall", {"query": "how do we run the tests"})
        first_recall = time.perf_counter() - start
        cpu = cpu_seconds(proc.pid)
        if not remember:
            return initialized, first_recall, cpu, float("nan")
        _call_tool(proc, 3, "remember", {"content": "Lint with ruff check ."})
        first_remember = time.perf_counter() - start
    finally:
        proc.kill()
        proc.wait()
    return initialized, first_recall, cpu, first_remember


RECALL_TIMEOUT = 120.0


def _call_tool(proc: subprocess.Popen[bytes], call_id: int, name: str, arguments: dict[str, Any]) -> None:
    """One `tools/call`, answered; a tool error raised with its text."""
    assert proc.stdin and proc.stdout
    _send(proc.stdin, {"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}})
    reply = _read_reply(proc.stdout, call_id)
    if reply.get("result", {}).get("isError"):
        raise RuntimeError(reply["result"]["content"][0]["text"])


def _recall(proc: subprocess.Popen[bytes], call_id: int, query: str) -> None:
    _call_tool(proc, call_id, "recall", {"query": query})


def reopened_run(store: str, snapshots: bool, queries: list[str], window: float, settled: int) -> dict[str, Any]:
    """One server on an existing store: spawn → first recall, the recalls of its first `window` seconds (each sent
    when the last was answered), then `settled` more. Times in seconds; the server is killed (no clean exit)."""
    env = {**os.environ, "CHRONOMEM_HOME": store, "CHRONOMEM_PROJECT": "bench",
           "CHRONOMEM_READ_INDEX_SNAPSHOT": "1" if snapshots else "0"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "chronomem", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    assert proc.stdin and proc.stdout
    calls: list[tuple[float, float]] = []  # (sent, seconds after spawn; its duration)
    try:
        _send(proc.stdin, INIT)
        _read_reply(proc.stdout, 1)
        initialized = time.perf_counter() - start
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call_id = 2
        while True:
            sent = time.perf_counter()
            _recall(proc, call_id, queries[call_id % len(queries)])
            calls.append((sent - start, time.perf_counter() - sent))
            call_id += 1
            if sent - start >= window:
                break
        first_cpu = cpu_seconds(proc.pid)
        window_rss = {name: rss_mb(proc.pid, name) for name in ("VmRSS", "RssAnon", "VmHWM")}
        for _ in range(settled):
            sent = time.perf_counter()
            _recall(proc, call_id, queries[call_id % len(queries)])
            calls.append((sent - start, time.perf_counter() - sent))
            call_id += 1
    finally:
        proc.kill()
        proc.wait()
    in_window = [d for at, d in calls[1:] if at < window]  # the first recall, startup included, is reported apart
    early = [d for at, d in calls[1:] if at < window / 3] or in_window[:1]
    after = [d for at, d in calls if at >= window][-settled:]
    return {
        "snapshot": snapshots,
        "initialize_s": round(initialized, 3),
        "first_recall_s": round(calls[0][0] + calls[0][1], 3),
        "first_recall_call_ms": round(calls[0][1] * 1000, 1),
        "window_calls": len(in_window),
        "window_median_ms": round(statistics.median(in_window) * 1000, 1),
        "early_median_ms": round(statistics.median(early) * 1000, 1),
        "window_p95_ms": round(sorted(in_window)[int(0.95 * (len(in_window) - 1))] * 1000, 1),
        "settled_median_ms": round(statistics.median(after) * 1000, 1) if after else None,
        "cpu_s_at_window_end": round(first_cpu, 2),
        "rss_mb_at_window_end": window_rss["VmRSS"],
        "anon_rss_mb_at_window_end": window_rss["RssAnon"],
        "peak_rss_mb_at_window_end": window_rss["VmHWM"],
        "slow_calls_in_window": sum(1 for d in in_window[1:] if after and d > 2 * statistics.median(after)),
    }


def prepare_store(store: str, fill: int | None) -> int:
    """The store's row count; with `fill`, first grown to that many rows (eval.bench_latency's fill and upkeep),
    and its read index snapshot written (as a server's clean exit or its keeper would)."""
    from chronomem.search import snapshot
    from chronomem.service import MemoryService
    from eval.bench_latency import PROJECT, Corpus, Filler, settle
    from eval.common import make_embedder, settings_for

    svc = MemoryService(settings_for(Path(store), PROJECT), embedder=make_embedder())
    if fill:
        from eval.bench_latency import DEFAULT_DATA

        Filler(svc, Corpus.load(DEFAULT_DATA), 10_000).fill_to(fill)
        settle(svc, 60.0)
    index = svc.store.read_index
    if index is None:
        svc.store.wait_for_read_index(timeout=900)
        index = svc.store.read_index
    assert index is not None, "the store's read index could not be built"
    snapshot.write(index, Path(store))
    return int(svc.store.count())


def reopened(args: argparse.Namespace) -> None:
    from eval.bench_latency import DEFAULT_DATA, Corpus
    from eval.report import RESULTS_DIR, write_results

    rows = prepare_store(args.store, args.fill)
    queries = Corpus.load(DEFAULT_DATA).queries(400)
    load_start = [round(x, 2) for x in os.getloadavg()]
    runs: list[dict[str, Any]] = []
    for n in range(args.runs):
        for snapshots in (False, True) if n % 2 == 0 else (True, False):
            result = reopened_run(args.store, snapshots, queries, args.window, args.settled)
            print(json.dumps(result), flush=True)
            runs.append(result)
    load_end = [round(x, 2) for x in os.getloadavg()]
    summary = {}
    for snapshots in (False, True):
        mine = [r for r in runs if r["snapshot"] is snapshots]
        summary["on" if snapshots else "off"] = {
            key: round(statistics.median(r[key] for r in mine), 3)
            for key in ("initialize_s", "first_recall_s", "early_median_ms", "window_median_ms", "window_p95_ms", "settled_median_ms",
                        "cpu_s_at_window_end", "rss_mb_at_window_end", "anon_rss_mb_at_window_end",
                        "peak_rss_mb_at_window_end", "slow_calls_in_window")
        }
    for mode in summary.values():
        mode["window_to_settled"] = round(mode["window_median_ms"] / mode["settled_median_ms"], 2)
        mode["early_to_settled"] = round(mode["early_median_ms"] / mode["settled_median_ms"], 2)
    payload = {"rows": rows, "runs_per_mode": args.runs, "window_s": args.window, "settled_calls": args.settled,
               "load_average_at_start": load_start, "load_average_at_end": load_end, "summary": summary, "runs": runs}
    write_results("startup_snapshot", payload, markdown(payload), Path(args.out) if args.out else RESULTS_DIR)
    print(markdown(payload))


def markdown(payload: dict[str, Any]) -> str:
    off, on = payload["summary"]["off"], payload["summary"]["on"]
    lines = [
        f"# A reopened store of {payload['rows']:,} rows: read index snapshot off / on",
        "",
        "`python -m eval.bench_startup --store DIR --runs N` (eval/bench_startup.py): a `chronomem serve` spawned on an",
        "existing store, then `recall` over stdio one call after another. *Off*: CHRONOMEM_READ_INDEX_SNAPSHOT=0, the",
        "read index is built from the table after the first search and LanceDB answers meanwhile (as before). *On*: the",
        "snapshot (search/snapshot.py) is loaded at open. Medians of "
        f"{payload['runs_per_mode']} runs per mode, alternating; the first {payload['window_s']:.0f} s of recalls, then "
        f"{payload['settled_calls']} more (settled); the first recall (startup included) is in its own row, not in"
        " the window's figures. Each run's figures are in startup_snapshot.json.",
        f"Load average (1, 5, 15 min) at start {payload['load_average_at_start']}, at end {payload['load_average_at_end']}: "
        "2 cores shared with other jobs, so read the ratios, not the absolute times.",
        "",
        "| figure | snapshot off | snapshot on | on / off |",
        "|---|---|---|---|",
    ]
    rows = [
        ("spawn → initialize answered (s)", "initialize_s"),
        ("spawn → first recall answered (s)", "first_recall_s"),
        (f"recall median in the first {payload['window_s'] / 3:.0f} s (ms)", "early_median_ms"),
        (f"recall median in the first {payload['window_s']:.0f} s (ms)", "window_median_ms"),
        (f"recall p95 in the first {payload['window_s']:.0f} s (ms)", "window_p95_ms"),
        ("recall median, settled (ms)", "settled_median_ms"),
        (f"first {payload['window_s'] / 3:.0f} s median / settled median", "early_to_settled"),
        (f"first {payload['window_s']:.0f} s median / settled median", "window_to_settled"),
        ("recalls in the window slower than 2× settled", "slow_calls_in_window"),
        ("server CPU s at the window's end", "cpu_s_at_window_end"),
        ("server RSS at the window's end (MB; the snapshot's pages read count while mapped)", "rss_mb_at_window_end"),
        ("… of it private (RssAnon, MB: not the page cache's)", "anon_rss_mb_at_window_end"),
        ("server peak RSS by the window's end (VmHWM, MB)", "peak_rss_mb_at_window_end"),
    ]
    for label, key in rows:
        a, b = off[key], on[key]
        ratio = f"{b / a:.2f}" if a else "–"
        lines.append(f"| {label} | {a} | {b} | {ratio} |")
    return "\n".join(lines)


def _median(label: str, values: list[float], unit: str = "s", digits: int = 3) -> str:
    return (f"{label}: median {statistics.median(values):.{digits}f} {unit} "
            f"(runs: {', '.join(f'{x:.{digits}f}' for x in values)})")


def store_with_a_note(store: str, cwd: str | None = None) -> None:
    """Make `store` hold one note of the benchmark's project, through the CLI (of the checkout at `cwd`)."""
    subprocess.run([sys.executable, "-m", "chronomem", "remember", "Tests run with pytest.", "--store", store,
                    "--project", "bench"], check=True, capture_output=True, cwd=cwd)


def compare_checkouts(sides: dict[str, str], runs: int, store: str | None = None) -> None:
    """Each checkout's server in turn, `runs` rounds (one unmeasured first, for the page cache), on `store` (kept as
    it is) or on a new store with one note: interleaved so the machine's drift falls on every side alike. Prints
    medians and ratios to the first side."""
    with tempfile.TemporaryDirectory() as tmp:
        if store is None:
            store = os.path.join(tmp, "store")
            store_with_a_note(store, cwd=next(iter(sides.values())))
        results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in sides}
        for n in range(runs + 1):
            for name, checkout in sides.items():
                result = one_run(store, checkout)
                if n:
                    results[name].append(result)
    base = [statistics.median(r[k] for r in results[next(iter(sides))]) for k in range(4)]
    for name, measured in results.items():
        medians = [statistics.median(r[k] for r in measured) for k in range(4)]
        print(f"{name} ({sides[name]}), medians of {runs}: initialize {medians[0]:.3f} s ({medians[0] / base[0]:.2f}×), "
              f"first recall {medians[1]:.3f} s ({medians[1] / base[1]:.2f}×), CPU then {medians[2]:.2f} s "
              f"({medians[2] / base[2]:.2f}×), first remember {medians[3]:.3f} s ({medians[3] / base[3]:.2f}×)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--store", help="measure this existing store reopened, snapshot off and on (see above)")
    parser.add_argument("--fill", type=int, default=None, help="with --store: first grow it to this many rows")
    parser.add_argument("--window", type=float, default=30.0, help="seconds of recalls after spawn (default 30)")
    parser.add_argument("--settled", type=int, default=60, help="recalls after the window (default 60)")
    parser.add_argument("--out", default=None, help="folder for startup_snapshot.{json,md} (default eval/results)")
    parser.add_argument("--side", action="append", default=[], metavar="NAME=CHECKOUT",
                        help="compare checkouts (give two or more): their servers run in turn on one store (--store, or one with a note)")
    args = parser.parse_args()
    if args.side:
        compare_checkouts(dict(side.split("=", 1) for side in args.side), args.runs, args.store)
        return
    if args.store:
        reopened(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        # A store with one note (a server started again), and a new one (the README's first command on a fresh
        # machine): runs alternate between them, so load on the machine falls on both alike.
        written = os.path.join(tmp, "store")
        store_with_a_note(written)
        runs: dict[str, list[tuple[float, float, float, float]]] = {"a store with one note": [], "a new store": []}
        for n in range(args.runs):
            runs["a store with one note"].append(one_run(written))
            runs["a new store"].append(one_run(os.path.join(tmp, f"new-{n}")))
    for state, results in runs.items():
        print(f"{state}:")
        print("  " + _median("spawn → initialize answered", [r[0] for r in results]))
        print("  " + _median("spawn → first recall answered", [r[1] for r in results]))
        print("  " + _median("server CPU at the first recall's answer", [r[2] for r in results], digits=2))
        print("  " + _median("spawn → the first remember after it answered", [r[3] for r in results]))


if __name__ == "__main__":
    main()
