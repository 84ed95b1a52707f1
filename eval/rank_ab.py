"""Ranking A/B: the same candidate pools ranked by this checkout's `retrieval.rank.rank` and another checkout's.

Recalls run through this checkout (LoCoMo questions on `--store`) and every pool `rank` is handed is kept; then
each pool is ranked by both functions in turn, `--repeats` times, with the value cache (`values.value_kinds`)
emptied before each run, as for a memory no recent query has read. It prints both medians, their ratio and how
many pools the two rank differently (order, scores, channels, abstention): a change meant only to be faster
must show 0.

    python -m eval.rank_ab --store DIR --other ../old-checkout [--queries 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _load_rank(checkout: Path) -> Any:
    """The other checkout's `retrieval/rank.py` as a module of its own (it imports the rest from this one)."""
    spec = importlib.util.spec_from_file_location("other_rank", checkout / "chronomem" / "retrieval" / "rank.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no chronomem/retrieval/rank.py under {checkout}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["other_rank"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _outcome(ranking: Any) -> tuple[Any, ...]:
    return ranking.abstained, ranking.reason, [
        (r.candidate.record.id, round(r.score, 9), tuple(r.channels)) for r in ranking.items
    ]


def main() -> None:
    from eval.bench_latency import DEFAULT_DATA, Corpus
    from eval.common import settings_for

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--project", default="bench")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", default=DEFAULT_DATA)
    args = parser.parse_args()

    import chronomem.retrieval.pipeline as pipeline
    from chronomem.retrieval.values import value_kinds
    from chronomem.service import MemoryService
    from chronomem.tools import recall

    other = _load_rank(args.other)
    svc = MemoryService(settings_for(args.store, args.project))
    svc.store.wait_for_read_index(timeout=600)
    pools: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    ours = pipeline.rank

    def keep(*call: Any, **named: Any) -> Any:
        pools.append(copy.deepcopy((call, named)))
        return ours(*call, **named)

    pipeline.rank = keep
    try:
        for question in Corpus.load(Path(args.data)).queries(args.queries):
            recall(svc, question)
    finally:
        pipeline.rank = ours

    mine: list[float] = []
    theirs: list[float] = []
    differing = 0
    for call, named in pools:
        for _ in range(args.repeats):
            outcomes = []
            for rank, times in ((ours, mine), (other.rank, theirs)):
                given, options = copy.deepcopy((call, named))
                value_kinds.cache_clear()
                started = time.perf_counter()
                outcomes.append(_outcome(rank(*given, **options)))
                times.append(time.perf_counter() - started)
        differing += outcomes[0] != outcomes[1]
    a, b = statistics.median(mine) * 1000, statistics.median(theirs) * 1000
    print(
        f"{len(pools)} pools: this checkout {a:.2f} ms, {args.other} {b:.2f} ms (median; ratio {a / b:.3f}); "
        f"ranked differently: {differing}"
    )


if __name__ == "__main__":
    main()
