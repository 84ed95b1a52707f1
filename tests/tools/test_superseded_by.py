"""forget(id, superseded_by=…) and remember(supersedes=…): a memory replaced by a newer one hands its facts over.

A model passes a fact with one note and none with the next ("- Format: `uv run ruff format .`" with the format
command, then "- Format: `uv run --frozen ruff format .`"). When the agent confirms that the newer note replaces the
older one, ending the older one alone would leave the slot with no current value; the fact is carried over to the
newer note (its value read where the older note said the old one) and supersedes the old value."""

from __future__ import annotations

import pytest

from chronomem.errors import InvalidInput
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import as_of, forget, history, recall, remember

FORMAT = {"subject": "mcppy", "predicate": "format command", "object": "uv run ruff format ."}


def test_a_confirmed_update_carries_the_fact_to_the_newer_note(svc: MemoryService, clock) -> None:
    old = remember(svc, "- Format: `uv run ruff format .`", valid_from="2024-01-24", facts=[FORMAT])
    clock.advance(seconds=1)
    new = remember(svc, "- Format: `uv run --frozen ruff format .`", valid_from="2024-05-01")
    assert [(u.id, u.basis) for u in new.probable_updates] == [(old.id, "same text but for a value")]
    assert f"forget(id, superseded_by={new.id!r})" in new.message

    ended = forget(svc, old.id, superseded_by=new.id)
    [carried] = ended.carried
    assert (carried.subject, carried.predicate, carried.object) == ("mcppy", "format_command", "uv run --frozen ruff format .")
    assert carried.supersedes == old.facts[0].id and ended.action == "invalidated"
    chain = history(svc, subject="mcppy", predicate="format_command").entries
    assert [(e.object, e.status) for e in chain] == [("uv run ruff format .", "ended"), ("uv run --frozen ruff format .", "current")]
    assert chain[0].superseded_by == carried.id and chain[1].source == "structure"
    facts = recall(svc, "what command formats the code", kinds=["fact"]).results
    assert [f.object for f in facts] == ["uv run --frozen ruff format ."]
    # the older note and its value still hold before the newer one, which is when the older one ended
    then = as_of(svc, "what command formats the code", at="2024-03-01", kinds=["fact"]).results
    assert [f.object for f in then] == ["uv run ruff format ."]


def test_a_newer_note_worded_otherwise_carries_the_one_new_value_it_gives_the_thing(svc: MemoryService, clock) -> None:
    port = {"subject": "dispatch-jobs service", "predicate": "port", "object": "5589"}
    old = remember(svc, "dispatch-jobs listens on 5589.", valid_from="2024-01-01", facts=[port])
    clock.advance(seconds=1)
    new = remember(svc, "dispatch-jobs → port 5381.", valid_from="2024-02-01")
    assert [(u.id, u.basis) for u in new.probable_updates] == [(old.facts[0].id, "new value for its attribute")]
    ended = forget(svc, old.facts[0].id, superseded_by=new.id)  # the reply listed the fact itself
    assert [(f.object, f.supersedes) for f in ended.carried] == [("5381", old.facts[0].id)]
    assert ended.action == "invalidated" and ended.id == old.facts[0].id
    assert [f.object for f in recall(svc, "dispatch-jobs port", kinds=["fact"]).results] == ["5381"]


def test_a_newer_note_that_says_another_thing_carries_nothing(svc: MemoryService, clock) -> None:
    old = remember(svc, "- Format: `uv run ruff format .`", valid_from="2024-01-24", facts=[FORMAT])
    clock.advance(seconds=1)
    other = remember(svc, "We format with the editor's ruff plugin now.", valid_from="2024-05-01")
    ended = forget(svc, old.id, superseded_by=other.id)
    assert ended.carried == [] and ended.also == [old.facts[0].id]
    assert recall(svc, "what command formats the code", kinds=["fact"]).results == []


def test_a_slot_the_newer_note_fills_itself_is_left_to_it(svc: MemoryService, clock) -> None:
    old = remember(svc, "- Format: `uv run ruff format .`", valid_from="2024-01-24", facts=[FORMAT])
    clock.advance(seconds=1)
    own = {**FORMAT, "object": "uv run --frozen ruff format ."}
    new = remember(svc, "- Format: `uv run --frozen ruff format .`", valid_from="2024-05-01", facts=[own], supersedes=[old.id])
    assert [f.action for f in new.facts] == ["superseded"]  # its own fact; nothing carried beside it
    assert [f.object for f in recall(svc, "what command formats the code", kinds=["fact"]).results] == [own["object"]]


def test_supersedes_carries_the_fact_too(svc: MemoryService, clock) -> None:
    old = remember(svc, "payments listens on port 8080", valid_from="2024-01-01", facts=[
        {"subject": "payments", "predicate": "port", "object": "8080"},
    ])
    clock.advance(seconds=1)
    new = remember(svc, "payments listens on port 8443", valid_from="2024-02-01", supersedes=[old.id])
    assert new.superseded == [old.id] and [(f.object, f.supersedes) for f in new.facts] == [("8443", old.facts[0].id)]
    assert [f.object for f in recall(svc, "payments port", kinds=["fact"]).results] == ["8443"]


def test_bad_successors_are_clear_errors(svc: MemoryService, clock) -> None:
    old = remember(svc, "payments listens on port 8080", valid_from="2024-02-01")
    earlier = remember(svc, "payments listens on port 80", valid_from="2024-01-01")
    elsewhere = remember(svc, "payments listens on port 9090", valid_from="2024-03-01", project="other")
    with pytest.raises(InvalidInput, match="before"):
        forget(svc, old.id, superseded_by=earlier.id)
    with pytest.raises(InvalidInput, match="project other"):
        forget(svc, old.id, superseded_by=elsewhere.id)
    with pytest.raises(InvalidInput, match="being forgotten"):
        forget(svc, old.id, superseded_by=old.id)
    with pytest.raises(InvalidInput, match="retract"):
        forget(svc, old.id, retract=True, superseded_by=earlier.id)
    assert recall(svc, "payments port").results  # nothing ended by a refused call


def test_a_memory_named_by_its_revision_is_not_its_own_successor(svc: MemoryService, clock) -> None:
    old = remember(svc, "payments listens on port 8080", valid_from="2024-02-01")
    forget(svc, old.id, at="2024-05-01")  # ends it: its latest revision is a row of its own id
    [revision] = [r for r in svc.store.find(Filter().revision_of([old.id])) if r.expired_at is None]
    with pytest.raises(InvalidInput, match="being forgotten"):
        forget(svc, old.id, superseded_by=revision.id)
    with pytest.raises(InvalidInput, match="being forgotten"):
        forget(svc, revision.id, superseded_by=old.id)
