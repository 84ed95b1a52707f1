"""The server caps glibc's malloc arenas at start-up, unless MALLOC_ARENA_MAX already says how many."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CALL = "from chronomem.server.malloc import limit_arenas; print(limit_arenas())"


def run(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env_extra
    out = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True, env=env, timeout=60, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_arenas_are_capped_in_a_fresh_process() -> None:
    assert run({}) == "True"


def test_an_explicit_malloc_arena_max_wins() -> None:
    assert run({"MALLOC_ARENA_MAX": "4"}) == "False"
