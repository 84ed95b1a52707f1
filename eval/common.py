"""Plumbing shared by the benchmarks: paths, services on temporary stores, consolidator steps, timing.

The benchmarks drive chronomem only through its public pieces (`MemoryService`, the
tools, `MemoryStore` searches); nothing here changes how chronomem ranks.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronomem.config import DEFAULT_MODEL_DIM, Settings
from chronomem.consolidate.runner import Consolidator
from chronomem.embed import FastEmbedder
from chronomem.service import MemoryService

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "eval" / "results"
#: The float32 ONNX export of all-MiniLM-L6-v2 in ../shared (the source of the shipped model, whose weights are
#: stored as float16; eval/embed_precision.py measures it against this). The benchmarks embed with the shipped model.
SHARED_MODEL = next(
    (
        base / "models" / "all-MiniLM-L6-v2-onnx"
        for base in ([Path(os.environ["CHRONOMEM_SHARED"])] if os.environ.get("CHRONOMEM_SHARED") else [])
        + [REPO_ROOT.parent / "shared", REPO_ROOT.parent.parent / "shared"]
        if (base / "models" / "all-MiniLM-L6-v2-onnx" / "model.onnx").is_file()
    ),
    REPO_ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx",
)


def resolve_data_dir(arg: str) -> Path:
    """A data folder given absolutely, relative to the working directory, or relative to the repo root."""
    path = Path(arg).expanduser()
    for candidate in (path, REPO_ROOT / path):
        if candidate.is_dir():
            return candidate.resolve()
    raise SystemExit(f"data folder {arg!r} not found (tried {path.resolve()} and {(REPO_ROOT / path).resolve()})")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def settings_for(store_path: Path, project: str) -> Settings:
    """Settings for one store from the environment: the shipped model unless CHRONOMEM_MODEL_PATH says otherwise."""
    return Settings.from_env(store=store_path, project=project)


def make_embedder() -> FastEmbedder:
    """One embedder for the whole run, so the model loads once however many stores are opened."""
    settings = settings_for(Path(tempfile.gettempdir()), "eval")
    embedder = FastEmbedder(
        model_name=settings.model_name,
        model_path=settings.model_path,
        dim=DEFAULT_MODEL_DIM,
        wait_seconds=settings.model_wait_seconds,
        precision=settings.embed_precision,
    )
    embedder.wait()
    return embedder


@contextmanager
def temp_service(project: str, embedder: FastEmbedder) -> Iterator[MemoryService]:
    """A `MemoryService` on a fresh store in a temporary directory, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="chronomem-eval-"))
    try:
        svc = MemoryService(settings_for(folder / "store", project), embedder=embedder)
        svc.store  # open now, so the first timed call does not pay for it
        yield svc
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Ranked:
    """One system's answer to one query: benchmark ids best first, and whether it abstained."""

    ids: list[str]
    abstained: bool


class Upkeep:
    """chronomem's own consolidator, given its turn after every write.

    The server lets the consolidator work once no tool call has been in flight for a
    quarter of a second, which an agent's pauses between calls always allow; a replay has
    no pauses, so the harness runs the pending steps itself: rule extraction of the new
    chunk, then index upkeep once 50 rows are unindexed (LanceDB searches unindexed rows
    flat: ~7x slower recall).
    """

    def __init__(self, svc: MemoryService, enabled: bool = True) -> None:
        self.consolidator = Consolidator(svc) if enabled else None

    def after_write(self) -> None:
        if self.consolidator is not None:
            for _ in range(100):  # bounded: each write adds one chunk, so this drains at once
                if self.consolidator.step() is None:
                    break

    def summary(self) -> dict[str, Any]:
        steps = self.consolidator.steps if self.consolidator is not None else []
        return {
            "enabled": self.consolidator is not None,
            "steps": len(steps),
            "seconds": round(sum(s.seconds for s in steps), 2),
        }


def median_ms(seconds: list[float]) -> float | None:
    return round(statistics.median(seconds) * 1000, 2) if seconds else None


def p95_ms(seconds: list[float]) -> float | None:
    if not seconds:
        return None
    ordered = sorted(seconds)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 2)
