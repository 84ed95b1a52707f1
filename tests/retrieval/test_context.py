"""Conversational context: chunks written next to each other, alike in meaning, lift each other."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from chronomem.records import UTC, MemoryRecord
from chronomem.retrieval.context import context_additions, context_bonus, missing_neighbours
from chronomem.retrieval.rank import Ranked
from chronomem.search.candidates import Candidate
from chronomem.service import MemoryService
from chronomem.tools import recall, remember

T = datetime(2024, 5, 8, tzinfo=UTC)


def ranked(memory_id: str, score: float, adjacent: tuple[str, ...] = (), kind: str = "chunk") -> Ranked:
    record = MemoryRecord(
        id=memory_id, kind=kind, project="p", content=memory_id, valid_at=T, created_at=T  # type: ignore[arg-type]
    )
    return Ranked(Candidate(record, None, adjacent=adjacent), score, [])


def test_a_chunk_gains_a_share_of_its_best_neighbour_score_as_it_stood_before_any_bonus() -> None:
    items = [ranked("a", 1.0, ("b",)), ranked("b", 0.2, ("a", "c")), ranked("c", 0.5, ("b",)), ranked("d", 0.4)]
    context_bonus(items, 0.3)
    scores = {i.candidate.record.id: round(i.score, 6) for i in items}
    assert scores == {"a": 1.06, "b": 0.5, "c": 0.56, "d": 0.4}
    assert [i.channels for i in items] == [["context"], ["context"], ["context"], []]


def test_facts_and_a_zero_weight_gain_nothing() -> None:
    items = [ranked("a", 1.0, ("f",)), ranked("f", 0.2, ("a",), kind="fact")]
    context_bonus(items, 0.3)
    assert items[1].score == 0.2 and items[1].channels == []
    items = [ranked("a", 1.0, ("b",)), ranked("b", 0.2, ("a",))]
    context_bonus(items, 0.0)
    assert [i.score for i in items] == [1.0, 0.2]


@dataclass
class Item:
    id: str
    score: float
    kind: str = "chunk"


def test_missing_neighbours_are_those_of_the_first_chunks_not_already_shown() -> None:
    items = [Item("f", 2.0, "fact"), Item("a", 1.0), Item("b", 0.9), Item("c", 0.8)]
    adjacent = {"f": ("x",), "a": ("b", "y"), "b": ("a", "y", "z"), "c": ("w",)}
    missing = missing_neighbours(items, adjacent, 2, lambda i: i.id, lambda i: i.kind == "chunk")
    assert missing == [("a", "y"), ("b", "z")]  # the fact has none; "y" once; "c" is past the first two chunks


def test_an_addition_goes_below_its_chunk_and_below_what_follows_it_scoring_as_much() -> None:
    items = [Item("a", 1.0), Item("b", 0.9), Item("c", 0.4), Item("d", 0.3)]
    additions = [("a", Item("y", 0.5)), ("c", Item("z", 0.35)), ("q", Item("n", 9.0))]
    out = context_additions(items, additions, lambda i: i.id, lambda i: i.score)
    assert [i.id for i in out] == ["a", "b", "y", "c", "z", "d"]  # an addition whose chunk is not shown is dropped


def test_recall_brings_the_reply_to_a_question_asked_just_before_it(svc: MemoryService, clock: object) -> None:
    """The reply shares no word with the question asked of recall; the turn before it does."""
    day = "2023-05-08T10:00:00Z"
    turns = [
        "[8 May 2023] Caroline: Did you finish the pottery workshop you signed up for last month?",
        "[8 May 2023] Melanie: Yes! I glazed a small blue bowl and I love how it came out.",
        "[8 May 2023] Caroline: That is lovely, you should bring it next time we meet.",
    ]
    for text in turns:
        remember(svc, text, valid_from=day)
        clock.advance(seconds=20)  # type: ignore[attr-defined]
    others = [
        "[2 June 2023] Melanie: We went camping near the lake with the kids over the weekend.",
        "[2 June 2023] Caroline: I started volunteering at the youth center on Tuesdays.",
        "[9 July 2023] Melanie: My running group meets at six every morning now.",
        "[9 July 2023] Caroline: I have been reading a novel about a lighthouse keeper.",
    ]
    for text in others:
        clock.advance(days=1)  # type: ignore[attr-defined]
        remember(svc, text, valid_from=clock.now.strftime("%Y-%m-%dT%H:%M:%SZ"))  # type: ignore[attr-defined]
    result = recall(svc, "Did Melanie complete the pottery workshop?", limit=5)
    contents = [item.text for item in result.results]
    reply = next(i for i, c in enumerate(contents) if "blue bowl" in c)
    workshop = next(i for i, c in enumerate(contents) if "pottery workshop" in c)
    assert reply == workshop + 1  # right below the turn it answers
    assert "context" in result.results[reply].channels


@pytest.mark.parametrize(
    ("recorded_apart", "valid_apart"),
    [(timedelta(hours=3), timedelta(0)), (timedelta(seconds=20), timedelta(hours=3))],
    ids=["recorded-hours-apart", "valid-hours-apart"],
)
def test_turns_hours_apart_are_not_each_others_context(
    svc: MemoryService, clock: object, recorded_apart: timedelta, valid_apart: timedelta
) -> None:
    """The same two turns as above (alike enough to count), apart in transaction or in valid time."""
    valid = datetime(2023, 5, 8, 10, tzinfo=UTC)
    remember(svc, "[8 May 2023] Caroline: Did you finish the pottery workshop you signed up for last month?",
             valid_from=valid.isoformat())
    clock.now += recorded_apart  # type: ignore[attr-defined]
    remember(svc, "[8 May 2023] Melanie: Yes! I glazed a small blue bowl and I love how it came out.",
             valid_from=(valid + valid_apart).isoformat())
    result = recall(svc, "Did Melanie complete the pottery workshop?", limit=5)
    assert result.results and all("context" not in item.channels for item in result.results)
