"""Any caller string is a literal in a LanceDB filter: it matches itself and nothing else."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search.engine import open_store
from chronomem.storage import Filter, MemoryStore

T0 = datetime(2024, 1, 1, tzinfo=UTC)
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    s = open_store(Path(tmp_path_factory.mktemp("filters")), 2, "test")
    s.add([_row("bystander"), _row("'"), _row("\\"), _row("' OR '1'='1")])
    return s


def _row(project: str) -> MemoryRecord:
    return MemoryRecord(id=new_id(), kind="chunk", project=project, content="c", valid_at=T0, created_at=T0, vector=[1.0, 0.0])


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(project=text, other=text)
def test_any_string_matches_only_itself(store: MemoryStore, project: str, other: str) -> None:
    store.add([_row(project)])
    now = T0 + timedelta(days=1)
    for flt in (Filter().projects([project]), Filter().projects([project, other]).projects([project])):
        found = store.find(flt.live(now, now))
        assert found and {r.project for r in found} == {project}
    assert store.count(Filter().ids([project])) == 0
    assert store.count(Filter().slot(project, project)) == 0


def test_sources_keeps_the_rows_those_sources_stated(tmp_path: Path) -> None:
    s = open_store(tmp_path, 2, "test")
    rows = {source: MemoryRecord(id=new_id(), kind="fact", project="p", content=source, valid_at=T0, created_at=T0,
                                 vector=[1.0, 0.0], subject="s", predicate=source, object="o", source=source)
            for source in ("agent", "rules", "structure")}
    s.add(list(rows.values()))
    assert {r.source for r in s.find(Filter().sources(["agent", "structure"]))} == {"agent", "structure"}
    assert s.count(Filter().projects(["p"]).sources(["rules"])) == 1
    assert s.count(Filter().sources(["llm"])) == 0
