"""Opening an existing store without LanceDB (`MemoryStore._open_quick`): pylance reads its schema, version and
rows into the read index, and LanceDB opens at the first use that needs it — so a starting server's first
recall does not wait for LanceDB's import. What must hold: the answers are the same, a commit made meanwhile by
another handle is seen, our own writes work, and a store that needs more than reading opens the full way."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search.engine import open_store, text_search, vector_search
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.schema import FTS_INDEX
from tests.conftest import REPO

DIM = 8
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def rec(content: str, i: int, project: str = "p") -> MemoryRecord:
    vector = [0.0] * DIM
    vector[i % DIM] = 1.0
    return MemoryRecord(
        id=new_id(), kind="chunk", project=project, content=content, valid_at=T0, created_at=T0,
        vector=vector, embed_model="test",
    )


def live() -> Filter:
    now = datetime.now(UTC)
    return Filter().projects(["p"]).live(now, now)


@pytest.fixture
def written(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    store = open_store(path, DIM, "test")
    store.add([rec("pytest runs the tests", 0), rec("ruff lints the code", 1), rec("other project", 2, "q")])
    return path


def test_a_quick_open_answers_like_a_full_one(written: Path) -> None:
    quick = open_store(written, DIM, "test")
    assert quick._opened is None and quick.read_index is not None  # nothing has needed LanceDB yet
    full = MemoryStore.open(written, DIM, "test")  # no read index: LanceDB answers
    assert quick.projects() == full.projects() == {"p": 2, "q": 1}
    assert [r.id for r, _ in text_search(quick, "tests", live(), 5)] == [r.id for r, _ in text_search(full, "tests", live(), 5)]
    assert [r.id for r, _ in vector_search(quick, [0, 1, 0, 0, 0, 0, 0, 0], live(), 1)] == [
        r.id for r, _ in vector_search(full, [0, 1, 0, 0, 0, 0, 0, 0], live(), 1)
    ]
    assert quick._opened is None


def test_another_handles_commit_is_seen_and_our_writes_work(written: Path) -> None:
    quick = open_store(written, DIM, "test")
    other = open_store(written, DIM, "test", read_index_rows=0)  # LanceDB answers
    theirs = rec("mypy checks the types", 3)
    other.add([theirs])
    assert [r.id for r, _ in text_search(quick, "mypy types", live(), 5)] == [theirs.id]
    assert quick._opened is None  # the read index read their commit through pylance: LanceDB is still not loaded
    ours = rec("black formats the code", 4)
    quick.add([ours])
    assert [r.id for r, _ in text_search(other, "black formats", live(), 5)] == [ours.id]
    assert quick.count() == other.count() == 5


def test_rows_another_handle_removed_are_caught_up_through_lancedb(written: Path) -> None:
    """The fragments' way cannot tell a removed row from a moved one: the quick store falls back to LanceDB's table."""
    import lance

    quick = open_store(written, DIM, "test")
    lance.dataset(str(written / "memories.lance")).delete("content = 'ruff lints the code'")
    assert [r.content for r, _ in text_search(quick, "ruff lints code", live(), 5)] == []
    assert quick._opened is not None and quick.projects() == {"p": 1, "q": 1}


def test_a_store_without_its_full_text_index_opens_the_full_way_and_gets_it(written: Path) -> None:
    import lance

    lance.dataset(str(written / "memories.lance")).drop_index(FTS_INDEX)
    store = open_store(written, DIM, "test")
    assert store._opened is not None  # LanceDB opened it, to build the index
    assert FTS_INDEX in {index.name for index in store.table.list_indices()}
    assert [r.content for r, _ in text_search(store, "ruff", live(), 5)] == ["ruff lints the code"]


def test_a_new_store_is_searched_before_its_table_exists_and_made_by_its_first_write(tmp_path: Path) -> None:
    path = tmp_path / "new"
    reader = open_store(path, DIM, "test")
    writer = open_store(path, DIM, "test")
    assert text_search(reader, "tests", live(), 5) == [] and reader.projects() == {}
    assert not (path / "memories.lance").exists()  # searching a new store writes nothing
    first = rec("pytest runs the tests", 0)
    writer.add([first])
    assert FTS_INDEX in {index.name for index in writer.table.list_indices()}
    assert [r.id for r, _ in text_search(reader, "tests", live(), 5)] == [first.id]  # another handle made the table
    assert MemoryStore.open(path, DIM, "test").count() == 1


@pytest.mark.slow
def test_a_servers_first_recall_does_not_import_lancedb(tmp_path: Path) -> None:
    """The real service and tools in a fresh process: recall answers before anything imports LanceDB (or
    fastembed); the first remember then opens it."""
    store = tmp_path / "store"
    code = f"""
import json, sys
from pathlib import Path
from chronomem.config import Settings
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
svc = MemoryService(Settings(store_path=Path({str(store)!r}), project="p"))
if sys.argv[1] == "write":
    remember(svc, "The test suite runs with pytest -q.")
    print(json.dumps({{}}))
else:
    first = [item.text for item in recall(svc, "how do we run the tests").results]
    before = sorted(m for m in ("lancedb", "fastembed") if m in sys.modules)
    remember(svc, "Lint with ruff check.")
    second = [item.text for item in recall(svc, "which linter").results]
    print(json.dumps({{"first": first, "imported": before, "second": second, "lancedb": "lancedb" in sys.modules}}))
"""
    run = lambda mode: json.loads(  # noqa: E731
        subprocess.run([sys.executable, "-c", code, mode], cwd=REPO, capture_output=True, text=True, check=True,
                       timeout=180).stdout.strip().splitlines()[-1]
    )
    run("write")
    seen = run("read")
    assert seen["first"][0] == "The test suite runs with pytest -q."
    assert seen["imported"] == []
    assert seen["second"][0] == "Lint with ruff check."
    assert seen["lancedb"] is True
