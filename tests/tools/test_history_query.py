"""`history(query=…)`: the intent comes from the tool, not the question's words — the matching chains and notes,
ended ones too, oldest first."""

from __future__ import annotations

import pytest

from chronomem.errors import InvalidInput
from chronomem.service import MemoryService
from chronomem.tools import history, remember


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
