"""Cold start: spawn `chronomem serve` (stdio) → `initialize` answered, and → first `recall` answered.

Speaks raw JSON-RPC over the child's pipes so nothing but the server is timed. Beside the wall times it reports
the CPU seconds the server had used when its first recall was answered (Linux: /proc), a figure other load on
the machine barely moves: on two cores, wall time cannot fall far below it.
Usage: python -m eval.bench_startup [--runs 5]. Prints medians; writes nothing else.
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


def one_run(store: str) -> tuple[float, float, float]:
    env = {**os.environ, "CHRONOMEM_HOME": store, "CHRONOMEM_PROJECT": "bench"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "chronomem", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    assert proc.stdin and proc.stdout
    try:
        _send(proc.stdin, INIT)
        _read_reply(proc.stdout, 1)
        initialized = time.perf_counter() - start
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "recall", "arguments": {"query": "how do we run the tests"}}})
        reply = _read_reply(proc.stdout, 2)
        if reply.get("result", {}).get("isError"):
            raise RuntimeError(reply["result"]["content"][0]["text"])
        first_recall = time.perf_counter() - start
        cpu = cpu_seconds(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    return initialized, first_recall, cpu


def _median(label: str, values: list[float], unit: str = "s", digits: int = 3) -> str:
    return (f"{label}: median {statistics.median(values):.{digits}f} {unit} "
            f"(runs: {', '.join(f'{x:.{digits}f}' for x in values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        # A store with one note (a server started again), and a new one (the README's first command on a fresh
        # machine): runs alternate between them, so load on the machine falls on both alike.
        written = os.path.join(tmp, "store")
        subprocess.run([sys.executable, "-m", "chronomem", "remember", "Tests run with pytest.", "--store", written,
                        "--project", "bench"], check=True, capture_output=True)
        runs: dict[str, list[tuple[float, float, float]]] = {"a store with one note": [], "a new store": []}
        for n in range(args.runs):
            runs["a store with one note"].append(one_run(written))
            runs["a new store"].append(one_run(os.path.join(tmp, f"new-{n}")))
    for state, results in runs.items():
        print(f"{state}:")
        print("  " + _median("spawn → initialize answered", [r[0] for r in results]))
        print("  " + _median("spawn → first recall answered", [r[1] for r in results]))
        print("  " + _median("server CPU at the first recall's answer", [r[2] for r in results], digits=2))


if __name__ == "__main__":
    main()
