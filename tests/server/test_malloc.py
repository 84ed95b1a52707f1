"""Process memory upkeep: malloc arenas capped at start-up (unless MALLOC_ARENA_MAX says), the heap settled after a large build."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CALL = "from chronomem.malloc import limit_arenas; print(limit_arenas())"


def run(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env_extra
    out = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True, env=env, timeout=60, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_arenas_are_capped_in_a_fresh_process() -> None:
    assert run({}) == "True"


def test_an_explicit_malloc_arena_max_wins() -> None:
    assert run({"MALLOC_ARENA_MAX": "4"}) == "False"


BUILD = """
import gc, random, sys, tempfile
from chronomem.records import MemoryRecord, new_id, utcnow
from chronomem.search.engine import open_store, text_search
from chronomem.storage import Filter, MemoryStore
rows = int(sys.argv[1])
rng = random.Random(1)
with tempfile.TemporaryDirectory() as tmp:
    plain = open_store(tmp, 8, "test", read_index_rows=0)
    plain.add([MemoryRecord(id=new_id(), kind="chunk", project="p", content=f"note {i}", embed_model="test",
                            valid_at=utcnow(), created_at=utcnow(), vector=[rng.gauss(0, 1) for _ in range(8)]) for i in range(rows)])
    store = open_store(tmp, 8, "test", read_index_rows=100_000)
    text_search(store, "note", Filter(), 3)
    assert store.wait_for_read_index(120)
    print(gc.get_freeze_count() > 0)
"""


def frozen_after_build(rows: int) -> str:
    out = subprocess.run([sys.executable, "-c", BUILD, str(rows)], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


@pytest.mark.slow
def test_a_large_read_index_build_takes_the_heap_out_of_the_collectors_sight() -> None:
    from chronomem.storage.store import OPEN_BUILD_ROWS

    assert frozen_after_build(OPEN_BUILD_ROWS + 50) == "True"
    assert frozen_after_build(50) == "False"  # a small copy, made at open, is not worth a full collection
