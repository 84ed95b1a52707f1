"""eval/rank_ab.py: another checkout's ranking loads beside ours and the comparison sees any difference."""

from __future__ import annotations

from pathlib import Path

from chronomem.retrieval.rank import QueryInfo, RankConfig, rank
from eval.rank_ab import _load_rank, _outcome
from tests.retrieval.test_rank import _hosting_pool

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkouts_rank_loads_as_its_own_module_and_ranks_as_ours() -> None:
    other = _load_rank(ROOT)
    assert other.rank is not rank and other.__name__ == "other_rank"
    old, moved, siblings = _hosting_pool()
    query = QueryInfo("Which service runs translations?")
    ours = _outcome(rank(query, [old, moved, *siblings]))
    assert _outcome(other.rank(query, [old, moved, *siblings])) == ours
    # the comparison tells a different ranking apart: without the later word the old note leads
    assert _outcome(rank(query, [old, moved, *siblings], RankConfig(succession=False))) != ours
