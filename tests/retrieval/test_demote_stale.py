"""`demote_stale`: a pure reordering — stale hits lose score and move down, never up; fresh hits keep their order."""

from __future__ import annotations

from datetime import datetime

from chronomem.records import UTC, MemoryRecord
from chronomem.retrieval.pipeline import Hit, demote_stale

T = datetime(2024, 1, 1, tzinfo=UTC)


def hit(name: str, score: float) -> Hit:
    return Hit(MemoryRecord(id=name, kind="chunk", project="p", content=name, valid_at=T, created_at=T), score)


def order(hits: list[Hit]) -> list[str]:
    return [h.record.id for h in hits]


def test_nothing_stale_changes_nothing() -> None:
    hits = [hit("a", 0.9), hit("b", 0.5)]
    assert demote_stale(hits, set()) == hits


def test_a_stale_leader_drops_below_what_now_outscores_it() -> None:
    hits = [hit("a", 0.9), hit("b", 0.6), hit("c", 0.4), hit("d", 0.3)]
    out = demote_stale(hits, {"a"}, 0.5)
    assert order(out) == ["b", "a", "c", "d"]
    assert [round(h.score, 3) for h in out] == [0.6, 0.45, 0.4, 0.3]
    assert hits[0].score == 0.9, "the input hits are not modified"


def test_a_stale_hit_never_moves_up_and_fresh_order_is_kept() -> None:
    # "the newer wins" may have put a lower score first: that order survives
    hits = [hit("newer", 0.3), hit("older", 0.8), hit("stale", 0.2)]
    assert order(demote_stale(hits, {"stale"}, 0.5)) == ["newer", "older", "stale"]
    hits = [hit("newer", 0.3), hit("stale", 0.9), hit("older", 0.8)]
    assert order(demote_stale(hits, {"stale"}, 0.5)) == ["newer", "older", "stale"]
    assert order(demote_stale(hits, {"stale"}, 0.95)) == ["newer", "stale", "older"]


def test_several_stale_hits_keep_their_relative_rank() -> None:
    hits = [hit("s1", 1.0), hit("s2", 0.9), hit("f", 0.1)]
    assert order(demote_stale(hits, {"s1", "s2"}, 0.5)) == ["s1", "s2", "f"]
    assert order(demote_stale(hits, {"s1", "s2", "f"}, 0.5)) == ["s1", "s2", "f"]
