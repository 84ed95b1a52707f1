"""Resident memory by component: a fresh process opens a store the way `chronomem serve` does and reports its RSS
after each component arrives — the interpreter and chronomem's imports, the embedding model, the store with its
read index (from the snapshot when there is one), the first recall, more recalls, then remembers (which open
LanceDB for writing). Each component's share is the growth it caused; anonymous memory and mapped file pages are
told apart (/proc/self/status: RssAnon, RssFile), as are the snapshot's pages.

    python -m eval.rss_probe --store DIR [--project bench] [--calls 100]

Prints one JSON object. `eval/bench_latency.py` runs it at each size; Linux only (it reads /proc).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

#: The questions and notes of the probe's calls (any will do: the probe measures memory, not rankings).
QUERIES = [
    "what did Caroline do at the support group",
    "where did Melanie go camping with her kids",
    "when is the next charity race",
    "which books did she recommend",
    "how long has he been painting",
]


def status() -> dict[str, float]:
    """This process's RSS and its anonymous and file-backed parts, in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {name: round(int(fields[key].split()[0]) / 1024, 1) for name, key in (("rss", "VmRSS"), ("anon", "RssAnon"), ("file", "RssFile"))}


#: The kinds of mapping `resident_by_mapping` tells a process's RSS by.
MAPPING_KINDS = ("anonymous", "snapshot file", "libraries", "other files")


def resident_by_mapping(pid: int | str = "self") -> dict[str, float]:
    """A process's resident memory by kind of mapping, in MB (/proc/PID/smaps): anonymous (the model's weights and
    arena, the read index's own arrays, Python objects, LanceDB's caches), the read index snapshot's file pages,
    shared libraries' pages, other files."""
    from chronomem.search.snapshot import SNAPSHOT_NAME  # here, not at the top: the probe measures imports

    kinds = dict.fromkeys(MAPPING_KINDS, 0)
    current = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and not head[0].endswith(":"):
            current = head[5] if len(head) > 5 else ""
        elif head and head[0] == "Rss:":
            if current.endswith(SNAPSHOT_NAME):
                kind = "snapshot file"
            elif ".so" in current:
                kind = "libraries"
            elif not current or current.startswith("["):
                kind = "anonymous"
            else:
                kind = "other files"
            kinds[kind] += int(head[1])
    return {kind: round(kb / 1024, 1) for kind, kb in kinds.items()}


def probe(store: Path, project: str, calls: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []

    def step(name: str, started: float) -> None:
        steps.append({"component": name, "seconds": round(time.perf_counter() - started, 2), **status(), "mappings": resident_by_mapping()})

    steps.append({"component": "interpreter", "seconds": 0.0, **status()})
    started = time.perf_counter()
    from chronomem.service import MemoryService
    from chronomem.tools import recall, remember
    from eval.common import settings_for

    step("imports (chronomem, mcp types, pyarrow)", started)
    svc = MemoryService(settings_for(store, project))
    started = time.perf_counter()
    svc.embed_one("warm up")
    step("embedding model (loaded, one text embedded)", started)
    started = time.perf_counter()
    svc.store.wait_for_read_index()
    step("store and read index (opened; from its snapshot when there is one)", started)
    started = time.perf_counter()
    recall(svc, QUERIES[0])
    step("first recall", started)
    started = time.perf_counter()
    for i in range(calls):
        recall(svc, f"{QUERIES[i % len(QUERIES)]} {i}")
    step(f"{calls} more recalls", started)
    started = time.perf_counter()
    for i in range(calls):
        remember(svc, f"Probe note {i}: the staging cache was resized to {i + 16} GB after the load test.")
    step(f"{calls} remembers (LanceDB opened for writing)", started)
    for before, after in zip(steps, steps[1:], strict=False):
        after["added_mb"] = round(after["rss"] - before["rss"], 1)
    return {"store": str(store), "steps": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--project", default="bench")
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps(probe(args.store, args.project, args.calls)))


if __name__ == "__main__":
    main()
