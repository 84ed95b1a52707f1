"""Entity views: every operator on a stream written here, as_of (valid time) and known_at (transaction time) on an
entity, a retraction leaving the counts, declared views in the store's entities.toml, and the `entity` tool's reply."""

from __future__ import annotations


from datetime import datetime

import pytest

from chronomem.config import Settings
from chronomem.consolidate.entities import BUILTIN, View, compute, load_views, parse_views
from chronomem.errors import InvalidInput
from chronomem.records import UTC
from chronomem.service import MemoryService
from chronomem.timeparse import parse_time
from chronomem.tools import entity, forget, remember

from tests.conftest import Clock, model_dir

TEST = "tests/test_sync.py::test_retry_backoff"


def fact(svc: MemoryService, clock, text: str, day: str, subject: str, predicate: str, obj: str):
    clock.advance(minutes=1)
    return remember(svc, text, valid_from=day, facts=[{"subject": subject, "predicate": predicate, "object": obj}])


@pytest.fixture
def stream(svc: MemoryService, clock) -> dict[str, list[str]]:
    return write_stream(svc, clock)


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory, embedder) -> tuple[MemoryService, dict[str, list[str]]]:
    """The stream written once for the module, for the tests that only read it (views, the entity tool, the brief)."""
    clock = Clock(datetime(2024, 6, 1, 12, 0, tzinfo=UTC))
    settings = Settings(store_path=tmp_path_factory.mktemp("entities") / "store", model_path=model_dir(), project="proj")
    svc = MemoryService(settings, embedder=embedder, clock=clock)
    return svc, write_stream(svc, clock)


def write_stream(svc: MemoryService, clock) -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {"flaky": [], "latency": [], "version": []}
    for day, run in (("2024-03-04", "CI run 881"), ("2024-04-11", "CI run 940"), ("2024-05-20", "CI run 1022")):
        r = fact(svc, clock, f"{TEST} flaked on {run}", day, TEST, "flaky", run)
        ids["flaky"].append(r.facts[0].id)
    for day, ms in (("2024-03-10", "420 ms"), ("2024-04-02", "910 ms"), ("2024-05-01", "615 ms")):
        r = fact(svc, clock, f"p95 latency of checkout-svc measured at {ms}", day, "checkout-svc", "p95_latency", ms)
        ids["latency"].append(r.facts[0].id)
    for day, v in (("2024-02-01", "0.110.0"), ("2024-03-15", "0.111.2"), ("2024-05-02", "0.112.0")):
        r = fact(svc, clock, f"Bumped fastapi to {v}", day, "fastapi", "version", v)
        ids["version"].append(r.facts[0].id)
    return ids


def values(svc: MemoryService, views: list[View], at: str = "now", known_at: str = "now", entity_: str | None = None):
    now = svc.now()
    return {(v.view, v.entity): v for v in compute(svc, "proj", views, parse_time(at, now), parse_time(known_at, now), entity_)}


def test_each_operator(read_only) -> None:
    svc, stream = read_only
    lat = ("p95_latency",)
    views = [
        View("reports", ("flaky",), "count"), View("flaky", ("flaky",), "time_compress"),
        View("lat_sum", lat, "sum"), View("lat_max", lat, "max"), View("lat_min", lat, "min"), View("lat_avg", lat, "avg"),
        View("version", ("version",), "latest"), View("version_max", ("version",), "max"),
    ]
    got = values(svc, views)
    reports = got[("reports", TEST)]
    assert reports.value == reports.count == 3 and reports.operator == "count"
    assert len(reports.fact_ids) == 3 and set(reports.fact_ids) >= set(stream["flaky"][-1:])
    compressed = got[("flaky", TEST)]
    assert compressed.summary == f"{TEST}: flaky 3 times between 2024-03-04 and 2024-05-20"
    assert got[("lat_sum", "checkout-svc")].value == pytest.approx(1945)
    assert got[("lat_avg", "checkout-svc")].value == pytest.approx(1945 / 3, rel=1e-6)
    assert got[("lat_max", "checkout-svc")].value == "910 ms" and got[("lat_min", "checkout-svc")].value == "420 ms"
    assert got[("version", "fastapi")].value == "0.112.0" and got[("version", "fastapi")].fact_ids == [stream["version"][-1]]
    # versions compare part by part (0.112.0 > 0.111.2 > 0.110.0), not as text or one decimal
    assert got[("version_max", "fastapi")].value == "0.112.0"
    # every aggregate names the facts it came from, and they are this entity's facts
    for v in got.values():
        assert v.fact_ids and all(svc.store.get(i).subject == v.entity for i in v.fact_ids)


