"""eval/devmem.NoteIds: which DevMem note a memory came from, for facts the consolidator made too."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from chronomem.records import MemoryRecord, new_id
from chronomem.service import MemoryService
from chronomem.tools import remember
from eval.devmem import NoteIds


def test_a_fact_the_consolidator_made_resolves_to_the_note_it_was_read_from(svc: MemoryService) -> None:
    note = remember(svc, "Pinned prost at 3.26.2 in the lockfile.", project="proj")
    fact = MemoryRecord(
        id=new_id(), kind="fact", project="proj", content="prost version: 3.26.2", subject="prost",
        predicate="version", object="3.26.2", source="rules", source_ids=[note.id],
        valid_at=svc.now() - timedelta(seconds=1), created_at=svc.now(), vector=svc.embed_one("prost version: 3.26.2"),
    )
    svc.store.add([fact])
    notes = NoteIds(svc)
    notes.bind(note.id, "ashcombe-0140")  # the replay binds the notes it writes, not the facts the consolidator makes
    assert notes.resolve(fact.id, count=False) == "ashcombe-0140"
    assert notes.resolve(new_id()) is None
    orphan = replace(fact, id=new_id(), source_ids=[new_id()])
    svc.store.add([orphan])
    assert notes.resolve(orphan.id, count=False) is None and notes.unmapped == 0  # a reply's update is no result row
    assert notes.of(orphan.id, None, orphan.source_ids) is None and notes.unmapped == 1
