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
the median over rounds and its ratio to the first side.
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

ONE_SIDE = """
import json, statistics, sys, time
from pathlib import Path
from eval.bench_latency import PROJECT, Corpus
from eval.common import make_embedder, settings_for
from chronomem.records import utcnow
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
store, data, seed, recalls, remembers = Path(sys.argv[1]), Path(sys.argv[2]), *map(int, sys.argv[3:6])
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
out = {"recall": median_ms(lambda q: recall(svc, q), queries)}
remember(svc, notes[0])
out["remember"] = median_ms(lambda t: remember(svc, t), notes[1:])
print(json.dumps(out))
"""


def compact(store: Path) -> None:
    """Compact the store's table into few fragments (pylance), as upkeep would between bursts."""
    import lance

    lance.dataset(str(store / "memories.lance")).optimize.compact_files()


def run_side(checkout: Path, store: Path, data: Path, seed: int, env: dict[str, str], counts: tuple[int, int]) -> dict[str, float]:
    """One side's medians (ms) from a child process with `checkout` first on its path."""
    child_env = {**os.environ, **env, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", ONE_SIDE, str(store), str(data), str(seed), *map(str, counts)],
        cwd=checkout, env=child_env, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(
    sides: dict[str, tuple[Path, Path]], envs: dict[str, dict[str, str]], rounds: int, data: Path,
    counts: tuple[int, int] = (200, 100),
) -> dict[str, list[dict[str, float]]]:
    """Every side's medians, round by round (`counts`: recalls and remembers a run times)."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for round_number in range(1, rounds + 1):
        for name, (checkout, store) in sides.items():
            compact(store)
            started = time.strftime("%H:%M:%S")
            result = run_side(checkout, store, data, round_number, envs.get(name, {}), counts)
            runs[name].append(result)
            print(f"{started} round {round_number} {name}: recall {result['recall']} ms, remember {result['remember']} ms", flush=True)
    return runs


def table(runs: dict[str, list[dict[str, float]]]) -> str:
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


if __name__ == "__main__":
    main()
