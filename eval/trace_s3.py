"""The requests of one `remember` on a store in object storage, in order, beside the step of the call that made them.

A local S3 server (scripts/local_s3.py, moto) runs in this process and logs each request; the call's steps
(the encoding gate, the store's commit with its read index update and read-back acknowledgement, the probable
updates) are timed around their functions. One writer, warmed up by a few remembers first, so the trace is a
steady-state call: what a team store pays per note before any other writer contends (issue 48: requests per
note are what the shared store's throughput is bound by).

    python -m eval.trace_s3 [--warm 5]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _timed(marks: list[tuple[float, str]], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        marks.append((time.perf_counter(), f"+ {label}"))
        try:
            return function(*args, **kwargs)
        finally:
            marks.append((time.perf_counter(), f"- {label}"))

    return run


def trace(warm: int) -> tuple[list[tuple[float, str]], float]:
    """(ms from the call's start, what happened) for one remember, and the call's ms."""
    sys.path.insert(0, str(SCRIPTS))
    import local_s3

    requests: list[tuple[float, str]] = []
    counted = local_s3.LocalS3.__call__

    def logged(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        query = environ.get("QUERY_STRING", "")
        requests.append((time.perf_counter(), f"{local_s3._operation(environ)} {environ.get('PATH_INFO', '')}"
                         + (f"?{query}" if query else "")))
        return counted(self, environ, start_response)

    local_s3.LocalS3.__call__ = logged  # type: ignore[method-assign]
    server, endpoint = local_s3.serve()
    local_s3.create_buckets(endpoint, ["trace"])
    os.environ.update(local_s3.client_env(endpoint))
    import chronomem.consolidate.gate as gate
    from chronomem.config import Settings, parse_store
    from chronomem.service import MemoryService
    from chronomem.storage.store import MemoryStore
    from chronomem.tools import remember

    tool = sys.modules["chronomem.tools.remember"]  # the module (the package exports the function by that name)
    marks: list[tuple[float, str]] = []
    gate.signals = _timed(marks, "encoding gate", gate.signals)  # type: ignore[assignment]
    tool.probable_updates = _timed(marks, "probable updates", tool.probable_updates)  # type: ignore[attr-defined]
    for name, label in (("add", "commit"), ("_after_write", "read index update"), ("_read_back", "read-back"),
                        ("_acknowledge", "acknowledgement")):
        setattr(MemoryStore, name, _timed(marks, label, getattr(MemoryStore, name)))
    try:
        svc = MemoryService(Settings(store_path=parse_store("s3://trace/store"), project="bench"))
        svc.embedder.embed(["warm up"])
        for i in range(warm):
            remember(svc, f"Warm-up note {i}: unit w{i} runs on host h{i % 3}.")
        time.sleep(1.0)  # the consolidator's between-call work goes first
        requests.clear()
        marks.clear()
        start = time.perf_counter()
        remember(svc, "Unit u1 is configured on host h3.")
        end = time.perf_counter()
    finally:
        server.shutdown()
    events = sorted([*requests, *marks])
    return [((t - start) * 1000, what) for t, what in events if start <= t <= end], (end - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", type=int, default=5, help="remembers before the traced one")
    args = parser.parse_args()
    events, total = trace(args.warm)
    kinds = Counter(what.split()[0] for _, what in events if not what.startswith(("+", "-")))
    for ms, what in events:
        print(f"{ms:8.1f} ms  {what}")
    print(f"one remember: {total:.1f} ms, {sum(kinds.values())} requests ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})")


if __name__ == "__main__":
    main()
