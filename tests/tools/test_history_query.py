"""`history(query=…)`: the intent comes from the tool, not the question's words — the matching chains and notes,
ended ones too, oldest first."""

from __future__ import annotations

import pytest

from chronomem.errors import InvalidInput
from chronomem.service import MemoryService
from chronomem.tools import history, remember
from chronomem.tools.history import split_timeline
from chronomem.tools.results import HistoryEntry


def test_notes_without_facts_come_oldest_first_with_the_ended_ones(svc: MemoryService, clock) -> None:
    ids = []
    for day, version in (("2024-03-01", "2024.2.2"), ("2024-01-05", "2023.11.17"), ("2024-05-20", "2024.5.1")):
        clock.advance(seconds=1)
        ids.append((day, remember(svc, f"Upgrade certifi to {version}", valid_from=day).id))
    clock.advance(seconds=1)
    remember(svc, "The office plant needs water on Fridays.", valid_from="2024-02-01")
    out = history(svc, query="certifi")  # no history word in it: the tool says what is asked
    chain = [e.id for e in out.entries if "certifi" in e.text]
    assert chain == [i for _, i in sorted(ids)]
    assert out.kind == "query" and "oldest first" in out.message


def test_a_fact_found_brings_its_whole_chain(svc: MemoryService, clock) -> None:
    first = remember(svc, "payments listens on 8080", valid_from="2024-01-01", facts=[{"subject": "payments", "predicate": "port", "object": "8080"}])
    clock.advance(seconds=1)
    second = remember(svc, "payments moved to 8443", valid_from="2024-03-01", facts=[{"subject": "payments", "predicate": "port", "object": "8443"}])
    out = history(svc, query="which port does payments listen on")
    objects = [e.object for e in out.entries if e.object is not None]
    assert objects == ["8080", "8443"]
    assert [e.status for e in out.entries if e.object is not None] == ["ended", "current"]
    assert {first.facts[0].id, second.facts[0].id} <= {e.id for e in out.entries} | {e.revision_of for e in out.entries}


def test_query_is_one_way_of_asking(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="one of them"):
        history(svc, "01J0000000000000000000000X", query="port")


def test_the_memories_found_are_told_as_a_timeline_within_the_limit(svc: MemoryService, clock) -> None:
    # said in different words, so no chain by words: the ranking alone would order them by match
    for day, text in (
        ("2024-06-01", "The checkout service now answers on port 9443."),
        ("2024-01-10", "checkout listens on port 8080 in every environment."),
        ("2024-03-15", "Port for checkout was moved to 8443 after the TLS change."),
        ("2024-02-01", "The office plant needs water on Fridays."),
    ):
        clock.advance(seconds=1)
        remember(svc, text, valid_from=day)
    out = history(svc, query="which port does checkout listen on")
    days = [e.valid_at[:10] for e in out.entries]
    assert days == sorted(days) and {"2024-01-10", "2024-03-15", "2024-06-01"} <= set(days)
    short = history(svc, query="which port does checkout listen on", limit=2)
    assert len(short.entries) == 2 and [e.valid_at for e in short.entries] == sorted(e.valid_at for e in short.entries)
    assert all("checkout" in e.text for e in short.entries)  # the best matches, not the first in time


def _entry(n: int, day: str, text: str) -> HistoryEntry:
    return HistoryEntry(
        id=f"m{n}", text=text, status="current", valid_at=f"{day}T00:00:00Z", created_at=f"{day}T00:00:{n:02d}Z", source="user"
    )


def test_another_attribute_of_the_thing_from_before_its_history_does_not_lead() -> None:
    entries = [
        _entry(1, "2024-03-16", "exports-worker port: 7830"),
        _entry(2, "2024-07-29", "No longer 7830; exports-worker binds 3052 now."),
        _entry(3, "2024-02-12", "The exports module is served by exports-worker."),
        _entry(4, "2024-04-20", "The scheduler module is served by exports-worker."),
    ]
    scores = {"m1": 1.41, "m2": 1.16, "m3": 1.07, "m4": 0.97}
    timeline, rest = split_timeline("How has exports-worker's port changed?", entries, scores, ignore=set())
    # the history of a port begins at the first memory giving a number for it; a later memory of another attribute
    # stays in the timeline (what a value of the thing came beside), an earlier one follows by relevance
    assert [e.id for e in timeline] == ["m1", "m4", "m2"]
    assert [e.id for e in rest] == ["m3"]


def test_a_line_updated_in_place_begins_its_own_timeline() -> None:
    # one file's lines written at once, then one line changed: the history of the line starts at its first version,
    # not at the lines written before it that day
    entries = [
        _entry(4, "2025-01-24", "- Check: `uv run ruff check .`"),
        _entry(7, "2025-05-01", "- Check: `uv run --frozen ruff check .`"),
        _entry(1, "2025-01-24", "- Run formatters before type checks"),
        _entry(2, "2025-01-24", "- For checking in CI: `uv run ruff check . --output-format=github`"),
        _entry(8, "2025-05-01", "- Fix: `uv run --frozen ruff check . --fix`"),
    ]
    scores = {"m4": 1.2, "m7": 1.1, "m1": 0.9, "m2": 1.0, "m8": 0.9}
    timeline, rest = split_timeline("How has the Check command line changed?", entries, scores, ignore=set())
    assert [e.id for e in timeline][:2] == ["m4", "m7"]
    assert {"m1", "m2"} <= {e.id for e in rest}


def test_without_a_value_in_the_best_match_nothing_is_cut() -> None:
    entries = [
        _entry(1, "2024-05-01", "We now deploy by merging to main and letting the pipeline roll it out."),
        _entry(2, "2024-01-01", "Deploys are done by hand from a laptop."),
    ]
    timeline, rest = split_timeline("how did deploying change", entries, {"m1": 1.0, "m2": 0.9}, ignore=set())
    assert [e.id for e in timeline] == ["m2", "m1"] and rest == []


def test_an_address_giving_the_port_a_history_changes_begins_it() -> None:
    entries = [
        _entry(1, "2025-05-01", "invites-server is the host service for feeds."),
        _entry(2, "2025-06-04", "invites-server answers at localhost:6170 in dev."),
        _entry(3, "2025-06-20", "[repo] invites-server was rebound from port 6170 to 7940 as of today."),
        _entry(4, "2025-09-19", "invites-server was rebound from port 7940 to 6940 as of today."),
    ]
    scores = {"m1": 1.06, "m2": 1.02, "m3": 1.17, "m4": 1.28}
    timeline, rest = split_timeline("List every value the invites-server port has had", entries, scores, ignore=set())
    # an address's port is a number: the history of the port begins at localhost:6170, not at its first rebind
    assert [e.id for e in timeline] == ["m2", "m3", "m4"]
    assert [e.id for e in rest] == ["m1"]
