"""Storage: bi-temporal slices, atomic revisions, project isolation, safe filters, schema version."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from chronomem.errors import StoreError
from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search.engine import open_store, text_search, vector_search
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.schema import SCHEMA_VERSION

DIM = 8
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def vec(i: int) -> list[float]:
    v = [0.0] * DIM
    v[i % DIM] = 1.0
    return v


def rec(content: str, *, project: str = "p", valid_at: datetime = T0, created_at: datetime = T0, i: int = 0, **kw) -> MemoryRecord:
    return MemoryRecord(
        id=new_id(), kind=kw.pop("kind", "chunk"), project=project, content=content, valid_at=valid_at,
        created_at=created_at, vector=vec(i), embed_model="test", **kw,
    )


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return open_store(tmp_path / "s", DIM, "test")  # with the search component's tokenizer: rows carry their terms


def live_ids(store: MemoryStore, at: datetime, known_at: datetime, project: str = "p") -> set[str]:
    return {r.id for r in store.find(Filter().projects([project]).live(at, known_at))}


def test_schema_version_is_recorded_and_checked_on_reopen(tmp_path: Path) -> None:
    s = open_store(tmp_path / "s", DIM, "test")
    assert s.schema_version == SCHEMA_VERSION
    s.add([rec("hello")])
    again = MemoryStore.open(tmp_path / "s", DIM, "test")
    assert again.count() == 1
    with pytest.raises(StoreError, match="8-d vectors"):
        MemoryStore.open(tmp_path / "s", 16, "other")


def test_a_file_as_store_path_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        MemoryStore.open(f, DIM, "test")


def test_foreign_table_is_refused(tmp_path: Path) -> None:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(tmp_path / "s"))
    db.create_table("memories", schema=pa.schema([pa.field("x", pa.int64())]))
    with pytest.raises(StoreError, match="did not write"):
        MemoryStore.open(tmp_path / "s", DIM, "test")


def test_valid_time_slice_is_half_open(store: MemoryStore) -> None:
    t1, t2 = T0 + timedelta(days=10), T0 + timedelta(days=20)
    r = rec("bounded", valid_at=t1, invalid_at=t2)
    store.add([r])
    now = T0 + timedelta(days=100)
    assert r.id not in live_ids(store, t1 - timedelta(microseconds=1), now)
    assert r.id in live_ids(store, t1, now)
    assert r.id in live_ids(store, t2 - timedelta(microseconds=1), now)
    assert r.id not in live_ids(store, t2, now)


def test_transaction_time_slice(store: MemoryStore) -> None:
    k1, k2 = T0 + timedelta(days=1), T0 + timedelta(days=2)
    r = rec("retracted later", created_at=k1, expired_at=k2)
    store.add([r])
    at = T0 + timedelta(days=5)
    assert r.id not in live_ids(store, at, k1 - timedelta(seconds=1))
    assert r.id in live_ids(store, at, k1)
    assert r.id not in live_ids(store, at, k2)


def test_revision_keeps_the_past_readable_at_every_known_time(store: MemoryStore) -> None:
    original = rec("port is 8000", valid_at=T0, created_at=T0)
    store.add([original])
    ended, recorded = T0 + timedelta(days=30), T0 + timedelta(days=40)
    revision = MemoryStore.revision(original, invalid_at=ended, now=recorded, reason="moved")
    store.upsert([MemoryStore.expired(original, now=recorded, reason="revised"), revision])

    assert store.count() == 2  # nothing removed
    mid, after = T0 + timedelta(days=10), T0 + timedelta(days=35)
    # As known before the change: the original, open-ended.
    assert live_ids(store, after, recorded - timedelta(days=1)) == {original.id}
    # As known now: the revision, valid only until `ended`.
    assert live_ids(store, mid, recorded) == {revision.id}
    assert live_ids(store, after, recorded) == set()
    stored = store.get(revision.id)
    assert stored is not None and stored.revision_of == original.id and stored.invalid_at == ended


def test_projects_are_isolated(store: MemoryStore) -> None:
    a, b = rec("alpha", project="a"), rec("beta", project="b")
    store.add([a, b])
    now = T0 + timedelta(days=1)
    assert {r.id for r in store.find(Filter().projects(["a"]).live(now, now))} == {a.id}
    hits = vector_search(store, vec(0), Filter().projects(["b"]).live(now, now), 10)
    assert [r.id for r, _ in hits] == [b.id]
    assert store.projects() == {"a": 1, "b": 1}


@pytest.mark.parametrize(
    "evil",
    [
        "p' OR '1'='1",
        "p') OR (1=1",
        "p\\' OR 1=1 --",
        "p'; DROP TABLE memories; --",
        "x\" OR \"1\"=\"1",
        "' OR project IS NOT NULL OR '",
    ],
)
def test_filter_injection_strings_are_literals(store: MemoryStore, evil: str) -> None:
    secret = rec("other project's secret", project="victim")
    mine = rec("mine", project=evil)
    store.add([secret, mine])
    now = T0 + timedelta(days=1)
    found = store.find(Filter().projects([evil]).live(now, now))
    assert [r.id for r in found] == [mine.id]
    assert text_search(store, "secret", Filter().projects([evil]).live(now, now), 10) == []


def test_text_search_takes_any_text_and_respects_the_filter(store: MemoryStore) -> None:
    a = rec("run tests with `nox -s tests` (see noxfile.py)")
    b = rec("nox is also used in the other project", project="q")
    store.add([a, b])
    now = T0 + timedelta(days=1)
    flt = Filter().projects(["p"]).live(now, now)
    assert [r.id for r, _ in text_search(store, "noxfile.py AND (", flt, 5)] == [a.id]
    assert text_search(store, "", flt, 5) == []


def test_vector_search_scores_are_cosine(store: MemoryStore) -> None:
    store.add([rec("x", i=0), rec("y", i=1)])
    now = T0 + timedelta(days=1)
    hits = vector_search(store, vec(0), Filter().live(now, now), 2)
    assert hits[0][1] == pytest.approx(1.0)
    assert hits[1][1] == pytest.approx(0.0, abs=1e-6)


def test_upsert_is_one_commit(store: MemoryStore) -> None:
    a = rec("a")
    store.add([a])
    before = store._table.version
    ended = a.valid_at + timedelta(days=1)
    store.upsert([a.copy(invalid_at=ended, reason="ended"), rec("b"), rec("c")])
    assert store._table.version == before + 1
    assert store.count() == 3
    got = store.get(a.id)
    assert got is not None and got.invalid_at == ended and got.reason == "ended"


def test_upsert_refuses_to_rewrite_a_stored_row_beyond_its_validity(store: MemoryStore) -> None:
    a = rec("a")
    store.add([a])
    before = store._table.version
    for change in ({"salience": 3.0}, {"tags": ["x"]}, {"content": "other"}, {"anchors": {"f.py": "0" * 40}},
                   {"conflicts_with": ["z"]}, {"source_ids": ["s"]}):
        with pytest.raises(StoreError, match="refused to rewrite memory"):
            store.upsert([a.copy(**change), rec("b")])
    assert store._table.version == before and store.count() == 1, "a refused write writes nothing"
    # The vector is never taken from a record for a stored row: the table's own stays.
    store.upsert([a.copy(vector=[0.0] * len(a.vector or []), expired_at=a.created_at + timedelta(hours=1))])
    [row] = store.table.to_arrow().to_pylist()
    assert row["vector"] == pytest.approx(a.vector) and row["expired_at"] is not None
