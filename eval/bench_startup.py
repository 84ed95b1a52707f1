"""Cold start: spawn `chronomem serve` (stdio) → `initialize` answered, and → first `recall` answered.

Speaks raw JSON-RPC over the child's pipes so nothing but the server is timed.
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


def one_run(store: str) -> tuple[float, float]:
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
    finally:
        proc.kill()
        proc.wait()
    return initialized, first_recall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        subprocess.run([sys.executable, "-m", "chronomem", "remember", "Tests run with pytest.", "--store", store,
                        "--project", "bench"], check=True, capture_output=True)
        runs = [one_run(store) for _ in range(args.runs)]
    init = [r[0] for r in runs]
    recall = [r[1] for r in runs]
    print(f"spawn → initialize answered: median {statistics.median(init):.3f} s "
          f"(runs: {', '.join(f'{x:.3f}' for x in init)})")
    print(f"spawn → first recall answered: median {statistics.median(recall):.3f} s "
          f"(runs: {', '.join(f'{x:.3f}' for x in recall)})")


if __name__ == "__main__":
    main()
