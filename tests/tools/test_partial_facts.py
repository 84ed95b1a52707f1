"""A `remember` whose facts are partly malformed keeps the note and the good facts, and says which were refused."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from chronomem.errors import InvalidInput
from chronomem.server.app import build_server
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import recall, remember

NOTE = "billing-api now listens on 8080; its owner is the Payments team."
GOOD = {"subject": "billing-api", "predicate": "port", "object": "8080"}
BAD = [
    {"subject": "billing-api", "predicate": "owner", "object": None},  # object missing its value
    {"subject": "billing-api", "predicate": "owner"},  # object left out
    {"subject": "", "predicate": "owner", "object": "Payments"},  # blank subject
    {"subject": "billing-api", "predicate": "owner", "object": "Payments", "valid_from": "not a date at all"},
]


def live(svc: MemoryService) -> list[Any]:
    now = svc.now()
    return svc.store.find(Filter().live(now, now))


@pytest.mark.parametrize("bad", BAD, ids=["object-null", "object-missing", "subject-blank", "valid-from-not-a-date"])
def test_a_bad_fact_is_refused_and_the_note_and_good_fact_are_kept(svc: MemoryService, bad: dict[str, Any]) -> None:
    result = remember(svc, NOTE, facts=[GOOD, bad])

    assert [f.object for f in result.facts] == ["8080"]
    assert [r.index for r in result.refused_facts] == [1]
    assert "facts[1]" in result.refused_facts[0].reason
    assert "refused 1 fact" in result.message
    stored = {r.id: r for r in live(svc)}
    assert stored[result.id].content == NOTE and stored[result.facts[0].id].object == "8080"
    assert recall(svc, "which port does billing-api listen on").results


def test_a_call_whose_facts_are_not_a_list_is_still_refused_whole(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match="facts must be a list"):
        remember(svc, NOTE, facts="port=8080")
    assert live(svc) == []


def test_over_mcp_a_null_object_refuses_that_fact_only(svc: MemoryService) -> None:
    async def go() -> dict[str, Any]:
        async with Client(build_server(svc), read_timeout_seconds=60) as client:
            result = await client.call_tool("remember", {"content": NOTE, "facts": [BAD[0], GOOD]})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            return result.structured_content

    out = anyio.run(go)
    assert [r["index"] for r in out["refused_facts"]] == [0]
    assert [f["object"] for f in out["facts"]] == ["8080"]
    assert any(r.id == out["id"] for r in live(svc))
