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
