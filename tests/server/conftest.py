"""Fixtures for the server integration tests: they spawn the real `chronomem serve` process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run `@pytest.mark.anyio` tests on asyncio only (the server and `mcp` client use asyncio)."""
    return "asyncio"


@pytest.fixture
def store(tmp_path):
    """A fresh store directory per test."""
    path = tmp_path / "store"
    return path


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the page's browser tests save screenshots: CHRONOMEM_SCREENSHOTS, else a temporary directory (tests
    write nowhere else)."""
    chosen = os.environ.get("CHRONOMEM_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
