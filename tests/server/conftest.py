"""Fixtures for the server integration tests: they spawn the real `chronomem serve` process."""

from __future__ import annotations

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
