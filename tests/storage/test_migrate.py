"""Schema 1 → 2 on a committed store made by the schema-1 code (fixtures/v1_store, fixtures/make_v1_store.py):
the `cm:` marks become columns and usage rows, a backup comes first, a killed migration resumes, and a store
newer than the code is refused in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from chronomem.config import DEFAULT_READ_INDEX_ROWS, Settings
from chronomem.errors import StoreError
from chronomem.service import MemoryService
from chronomem.storage import MemoryStore
from chronomem.storage.backup import list_backups
from chronomem.storage.doctor import check
from chronomem.storage.migrate import pending
from chronomem.storage.schema import SCHEMA_VERSION, SCHEMA_VERSION_KEY, TABLE_NAME, memories_schema, schema_version
from chronomem.tools import history, recall
from tests.conftest import model_dir
from tests.storage.test_doctor import cli, one_error_line

FIXTURE = Path(__file__).parent / "fixtures" / "v1_store"
NOTE = "01HZ9TV5P097151W18CVZH0BSJ"  # "The release checklist …": recalled once (a cm:seen mark)
DEPLOY = "01HZ9TX0901ZFD05M409BGX76A"  # anchored to deploy/fabfile.py
AGENT_FACT, RULES_FACT = "01HZ9TQGG0W98PVD99A7FFAZWN", "01HZ9TYTW024ZJ946Z34JPCWVM"  # api port 8080 / 9090
BLOB = "2ed6cc1499911daf43182d2d3f13ed1511a19630"


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(FIXTURE, store)
    return store


def raw_rows(store: Path) -> dict[str, dict]:
    import lancedb

    table = lancedb.connect(str(store)).open_table(TABLE_NAME)
    return {r["id"]: r for r in table.to_arrow().to_pylist()}


def test_the_fixture_is_a_schema_1_store_with_marks(v1: Path) -> None:
    rows = raw_rows(v1)
    assert "anchors" not in next(iter(rows.values())) and pending(v1) == 1
    tags = [t for r in rows.values() for t in r["tags"]]
    assert {t.split(":")[1] for t in tags if t.startswith("cm:")} == {"anchor", "conflict", "seen"}


def test_opening_a_v1_store_migrates_it_and_recall_finds_its_notes(v1: Path, embedder, clock) -> None:
    clock.advance(days=1)  # the fixture was written on the test clock's first day, up to 12:06
    svc = MemoryService(Settings(store_path=v1, model_path=model_dir(), project="proj"), embedder=embedder, clock=clock)
    store = svc.store
    assert schema_version(store.table.schema) == SCHEMA_VERSION and pending(v1) is None
    assert [b.version for b in list_backups(v1)], "a backup of the v1 table comes first"
    rows = raw_rows(v1)
    assert len(rows) == 6
    assert not [t for r in rows.values() for t in r["tags"] if t.startswith("cm:")], "no cm: tag remains"
    assert rows[NOTE]["tags"] == ["release"] and rows[DEPLOY]["tags"] == ["ops"]
    assert rows[DEPLOY]["anchors"] == [{"path": "deploy/fabfile.py", "blob": BLOB}]
    assert rows[AGENT_FACT]["conflicts_with"] == [RULES_FACT] and rows[RULES_FACT]["conflicts_with"] == [AGENT_FACT]
    seen = store.get(NOTE)
    assert seen is not None and seen.usage is not None and seen.usage.seen_at is not None
    assert seen.salience == pytest.approx(1.1), "the salience v1 hits added stays in the row"

    found = recall(svc, "where is the release checklist")
    assert found.results[0].id == NOTE and found.results[0].tags == ["release"]
    port = history(svc, subject="api", predicate="port")
    assert {e.id: e.conflicts_with for e in port.entries} == {AGENT_FACT: [RULES_FACT], RULES_FACT: [AGENT_FACT]}
    assert store.get(DEPLOY).anchors == {"deploy/fabfile.py": BLOB}  # type: ignore[union-attr]
    assert check(v1).ok and check(v1).schema == SCHEMA_VERSION


def killing_the_overwrite(monkeypatch: pytest.MonkeyPatch) -> object:
    """Make the migration's overwrite of `memories` die as a killed process would; returns what undoes it."""
    import lancedb.db

    real = lancedb.db.LanceDBConnection.create_table

    def dies_on_memories(self, name, *args, **kwargs):
        if name == TABLE_NAME:
            raise KeyboardInterrupt("killed")
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(lancedb.db.LanceDBConnection, "create_table", dies_on_memories)
    return lambda: monkeypatch.setattr(lancedb.db.LanceDBConnection, "create_table", real)


