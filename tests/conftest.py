"""Shared fixtures: the real embedding model from ../shared/models, real LanceDB stores in temp dirs."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from chronomem.config import Settings
from chronomem.embed import FastEmbedder
from chronomem.records import UTC
from chronomem.service import MemoryService

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODEL_DIR = REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx"


def model_dir() -> Path:
    return Path(os.environ.get("CHRONOMEM_MODEL_PATH", DEFAULT_MODEL_DIR))


_RUN_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """The model's int8 copy (made once per run, ~2 s) goes to a folder of this run, not the user's cache."""
    if "CHRONOMEM_CACHE_DIR" not in os.environ:
        import tempfile

        _RUN_CACHE.append(tempfile.mkdtemp(prefix="chronomem-test-cache-"))
        os.environ["CHRONOMEM_CACHE_DIR"] = _RUN_CACHE[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this run's cache folder (~60 MB: the int8 copy)."""
    import shutil

    for folder in _RUN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get("CHRONOMEM_CACHE_DIR") == folder:
            del os.environ["CHRONOMEM_CACHE_DIR"]


@pytest.fixture(scope="session")
def embedder() -> FastEmbedder:
    path = model_dir()
    if not (path / "model.onnx").is_file():
        pytest.fail(f"the embedding model is not at {path}: set CHRONOMEM_MODEL_PATH")
    emb = FastEmbedder(model_path=path)
    emb.wait()
    return emb


class Clock:
    """A settable clock so tests can step transaction time."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2024, 6, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def svc(tmp_path: Path, embedder: FastEmbedder, clock: Clock) -> MemoryService:
    settings = Settings(store_path=tmp_path / "store", model_path=model_dir(), project="proj")
    return MemoryService(settings, embedder=embedder, clock=clock)
