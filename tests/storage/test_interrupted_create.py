"""A process killed while the table was first created (tests/robustness/test_crash.py found it: a writer SIGKILLed in
its first remember) leaves `memories.lance` with no committed version; the next open makes the table anew, since
nothing was ever acknowledged, instead of refusing the store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from chronomem.service import MemoryService
from chronomem.tools import recall, remember


def test_a_table_folder_with_no_version_is_made_anew(svc: MemoryService, tmp_path: Path) -> None:
    store = svc.settings.store_path
    remember(svc, "the first note")
    versions = Path(store) / "memories.lance" / "_versions"
    assert versions.is_dir() and any(versions.iterdir())  # a committed table keeps its versions there

    fresh = Path(store).parent / "cut-short"
    (fresh / "memories.lance" / "_transactions").mkdir(parents=True)
    other = MemoryService(replace(svc.settings, store_path=fresh), embedder=svc.embedder, clock=svc.clock)
    written = remember(other, "written after the interrupted creation")
    assert [r.id for r in recall(other, "interrupted creation").results] == [written.id]
