"""Where an in-process `recall` and `remember` spend their time, stage by stage: p50 / p95 / p99 over calls.

Each stage is a function of the read or write path, timed by wrapping it where its caller looks it up (a class
attribute, or a module's name) for the length of the measurement and restored afterwards; nothing of chronomem
changes. A call's time in a stage is the sum of that stage's runs within it (the search component answers ~3
lookups a recall); "other" is the call's time outside every listed stage (argument checks, the time phrase,
rendering's own work, the locks). Shares are of the summed medians' total, so they say where the typical call goes.

    python -m eval.stage_times --store DIR [--project bench] [--calls 100] [--data ../shared/data/locomo]

`eval/bench_latency.py` runs it at each size on its own store. The wrapper adds ~1 µs a stage run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Per tool: (module, attribute as its caller finds it, what the stage is). A stage run inside another is counted in
#: both (a remember whose facts are resolved embeds their slot phrases inside "facts resolved and committed"), and
#: "other" is then what is left after both, never below 0.
STAGES: dict[str, list[tuple[str, str, str]]] = {
    "recall": [
        ("chronomem.service", "MemoryService.embed_one", "query embedding"),
        ("chronomem.search.engine", "Search.candidates", "search: dense and lexical candidates"),
        ("chronomem.retrieval.pipeline", "attach_slot_cosines", "slot meaning of stated facts"),
        ("chronomem.retrieval.pipeline", "attach_adjacent", "search: conversational neighbours"),
        ("chronomem.search.engine", "Search.absent", "search: names the pool lacks"),
        ("chronomem.retrieval.pipeline", "rank", "ranking"),
        ("chronomem.retrieval.pipeline", "with_context", "context rows"),
        ("chronomem.retrieval.pipeline", "_second_hop", "second hop"),
        ("chronomem.retrieval.pipeline", "with_notes", "facts' notes"),
        ("chronomem.tools.recall", "_respond", "rendering"),
    ],
    "remember": [
        ("chronomem.safety.secrets", "SecretGuard.clean", "secret scan"),
        ("chronomem.embed.embedder", "FastEmbedder.embed", "embedding"),
        ("chronomem.consolidate.gate", "signals", "encoding gate signals"),
        ("chronomem.tools.remember", "resolve_and_commit", "facts resolved and committed"),
        ("chronomem.storage.store", "MemoryStore.add", "storage: commit, read-back, read index"),
        ("chronomem.tools.remember", "probable_updates", "probable updates"),
    ],
}
OTHER = "other"


@contextmanager
def timed(stages: Sequence[tuple[str, str, str]], spent: dict[str, float]) -> Iterator[None]:
    """While open, each stage adds its run time (seconds) to `spent[label]`."""
    undo: list[tuple[Any, str, Any]] = []

    def wrap(original: Callable[..., Any], label: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - started

        return run

    try:
        for module_name, attribute, label in stages:
            owner: Any = importlib.import_module(module_name)
            *path, name = attribute.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            undo.append((owner, name, original))
            setattr(owner, name, wrap(original, label))
        yield
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


def measure(tool: str, call: Callable[[Any], Any], inputs: Sequence[Any]) -> dict[str, Any]:
    """Each stage's p50 / p95 / p99 per call of `tool` over `inputs` (ms), the whole call's, and each median's share."""
    from eval.bench_latency import summary

    per_call: dict[str, list[float]] = {label: [] for _, _, label in STAGES[tool]}
    per_call[OTHER], totals = [], []
    for item in inputs:
        spent: dict[str, float] = {}
        with timed(STAGES[tool], spent):
            started = time.perf_counter()
            call(item)
            total = time.perf_counter() - started
        for _, _, label in STAGES[tool]:
            per_call[label].append(spent.get(label, 0.0))
        per_call[OTHER].append(max(total - sum(spent.values()), 0.0))
        totals.append(total)
    stages = {label: summary(values) for label, values in per_call.items()}
    whole = sum(s["median_ms"] for s in stages.values()) or 1.0
    for stats in stages.values():
        stats["share"] = round(stats["median_ms"] / whole, 3)
    return {"calls": len(totals), "call": summary(totals), "stages": stages}


def stage_times(svc: Any, queries: Sequence[str], notes: Sequence[str]) -> dict[str, Any]:
    """`measure` for recall over `queries` and remember over `notes`, after a warm-up call of each."""
    from chronomem.tools import recall, remember

    recall(svc, "warm up")
    remember(svc, "Warm-up note: the stage timer starts.")
    return {
        "recall": measure("recall", lambda q: recall(svc, q), queries),
        "remember": measure("remember", lambda t: remember(svc, t), notes),
    }


def main() -> None:
    from eval.bench_latency import DEFAULT_DATA, Corpus
    from eval.common import settings_for

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--project", default="bench")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--data", default=DEFAULT_DATA)
    args = parser.parse_args()

    from chronomem.service import MemoryService

    corpus = Corpus.load(Path(args.data))
    svc = MemoryService(settings_for(args.store, args.project))
    svc.store.wait_for_read_index(timeout=600)
    notes = [f"Stage note {i}: the staging cache was resized to {i + 16} GB after the load test." for i in range(args.calls)]
    print(json.dumps(stage_times(svc, corpus.queries(args.calls), notes), indent=1))


if __name__ == "__main__":
    main()
