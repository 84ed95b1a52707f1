"""Pure slot resolution: supersede, reinforce, accumulate, out-of-order placement."""

from __future__ import annotations

from datetime import datetime, timedelta

from chronomem.consolidate.resolve import plan_fact
from chronomem.records import UTC, MemoryRecord, new_id

T = datetime(2024, 1, 1, tzinfo=UTC)


def fact(obj: str, valid_at: datetime, invalid_at: datetime | None = None, predicate: str = "port") -> MemoryRecord:
    return MemoryRecord(
        id=new_id(), kind="fact", project="p", content=f"p {predicate}: {obj}", subject="p", predicate=predicate,
        object=obj, valid_at=valid_at, invalid_at=invalid_at, created_at=T,
    )


def test_first_fact_is_added() -> None:
    plan = plan_fact(fact("8000", T), [])
    assert plan.action == "added" and plan.closed == [] and plan.new_fact is not None


def test_later_different_object_supersedes() -> None:
    old = fact("8000", T)
    new = fact("8080", T + timedelta(days=5))
    plan = plan_fact(new, [old])
    assert plan.action == "superseded"
    assert plan.closed == [(old, new.valid_at)]
    assert plan.new_fact is not None and plan.new_fact.supersedes == old.id and plan.new_fact.invalid_at is None


def test_equal_valid_time_newer_statement_wins() -> None:
    old = fact("8000", T)
    plan = plan_fact(fact("8080", T), [old])
    assert plan.action == "superseded" and plan.closed == [(old, T)]


def test_same_object_reinforces_without_a_new_row() -> None:
    old = fact("nox -s tests", T)
    plan = plan_fact(fact("  NOX -s tests. ", T + timedelta(days=1)), [old])
    assert plan.action == "reinforced" and plan.reinforced is old and plan.new_fact is None


def test_multi_valued_predicates_accumulate() -> None:
    old = fact("requests", T, predicate="depends_on")
    plan = plan_fact(fact("httpx", T + timedelta(days=1), predicate="depends_on"), [old], multi_valued=True)
    assert plan.action == "added" and plan.closed == []


def test_out_of_order_arrival_is_placed_in_the_past() -> None:
    current = fact("8080", T + timedelta(days=10))
    late = fact("8000", T)
    plan = plan_fact(late, [current])
    assert plan.action == "placed_in_past"
    assert plan.new_fact is not None and plan.new_fact.invalid_at == current.valid_at
    assert plan.closed == []


def test_arrival_between_two_values_splits_the_earlier_interval() -> None:
    first = fact("8000", T, invalid_at=T + timedelta(days=10))
    second = fact("9000", T + timedelta(days=10))
    middle = fact("8080", T + timedelta(days=5))
    plan = plan_fact(middle, [first, second])
    assert plan.closed == [(first, middle.valid_at)]
    assert plan.new_fact is not None
    assert plan.new_fact.invalid_at == second.valid_at and plan.new_fact.supersedes == first.id