def test_a_migration_killed_before_its_last_commit_resumes(v1: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    revive = killing_the_overwrite(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        MemoryStore.open(v1, 384, "m", read_index_rows=0)
    assert pending(v1) == 1, "still schema 1: the overwrite is one commit"
    revive()
    store = MemoryStore.open(v1, 384, "m", read_index_rows=0)
    assert schema_version(store.table.schema) == SCHEMA_VERSION and store.count() == 6
    assert len(list_backups(v1)) == 1, "the backup of that v1 version is not taken twice"
    assert list(store.usage.latest()) == [NOTE] and store.usage.rows() == 1, "usage rows are not doubled"
    assert not [t for r in raw_rows(v1).values() for t in r["tags"] if t.startswith("cm:")]


@pytest.mark.slow
def test_a_store_newer_than_the_code_is_refused_in_one_line(tmp_path: Path) -> None:
    import lancedb

    store = tmp_path / "store"
    schema = memories_schema(384, "m")
    newer = schema.with_metadata({**schema.metadata, SCHEMA_VERSION_KEY: str(SCHEMA_VERSION + 1).encode()})
    lancedb.connect(str(store)).create_table(TABLE_NAME, schema=newer)
    with pytest.raises(StoreError, match="newer than this chronomem"):
        MemoryStore.open(store, 384, "m")
    line = one_error_line(cli("recall", "anything", "--store", str(store)))
    assert f"schema version {SCHEMA_VERSION + 1}" in line and "upgrade chronomem" in line
    assert pending(store) is None and check(store).schema == SCHEMA_VERSION + 1


@pytest.mark.slow
def test_the_cli_upgrades_without_asking_when_no_terminal_is_there(v1: Path) -> None:
    out = cli("recall", "release checklist", "--store", str(v1), "--project", "proj", "--json")
    assert out.returncode == 0, out.stderr
    assert NOTE in out.stdout and pending(v1) is None
    assert f"schema {SCHEMA_VERSION}" in cli("doctor", "--store", str(v1)).stdout


def test_usage_table_schema_round_trips() -> None:
    from chronomem.records import UTC, Usage
    from chronomem.storage.schema import usage_schema
    from chronomem.storage.usage import _latest_states, _row
    from datetime import datetime, timedelta

    t = datetime(2024, 1, 1, tzinfo=UTC)
    older = Usage(id="a", at=t, seen_at=t, hits=1, boost=0.1)
    newer = Usage(id="a", at=t + timedelta(hours=1), hits=2, boost=0.25, restated_by=["c"], anchors={"f": "b"},
                  conflicts_with=["x"])
    table = pa.Table.from_pylist([_row(newer), _row(older)], schema=usage_schema())
    assert _latest_states(table.to_pylist()) == {"a": newer}, "the latest per id, whatever the order"


def test_a_backup_from_before_the_upgrade_restores_upgraded(v1: Path) -> None:
    from chronomem.storage.doctor import restore_backup

    MemoryStore.open(v1, 384, "m", read_index_rows=0)  # migrates, backing schema 1 up first
    [before] = list_backups(v1)
    restore_backup(v1, before.path, replace=True)
    rows = raw_rows(v1)
    assert len(rows) == 6 and rows[DEPLOY]["anchors"] == [{"path": "deploy/fabfile.py", "blob": BLOB}]
    assert not [t for r in rows.values() for t in r["tags"] if t.startswith("cm:")]
    assert check(v1).ok and check(v1).schema == SCHEMA_VERSION
    # the schema-1 rows came back without terms, the table marked so; the next open with the tokenizer fills them
    import lancedb

    from chronomem.search.engine import open_store
    from chronomem.search.terms import row_terms
    from chronomem.storage.schema import terms_pending

    assert terms_pending(lancedb.connect(str(v1)).open_table(TABLE_NAME).schema)
    store = open_store(v1, 384, "m", read_index_rows=0)
    assert not terms_pending(store.table.schema)
    assert all(r["terms"] == row_terms(r["content"], r["kind"]) for r in raw_rows(v1).values()) and len(raw_rows(v1)) == 6


GATE_COLUMNS = ("novelty", "event_salience", "prediction_error", "gate")


def test_a_schema_2_store_opens_with_the_gate_columns_null_and_new_writes_fill_them(tmp_path: Path, embedder, clock) -> None:
    """Version 2 → 3 (issue 26): a table made under the version-2 layout (the gate's columns absent) is upgraded
    at open; its rows keep every value and read the gate's signals as null; a new remember records them."""
    import lancedb

    from chronomem.records import MemoryRecord
    from chronomem.tools import remember

    store_dir = tmp_path / "store"
    full = memories_schema(384, embedder.name)
    v2 = pa.schema([f for f in full if f.name not in (*GATE_COLUMNS, "terms")], metadata={**full.metadata, SCHEMA_VERSION_KEY: b"2"})
    vector = embedder.embed(["The nightly backup job writes to the cold-storage bucket."])[0]
    old = MemoryRecord(
        id="01HZ9TV5P097151W18CVZH0BAAA", kind="chunk", project="proj", content="The nightly backup job writes to the cold-storage bucket.",
        valid_at=clock(), created_at=clock(), vector=vector, embed_model=embedder.name, tags=["ops"],
    )
    row = {k: v for k, v in old.to_row().items() if k in v2.names}
    lancedb.connect(str(store_dir)).create_table(TABLE_NAME, data=pa.Table.from_pylist([row], schema=v2), schema=v2)
    assert pending(store_dir) == 2

    clock.advance(hours=1)
    svc = MemoryService(Settings(store_path=store_dir, model_path=model_dir(), project="proj"), embedder=embedder, clock=clock)
    assert schema_version(svc.store.table.schema) == SCHEMA_VERSION and pending(store_dir) is None
    stored = raw_rows(store_dir)[old.id]
    assert stored["content"] == old.content and stored["tags"] == ["ops"]
    assert all(stored[c] is None for c in GATE_COLUMNS)
    assert recall(svc, "where does the backup job write").results[0].id == old.id

    new = remember(svc, "Bumped the cold-storage bucket's retention from 30 to 90 days (ticket OPS-4411).")
    written = raw_rows(store_dir)[new.id]
    assert written["gate"] == "kept" and all(written[c] is not None for c in GATE_COLUMNS[:3])


# ---------------------------------------------------------------- version 3 → 4: the `terms` column (issue 28)
V3_NOTES = [
    ("chunk", "The payments-api listens on port 8443; config in deploy/payments/values.yaml."),
    ("fact", "payments-api port: 8443 (payments-api)"),  # a fact's repeated words count once
    ("chunk", "השרת רץ על פורט 8080 ואת הסיסמה שומרים בכספת"),
    ("chunk", "الخادم يعمل على المنفذ 8080 في بيئة الاختبار"),
    ("chunk", "服务器 运行 在 端口 9090"),
    ("chunk", "parseHTTPDate lives in src/util/http_dates.py."),
]


def make_v3_store(store_dir: Path, embedder, clock) -> list[str]:
    """A store as the schema-3 code wrote it: no `terms` column, the full-text index on `content` with LanceDB's
    default tokenizer (what `ensure_indexes` made), two commits of rows. Returns their ids."""
    import lancedb
    from lancedb.index import FTS

    from chronomem.records import MemoryRecord, new_id

    full = memories_schema(384, embedder.name)
    v3 = pa.schema([f for f in full if f.name != "terms"], metadata={**full.metadata, SCHEMA_VERSION_KEY: b"3"})
    vectors = embedder.embed([text for _, text in V3_NOTES])
    records = []
    for (kind, text), vector in zip(V3_NOTES, vectors, strict=True):
        clock.advance(minutes=1)
        records.append(MemoryRecord(id=new_id(clock()), kind=kind, project="proj", content=text, valid_at=clock(),
                                    created_at=clock(), vector=vector, embed_model=embedder.name,
                                    subject="payments-api" if kind == "fact" else None,
                                    predicate="port" if kind == "fact" else None,
                                    object="8443" if kind == "fact" else None))
    rows = [{k: v for k, v in r.to_row().items() if k in v3.names} for r in records]
    table = lancedb.connect(str(store_dir)).create_table(TABLE_NAME, data=pa.Table.from_pylist(rows[:3], schema=v3), schema=v3)
    table.add(pa.Table.from_pylist(rows[3:], schema=v3))
    table.create_index("content", config=FTS(), replace=True)
    return [r.id for r in records]


def test_a_schema_3_store_gets_every_row_s_terms_and_the_index_moves_to_them(tmp_path: Path, embedder, clock) -> None:
    from chronomem.search.terms import row_terms
    from chronomem.storage.schema import FTS_INDEX, OLD_FTS_INDEX

    store_dir = tmp_path / "store"
    ids = make_v3_store(store_dir, embedder, clock)
    before = raw_rows(store_dir)
    assert pending(store_dir) == 3 and "terms" not in next(iter(before.values()))

    clock.advance(hours=1)
    svc = MemoryService(Settings(store_path=store_dir, model_path=model_dir(), project="proj"), embedder=embedder, clock=clock)
    assert schema_version(svc.store.table.schema) == SCHEMA_VERSION and pending(store_dir) is None
    assert [b.version for b in list_backups(store_dir)], "a backup of the v3 table comes first"
    after = raw_rows(store_dir)
    assert sorted(after) == sorted(ids) == sorted(before), "no row lost or added"
    for memory_id, row in after.items():
        assert {k: v for k, v in row.items() if k != "terms"} == before[memory_id], "every other value kept"
        assert row["terms"] == row_terms(row["content"], row["kind"]) and row["terms"]
    fact = after[ids[1]]
    assert fact["terms"].split().count("payments-api") == 1
    indexes = {idx.name for idx in svc.store.table.list_indices()}
    assert FTS_INDEX in indexes and OLD_FTS_INDEX not in indexes, "the index on content, which nothing reads, is gone"
    for word, wanted in (("בכספת", ids[2]), ("المنفذ", ids[3]), ("端口", ids[4]), ("src/util/http_dates.py", ids[5])):
        found = recall(svc, word)
        assert found.results and found.results[0].id == wanted, word
        assert "lexical" in found.results[0].channels, word
    assert check(store_dir).ok and check(store_dir).schema == SCHEMA_VERSION


def test_a_schema_3_migration_killed_before_its_commit_resumes(tmp_path: Path, embedder, clock, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.search.engine import open_store

    store_dir = tmp_path / "store"
    ids = make_v3_store(store_dir, embedder, clock)
    revive = killing_the_overwrite(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        open_store(store_dir, 384, embedder.name, read_index_rows=0)
    assert pending(store_dir) == 3 and sorted(raw_rows(store_dir)) == sorted(ids), "still schema 3, every row there"
    revive()
    store = open_store(store_dir, 384, embedder.name, read_index_rows=0)
    assert schema_version(store.table.schema) == SCHEMA_VERSION and store.count() == len(ids)
    assert len(list_backups(store_dir)) == 1, "the backup of that v3 version is not taken twice"
    assert all(r["terms"] for r in raw_rows(store_dir).values())


@pytest.mark.parametrize("read_index_rows", [0, DEFAULT_READ_INDEX_ROWS], ids=["lancedb-answers", "read-index"])
def test_a_store_migrated_by_storage_alone_gets_its_terms_at_the_next_open_with_the_tokenizer(
    tmp_path: Path, embedder, clock, read_index_rows: int
) -> None:
    """Storage alone (reembed, a check) opens a schema-3 store without the tokenizer: the migration keeps every
    row, without terms, and marks the table; the next open through the search component fills them and clears
    the mark. A store without the tokenizer refuses new rows rather than write rows LanceDB cannot find."""
    from chronomem.records import MemoryRecord, new_id
    from chronomem.search.engine import open_store, text_search
    from chronomem.search.terms import row_terms
    from chronomem.storage import Filter
    from chronomem.storage.schema import terms_pending

    store_dir = tmp_path / "store"
    ids = make_v3_store(store_dir, embedder, clock)
    bare = MemoryStore.open(store_dir, 384, embedder.name, read_index_rows=0)
    assert schema_version(bare.table.schema) == SCHEMA_VERSION and terms_pending(bare.table.schema)
    assert sorted(raw_rows(store_dir)) == sorted(ids) and all(r["terms"] is None for r in raw_rows(store_dir).values())
    text = "The billing-worker drains queue billing.events every 30 s."
    new = MemoryRecord(id=new_id(clock()), kind="chunk", project="proj", content=text, valid_at=clock(),
                       created_at=clock(), vector=embedder.embed([text])[0], embed_model=embedder.name)
    with pytest.raises(StoreError, match="without a tokenizer"):
        bare.add([new])

    # with a read index, the store is small enough for a quick open (`MemoryStore._open_quick`), which must
    # not be taken: the terms are filled by a full open
    store = open_store(store_dir, 384, embedder.name, read_index_rows=read_index_rows)
    assert not terms_pending(store.table.schema)
    rows = raw_rows(store_dir)
    assert sorted(rows) == sorted(ids) and all(r["terms"] == row_terms(r["content"], r["kind"]) for r in rows.values())
    store.add([new])
    assert [r.id for r, _ in text_search(store, "billing.events", Filter(), 5)] == [new.id]
    assert [r.id for r, _ in text_search(store, "src/util/http_dates.py", Filter(), 5)] == [ids[5]]