def test_as_of_and_known_at_on_an_entity(svc: MemoryService, stream, clock) -> None:
    views = [View("flaky", ("flaky",), "time_compress"), View("version", ("version",), "latest")]
    april = values(svc, views, at="2024-04-20")
    assert april[("flaky", TEST)].count == 2 and april[("version", "fastapi")].value == "0.111.2"
    assert ("flaky", TEST) not in values(svc, views, at="2024-03-01"), "nothing reported yet"
    # a report recorded later about an earlier day: as known before it was recorded, the count is still 3
    before = clock()
    clock.advance(hours=1)
    late = fact(svc, clock, f"{TEST} also flaked on CI run 901", "2024-03-20", TEST, "flaky", "CI run 901")
    assert values(svc, views)[("flaky", TEST)].count == 4
    assert values(svc, views, known_at=before.isoformat())[("flaky", TEST)].count == 3
    assert values(svc, views, at="2024-04-20")[("flaky", TEST)].count == 3
    # a retracted report is no longer counted now, and still is as known before the retraction
    clock.advance(hours=1)
    before_retraction = clock()
    clock.advance(hours=1)
    forget(svc, late.facts[0].id, "that run was a different test", retract=True)
    assert values(svc, views)[("flaky", TEST)].count == 3
    assert values(svc, views, known_at=before_retraction.isoformat())[("flaky", TEST)].count == 4


def test_restatements_count_as_reports(svc: MemoryService, clock) -> None:
    views = [View("incidents", ("incident",), "count")]
    for day in ("2024-03-01", "2024-03-09", "2024-04-02"):
        fact(svc, clock, "checkout-svc had an incident: 502s from the payment gateway", day, "checkout-svc", "incident", "502s")
    got = values(svc, views)[("incidents", "checkout-svc")]
    assert got.count == 3 and len(got.fact_ids) == 1, "one fact, reinforced twice: three statements"


def test_views_declared_in_the_store_add_to_the_builtin_set(svc: MemoryService, stream) -> None:
    (svc.settings.store_path / "entities.toml").write_text(
        '[views.slowest]\npredicates = ["p95_latency"]\noperator = "max"\nsubject = "checkout-*"\n'
        'description = "worst p95 seen"\n'
    )
    views = load_views(svc)
    assert {v.name for v in BUILTIN} < set(views) and views["slowest"].operator == "max"
    assert values(svc, [views["slowest"]])[("slowest", "checkout-svc")].value == "910 ms"
    with pytest.raises(InvalidInput, match="operator must be one of"):
        parse_views('[views.x]\npredicate = "a"\noperator = "median"\n')
    with pytest.raises(InvalidInput, match="not valid TOML"):
        parse_views("[views.x\n")


def test_entity_tool_reply(read_only) -> None:
    svc, _ = read_only
    out = entity(svc, TEST)
    flaky = next(v for v in out.views if v.view == "flaky")
    assert flaky.count == 3 and flaky.model_dump()["count"] == 3 and '"count":3' in out.model_dump_json()
    assert "3 times between 2024-03-04 and 2024-05-20" in out.text()
    assert entity(svc, "fastapi", as_of="2024-04-01").views[0].value == "0.111.2"
    assert [v.entity for v in entity(svc, view="version").views] == ["fastapi"]
    with pytest.raises(InvalidInput, match="no view named"):
        entity(svc, view="nope")
    with pytest.raises(InvalidInput, match="pass name"):
        entity(svc)
    assert entity(svc, "unknown-thing").views == []


def test_the_brief_lists_repeated_reports_under_counts(read_only) -> None:
    svc, _ = read_only
    from chronomem.tools.brief import brief

    out = brief(svc, budget_tokens=3000)
    tally = next(t for t in out.tallies if t.entity == TEST)
    assert tally.count == 3 and tally.view == "flaky"
    assert "## Counts" in out.text() and f"{TEST}: flaky 3 times between 2024-03-04 and 2024-05-20" in out.text()


@pytest.mark.parametrize("predicate", ["flaky", "flaky_report", "marked flaky", "flaky test"])
def test_the_flaky_story_under_any_naming(svc: MemoryService, clock, predicate: str) -> None:
    """Three reports whose object is the day (an event each: none supersedes another) under the agent's own
    predicate: the flaky view finds them by meaning, counts three now and two as of the second report."""
    test = "tests/test_sync.py::test_retry"
    reports = [fact(svc, clock, f"{test} flaked again", day, test, predicate, day) for day in ("2024-03-02", "2024-03-09", "2024-03-20")]
    assert [r.facts[0].action for r in reports] == ["added"] * 3
    [now] = entity(svc, test).views
    assert (now.view, now.count, now.last[:10]) == ("flaky", 3, "2024-03-20")
    assert sorted(now.fact_ids) == sorted(r.facts[0].id for r in reports)
    [then] = entity(svc, test, as_of="2024-03-10").views
    assert (then.count, then.last[:10]) == (2, "2024-03-09")


def test_a_view_takes_no_fact_of_another_meaning(svc: MemoryService, clock) -> None:
    fact(svc, clock, "billing is on 8080", "2024-03-01", "billing", "listening port", "8080")
    fact(svc, clock, "billing is owned by Ana", "2024-03-01", "billing", "owned by", "Ana")
    views = {v.view: v.value for v in entity(svc, "billing").views}
    assert views == {"port": "8080", "owner": "Ana"}
