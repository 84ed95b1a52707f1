"""`append_records`, the bulk path behind `chronomem import` and eval/bench_latency.py: several commits into
a store that already holds rows, the given order kept, each row embedded as its own text."""

from __future__ import annotations

import math
from datetime import timedelta

from chronomem.records import MemoryRecord, new_id
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.storage.portable import append_records
from chronomem.tools import recall, remember


def test_append_records_commits_in_parts_and_embeds_each_text(svc: MemoryService, clock) -> None:
    remember(svc, "The staging database listens on port 5433.")
    texts = [f"Note {i}: " + "the release checklist needs a sign-off " * (i % 7) + f"item {i}" for i in range(23)]
    start = clock.now - timedelta(days=30)
    records = [
        MemoryRecord(
            id=new_id(start + timedelta(minutes=i)),
            kind="chunk",
            project="proj",
            content=t,
            valid_at=start + timedelta(minutes=i),
            created_at=start + timedelta(minutes=i),
            source="import",
        )
        for i, t in enumerate(texts)
    ]
    seen: list[int] = []
    before = svc.store._table.version
    written = append_records(svc.store, records, svc.embedder.embed, progress=seen.append, batch_size=4, commit_rows=10,
                             embed_model=svc.embedder.name)
    assert written == 23 and sum(seen) == 23
    assert svc.store._table.version - before == 3  # 10 + 10 + 3 rows
    stored = {r.id: r for r in svc.store.find(Filter().ids([r.id for r in records]), with_vectors=True)}
    assert [stored[r.id].content for r in records] == texts
    for record in records[:5]:
        [expected] = svc.embedder.embed([record.content])
        got = stored[record.id].vector
        assert got is not None and stored[record.id].embed_model == svc.embedder.name
        assert math.isclose(sum(a * b for a, b in zip(got, expected, strict=True)), 1.0, abs_tol=1e-4)
    assert svc.store.count() == 24
    hits = recall(svc, "what does the release checklist need")
    assert hits.results and "sign-off" in hits.results[0].text
