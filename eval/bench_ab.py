"""Interleaved A/B of in-process recall and remember between checkouts of chronomem.

    python -m eval.bench_ab --side new=.:/tmp/store-new --side old=../wt/old:/tmp/store-old \\
        --env old=CHRONOMEM_EMBED_PRECISION=float32 --rounds 3

Each side is a checkout (its `chronomem` and `eval` packages) and a store kept by that checkout's
`eval.bench_latency --store` (stores of different schema versions cannot be shared). Round after round,
each side in turn: its store's fragments are compacted (so every side starts alike, whatever the last
round appended), then a child process with that checkout first on its path opens the store, warms up,
and times 200 recalls of the LoCoMo questions and then 100 remembers of new notes (`bench_latency`'s
corpus; `--recalls`, `--remembers`). Sequential full `bench_latency` runs on this 2-core machine drift by more than the
differences sought (a `tools/list` round trip, which runs no tool, took 21 ms in one run and 9 in
the next); interleaving puts each side under the same drift. Prints each run's medians and, per side,
the median over rounds and its ratio to the first side; then where recall's time goes: the mean time a
recall spends in each of its stages (`STAGES`: embedding the query, candidates, neighbours, rank, context,
second hop), timed in the same runs, in either checkout's layout of the read path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ONE_SIDE = """
import importlib, json, statistics, sys, time
from collections import defaultdict
from pathlib import Path
from eval.bench_latency import PROJECT, Corpus
from eval.common import make_embedder, settings_for
from chronomem.records import utcnow
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
store, data, seed, recalls, remembers = Path(sys.argv[1]), Path(sys.argv[2]), *map(int, sys.argv[3:6])
stages = json.loads(sys.argv[6])
spent = defaultdict(float)
def timed(label, owner, name):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start
    setattr(owner, name, wrapper)
for label, places in stages.items():
    for place in places:  # the first that this checkout has
        module_name, _, path = place.partition(":")
        try:
            owner = importlib.import_module(module_name)
        except ImportError:
            continue
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent, None)
        if owner is not None and hasattr(owner, name):
            timed(label, owner, name)
            break
corpus = Corpus.load(data)
svc = MemoryService(settings_for(store, PROJECT), embedder=make_embedder())
queries, notes = corpus.queries(recalls), corpus.new_notes(remembers + 1, seed=seed, today=utcnow())
recall(svc, "warm up")
svc.store.wait_for_read_index(timeout=600)
for query in queries[:10]:
    recall(svc, query)
def median_ms(call, items):
    times = []
    for item in items:
        start = time.perf_counter()
        call(item)
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)
spent.clear()
out = {"recall": median_ms(lambda q: recall(svc, q), queries)}
out["stages"] = {label: round(spent[label] * 1000 / len(queries), 2) for label in stages if label in spent}
remember(svc, notes[0])
out["remember"] = median_ms(lambda t: remember(svc, t), notes[1:])
print(json.dumps(out))
"""

#: Stages of recall timed in each run (mean ms a recall), each where this checkout or an older one has it
#: (the read path moved from `retrieval/search.py` to `retrieval/pipeline.py` and `search/engine.py`).
STAGES: dict[str, list[str]] = {
    "embed the query": ["chronomem.service:MemoryService.embed_one"],
    "candidates": ["chronomem.search.engine:Search.candidates", "chronomem.retrieval.search:gather"],
    "neighbours": ["chronomem.retrieval.pipeline:attach_adjacent", "chronomem.retrieval.search:attach_adjacent"],
    "rank": ["chronomem.retrieval.pipeline:rank", "chronomem.retrieval.search:rank"],
    "context": ["chronomem.retrieval.pipeline:with_context", "chronomem.retrieval.search:with_context"],
    "second hop": ["chronomem.retrieval.pipeline:_second_hop", "chronomem.retrieval.search:_second_hop"],
}


def compact(store: Path) -> None:
    """Compact the store's table into few fragments (pylance), as upkeep would between bursts."""
    import lance

    lance.dataset(str(store / "memories.lance")).optimize.compact_files()


def run_side(checkout: Path, store: Path, data: Path, seed: int, env: dict[str, str], counts: tuple[int, int]) -> dict[str, Any]:
    """One side's medians (ms) and recall's stage means (ms, `STAGES`) from a child process with `checkout`
    first on its path."""
    child_env = {**os.environ, **env, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", ONE_SIDE, str(store), str(data), str(seed), *map(str, counts), json.dumps(STAGES)],
        cwd=checkout, env=child_env, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(
    sides: dict[str, tuple[Path, Path]], envs: dict[str, dict[str, str]], rounds: int, data: Path,
    counts: tuple[int, int] = (200, 100),
) -> dict[str, list[dict[str, Any]]]:
    """Every side's medians, round by round (`counts`: recalls and remembers a run times)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for round_number in range(1, rounds + 1):
        for name, (checkout, store) in sides.items():
            compact(store)
            started = time.strftime("%H:%M:%S")
            result = run_side(checkout, store, data, round_number, envs.get(name, {}), counts)
            runs[name].append(result)
            print(f"{started} round {round_number} {name}: recall {result['recall']} ms, remember {result['remember']} ms", flush=True)
    return runs


def table(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Per side, the median over rounds and its ratio to the first side, as Markdown."""
    lines = ["| side | recall median of rounds, ms | × first | remember median of rounds, ms | × first |", "|---|---|---|---|---|"]
    first = next(iter(runs))
    base = {tool: statistics.median(r[tool] for r in runs[first]) for tool in ("recall", "remember")}
    for name, results in runs.items():
        med = {tool: statistics.median(r[tool] for r in results) for tool in ("recall", "remember")}
        lines.append(
            f"| {name} | {med['recall']:.2f} | {med['recall'] / base['recall']:.2f} | {med['remember']:.2f} | "
            f"{med['remember'] / base['remember']:.2f} |"
        )
    return "\n".join(lines)


def stage_table(runs: dict[str, list[dict[str, Any]]]) -> str:
    """Per side, each recall stage's mean ms (median over rounds), as Markdown: where the sides differ."""
    labels = [label for label in STAGES if any(label in r.get("stages", {}) for results in runs.values() for r in results)]
    lines = ["| side | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for name, results in runs.items():
        cells = []
        for label in labels:
            values = [r["stages"][label] for r in results if label in r.get("stages", {})]
            cells.append(f"{statistics.median(values):.2f}" if values else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", action="append", required=True, metavar="NAME=CHECKOUT:STORE")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VAR=VALUE", help="an environment variable for one side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--remembers", type=int, default=100)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo").resolve())
    args = parser.parse_args()
    sides: dict[str, tuple[Path, Path]] = {}
    for spec in args.side:
        name, _, where = spec.partition("=")
        checkout, _, store = where.partition(":")
        sides[name] = (Path(checkout).resolve(), Path(store).resolve())
    envs: dict[str, dict[str, str]] = {name: {} for name in sides}
    for spec in args.env:
        name, _, assignment = spec.partition("=")
        var, _, value = assignment.partition("=")
        envs[name][var] = value
    runs = run(sides, envs, args.rounds, args.data.resolve(), (args.recalls, args.remembers))
    print("\n" + table(runs))
    print("\nRecall's stages, mean ms a recall (median of rounds):\n\n" + stage_table(runs))


if __name__ == "__main__":
    main()
