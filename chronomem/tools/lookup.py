"""Finding a memory by id, following revisions to the row that carries it now."""

from __future__ import annotations

from chronomem.errors import NotFound
from chronomem.records import MemoryRecord
from chronomem.storage import Filter, MemoryStore


def get_or_fail(store: MemoryStore, memory_id: str) -> MemoryRecord:
    rows = store.find(Filter().ids([memory_id]), limit=1, with_vectors=True)
    if not rows:
        raise NotFound(f"no memory has id {memory_id}: use an id returned by remember, recall, as_of or history")
    return rows[0]


def latest_revision(store: MemoryStore, record: MemoryRecord) -> MemoryRecord:
    """The non-expired row that restates `record` (itself when it was never revised)."""
    current = record
    for _ in range(1000):  # a revision chain is short; the bound only guards against a cycle
        if current.expired_at is None:
            return current
        nxt = store.find(Filter().revision_of([current.id]), with_vectors=True)
        live = [r for r in nxt if r.expired_at is None] or nxt
        if not live:
            return current
        current = max(live, key=lambda r: r.created_at)
    return current


def original_id(store: MemoryStore, record: MemoryRecord) -> str:
    """The id the record was first stored under, through its `revision_of` links."""
    current = record
    for _ in range(1000):
        if current.revision_of is None:
            return current.id
        parent = store.find(Filter().ids([current.revision_of]), limit=1)
        if not parent:
            return current.revision_of
        current = parent[0]
    return current.id


def anchors_of(store: MemoryStore, ids: list[str]) -> dict[str, dict[str, str]]:
    """The code anchors (file → blob id) of each of these memories, as reads see them."""
    if not ids:
        return {}
    return {r.id: dict(r.anchors) for r in store.find(Filter().ids(ids), limit=len(ids))}
