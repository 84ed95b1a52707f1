"""A reader of a shared store keeps up with other writers' commits by reading the fragments they added.

Each commit adds a fragment; a read index that diffed every row of the table to find what changed did so each time
another writer committed, so reads (and a writer's own reads between its writes) slowed down as the store's history
grew: the writers' throughput fell over a run (issue 48). Here the table is read through pylance with the store's
storage options, as on any bucket."""

from __future__ import annotations

from chronomem.config import Settings, StoreURI
from chronomem.service import MemoryService
from chronomem.storage.filters import Filter
from chronomem.tools import remember


def test_a_reader_diffs_only_the_notes_another_writer_committed(s3_uri: str, embedder) -> None:
    reader = MemoryService(Settings(store_path=StoreURI(s3_uri), project="proj"), embedder=embedder)
    writer = MemoryService(Settings(store_path=StoreURI(s3_uri), project="proj"), embedder=embedder)
    for n in range(2):
        remember(writer, f"An early note {n}: the build cache lives in cache-{n}.")
    assert reader.store.wait_for_read_index()
    assert len(reader.store.find(Filter().kinds(["chunk"]))) == 2
    index = reader.store.read_index
    assert index is not None
    later = [remember(writer, f"A later note {n}: the deploy target is stage-{n}.").id for n in range(2)]
    assert sorted(r.id for r in reader.store.find(Filter().ids(later))) == sorted(later)
    assert index.rows_diffed == 2
    assert len(reader.store.find(Filter().kinds(["chunk"]))) == 4


def test_a_usage_table_another_writer_creates_is_seen_within_the_absent_window(
    s3_uri: str, embedder, monkeypatch
) -> None:
    """Reads on a shared store do not list the bucket for the usage side table each time while it is absent (each
    read did), and still see it once another writer creates it: at most ABSENT_FOR_SECONDS later."""
    import time

    from chronomem.records import Usage
    from chronomem.storage import usage

    monkeypatch.setattr(usage, "ABSENT_FOR_SECONDS", 1.0)
    reader = MemoryService(Settings(store_path=StoreURI(s3_uri), project="proj"), embedder=embedder)
    writer = MemoryService(Settings(store_path=StoreURI(s3_uri), project="proj"), embedder=embedder)
    made = remember(writer, "The release branch is cut on Thursdays.")
    assert reader.store.usage.latest() == {}
    looked = time.monotonic()
    writer.store.usage.append([Usage(id=made.id, at=made_at(writer, made.id), boost=2.0)])
    if time.monotonic() - looked < 0.9:
        assert reader.store.usage.latest() == {}  # within the window: not looked for again
    time.sleep(max(0.0, 1.1 - (time.monotonic() - looked)))
    assert reader.store.usage.latest()[made.id].boost == 2.0


def made_at(svc: MemoryService, memory_id: str):
    record = svc.store.get(memory_id)
    assert record is not None
    return record.created_at
