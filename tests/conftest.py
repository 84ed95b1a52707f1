"""Shared fixtures: the real embedding model (the one the package ships), real LanceDB stores in temp dirs.

Nothing here needs ../shared: tests reading its data or its float32 model ask `shared_dir()` /
`fp32_model_dir()`, which skip with the reason when it is absent (.ci/run has it, so CI runs them).
"""

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


def shared_candidates() -> list[Path]:
    """Where ../shared may be: CHRONOMEM_SHARED, beside the checkout, or beside its worktrees' folder."""
    first = [Path(os.environ["CHRONOMEM_SHARED"])] if os.environ.get("CHRONOMEM_SHARED") else []
    return [*first, REPO.parent / "shared", REPO.parent.parent / "shared"]


def find_shared(*parts: str) -> Path | None:
    """`../shared/<parts>` when it exists, else None."""
    for base in shared_candidates():
        if base.joinpath(*parts).exists():
            return base.joinpath(*parts)
    return None


def shared_dir(*parts: str) -> Path:
    """`../shared/<parts>`, or skip the test saying what is missing (a fresh clone has no ../shared)."""
    found = find_shared(*parts)
    if found is None:
        pytest.skip(f"needs ../shared/{'/'.join(parts)} (absent here; set CHRONOMEM_SHARED; .ci/run has it)")
    return found


def model_dir() -> Path:
    """The model the tests embed with: the one shipped in the package, what a user gets with nothing set."""
    from chronomem.embed.packaged import packaged_model_dir

    return packaged_model_dir()


def fp32_model_dir() -> Path:
    """The float32 ONNX export in ../shared/models (CHRONOMEM_MODEL_PATH wins), or skip."""
    if os.environ.get("CHRONOMEM_MODEL_PATH"):
        return Path(os.environ["CHRONOMEM_MODEL_PATH"])
    return shared_dir("models", "all-MiniLM-L6-v2-onnx")


_RUN_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    """Any int8 copy a test makes (from a float32 folder, ~2 s) goes to a folder of this run, not the user's cache;
    so does matplotlib's font list, for the tests that read a plot's pixels with matplotlib before chronomem.plot
    gives it a folder of its own (it would write ~/.cache/matplotlib)."""
    import tempfile

    for name, prefix in (("CHRONOMEM_CACHE_DIR", "chronomem-test-cache-"), ("MPLCONFIGDIR", "chronomem-test-mpl-")):
        if name not in os.environ:
            folder = tempfile.mkdtemp(prefix=prefix)
            _RUN_CACHE.append(folder)
            os.environ[name] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this run's folders (the cache: ~60 MB, an int8 copy)."""
    import shutil

    for folder in _RUN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
        for name in ("CHRONOMEM_CACHE_DIR", "MPLCONFIGDIR"):
            if os.environ.get(name) == folder:
                del os.environ[name]


@pytest.fixture(scope="session")
def embedder() -> FastEmbedder:
    path = model_dir()
    if not (path / "model.onnx").is_file():
        pytest.fail(f"the shipped embedding model is not at {path}: run scripts/build_model.py")
    emb = FastEmbedder()  # nothing set: the shipped model
    emb.wait()
    assert emb.source == "shipped"
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
