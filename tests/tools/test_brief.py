"""The session brief over a real store of 5,000 memories: within budget, current values only, ids to expand."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from chronomem.config import Settings
from chronomem.embed import FastEmbedder
from chronomem.errors import InvalidInput, ModelUnavailable
from chronomem.records import UTC, MemoryRecord, fact_sentence, new_id
from chronomem.retrieval.fusion import estimate_tokens
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import forget, history, recall, remember
from chronomem.tools.brief import brief

from tests.conftest import model_dir

START = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
TOTAL = 5_000

#: Slots told through `remember` with facts, so supersession is real: (predicate, values oldest first).
CHAINS = [
    ("test_command", ["pytest", "tox -e py311", "nox -s tests"]),
    ("api_port", ["8000", "8080"]),
    ("package_manager", ["pip-tools", "poetry", "uv"]),
    ("ci_provider", ["travis-ci", "github-actions"]),
]
#: Ended without a replacement.
DROPPED = ("cache_backend", "memcached-cluster")


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def sections(text: str) -> dict[str, list[str]]:
    """The brief's `## ` sections → their lines (the part before the first heading, and the footer, under "")."""
    out: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        if line.startswith("_") and line.endswith("_"):
            out[""].append(line)
        elif line.startswith("## "):
            current = line[3:]
            out[current] = []
        elif line.strip():
            out[current].append(line)
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedder) -> tuple[MemoryService, Clock]:
    """5,000 memories in project `proj` (and a little in `other` and `global`), with real fact chains."""
    clock = Clock(START - timedelta(days=400))
    store = Path(tmp_path_factory.mktemp("brief")) / "store"
    settings = Settings(store_path=store, model_path=model_dir(), project="proj")
    svc = MemoryService(settings, embedder=embedder, clock=clock)

    # The fact chains, told by the agent over the year, one value after another.
    for predicate, values in CHAINS:
        for i, value in enumerate(values):
            clock.now = START - timedelta(days=300 - 100 * i - len(predicate))
            remember(svc, f"The {predicate.replace('_', ' ')} is now {value}.",
                     facts=[{"subject": "proj", "predicate": predicate, "object": value}])
    told = remember(svc, "We cache with the memcached cluster.",
                    facts=[{"subject": "proj", "predicate": DROPPED[0], "object": DROPPED[1]}])
    clock.now = START - timedelta(days=3)
    forget(svc, told.facts[0].id, "dropped the cache")
    # The current values were stated again recently: reinforced, so they are the most important facts.
    clock.now = START - timedelta(days=1)
    for predicate, values in CHAINS:
        remember(svc, f"Reminder: {predicate.replace('_', ' ')} is {values[-1]}.",
                 facts=[{"subject": "proj", "predicate": predicate, "object": values[-1]}])
    remember(svc, "I prefer short commit messages.", project="global",
             facts=[{"subject": "user", "predicate": "commit_style", "object": "short messages"}])

    # The bulk: notes and extracted facts written straight to the table, with real embeddings of 200 texts.
    texts = [f"Note {i}: the build of module m{i} needs flag --opt-{i} on the integration runner." for i in range(200)]
    vectors = embedder.embed(texts)
    rows = []
    remaining = TOTAL - svc.store.count()
    for i in range(remaining):
        created = START - timedelta(days=30 + (i % 300), minutes=i)
        project = "other" if i % 10 == 0 else "proj"
        if i % 3 == 0:  # an extracted fact on its own slot
            obj = f"team-{i}"
            rows.append(MemoryRecord(
                id=new_id(created), kind="fact", project=project, content=fact_sentence(f"module m{i}", "owner", obj),
                subject=f"module m{i}", predicate="owner", object=obj, valid_at=created, created_at=created,
                vector=vectors[i % 200], embed_model=embedder.name, source="rules",
            ))
        else:
            rows.append(MemoryRecord(
                id=new_id(created), kind="chunk", project=project, content=texts[i % 200] + f" (#{i})",
                valid_at=created, created_at=created, vector=vectors[i % 200], embed_model=embedder.name,
            ))
    svc.store.add(rows)
    clock.now = START
    assert svc.store.count() == TOTAL
    return svc, clock


@pytest.mark.slow
@pytest.mark.parametrize("budget", [50, 200, 700, 1500, 4000])
def test_brief_stays_within_budget_on_5000_memories(big, budget: int) -> None:
    svc, _ = big
    result = brief(svc, budget_tokens=budget)
    text = result.text()
    assert estimate_tokens(text) <= budget and result.tokens == estimate_tokens(text)
    assert result.omitted > 0 and f"{result.omitted} more left out to fit {budget} tokens" in text
    assert text.startswith("# Project memory: proj\n")
    # Every line below a heading is a whole line carrying the id to expand.
    for name, lines in sections(text).items():
        if name:
            assert lines and all(re.search(r"\[[0-9A-HJKMNP-TV-Z]{26}[;\]]", line) for line in lines), (name, lines)


def test_brief_of_default_budget_has_current_values_and_labels_replaced_ones(big) -> None:
    svc, _ = big
    result = brief(svc)
    text = result.text()
    assert result.budget_tokens == 1500 and estimate_tokens(text) <= 1500
    parts = sections(text)
    current_lines = parts["Current facts"]
    # The reinforced agent facts rank above the thousands of extracted ones, current values only.
    top = [f.predicate for f in result.facts[: len(CHAINS)]]
    assert sorted(top) == sorted(p for p, _ in CHAINS)
    for predicate, values in CHAINS:
        assert any(line.startswith(f"- {predicate}: `{values[-1]}` (since ") for line in current_lines), predicate
        for old in values[:-1]:
            assert all(f"`{old}`" not in line for line in current_lines), (predicate, old)
            # An old value appears only in Recent changes (the slot's latest change), and only as the value replaced.
            holders = [(name, line) for name, lines in parts.items() for line in lines if f"`{old}`" in line]
            assert len(holders) == (1 if old == values[-2] else 0), (old, holders)
            assert all(name == "Recent changes" for name, _ in holders), (old, holders)
            assert all(f"replaced `{old}` on " in line for _, line in holders), holders
    assert all("memcached" not in line for line in current_lines)

    # Recent changes: the latest change of each slot, newest first, with what replaced what.
    changes = {c.predicate: c for c in result.changes}
    for predicate, values in CHAINS:
        change = changes[predicate]
        assert (change.old_object, change.new_object, change.new_is_current) == (values[-2], values[-1], True)
        line = next(line for line in parts["Recent changes"] if line.startswith(f"- {predicate}: "))
        assert line == (
            f"- {predicate}: now `{values[-1]}`, replaced `{values[-2]}` on {change.at[:10]} "
            f"[{change.new_id}; replaced {change.old_id}]"
        )
    dropped = changes[DROPPED[0]]
    assert dropped.new_id is None and dropped.reason == "dropped the cache"
    assert result.changes[0] is dropped, "the newest change comes first"
    assert [c.at for c in result.changes] == sorted((c.at for c in result.changes), reverse=True)

    # The ids expand: a change's ids lead to the slot's history; a current fact's id is what recall returns.
    chain = history(svc, result.changes[1].new_id)
    assert [e.object for e in chain.entries if e.status == "current"] == [result.changes[1].new_object]
    found = recall(svc, "what is the test command", kinds=["fact"])
    shown = next(f for f in result.facts if f.predicate == "test_command")
    assert found.results[0].id == shown.id

    assert [g.predicate for g in result.global_preferences] == ["commit_style"]
    assert "## Global preferences\n- user · commit_style: `short messages` [" in text
    assert result.notes and all(n.id in text for n in result.notes)


def test_brief_of_an_empty_project_says_so(svc: MemoryService) -> None:
    result = brief(svc, project="nothing-here")
    assert not result.stored and not result.facts
    assert result.text().splitlines() == [
        "# Project memory: nothing-here",
        "No memories in project nothing-here yet: `remember` commands, decisions and conventions as you learn them.",
    ]


def test_brief_of_an_empty_project_says_so_above_the_global_preferences(svc: MemoryService) -> None:
    """The global scope's lines do not hide that the project itself holds nothing."""
    remember(svc, "I like short commit messages.", project="global",
             facts=[{"subject": "user", "predicate": "commit_style", "object": "short messages"}])
    result = brief(svc, project="nothing-here")
    assert not result.stored and [g.object for g in result.global_preferences] == ["short messages"]
    lines = result.text().splitlines()
    assert lines[1] == ("No memories in project nothing-here yet: `remember` commands, decisions and conventions "
                        "as you learn them.")
    assert "## Global preferences" in lines and lines[-1].startswith("- user · commit_style: `short messages` [")
    assert not brief(svc, project="global").text().splitlines()[1].startswith("No memories")


def test_brief_needs_no_embedding_model(tmp_path: Path, svc: MemoryService) -> None:
    """The brief reads with filters only: it answers while the model is missing, where recall cannot."""
    remember(svc, "Lint with ruff.", facts=[{"subject": "proj", "predicate": "lint_command", "object": "ruff check ."}])
    settings = Settings(store_path=svc.settings.store_path, model_path=tmp_path / "no-model", project="proj")
    blind = MemoryService(settings, embedder=FastEmbedder(model_path=tmp_path / "no-model", wait_seconds=1))
    result = brief(blind)
    assert [f.object for f in result.facts] == ["ruff check ."]
    with pytest.raises(ModelUnavailable):
        recall(blind, "lint")


@pytest.mark.parametrize("budget", [0, 49, 100_001, -5, "many", 1.5, True])
def test_brief_refuses_a_bad_budget(svc: MemoryService, budget: object) -> None:
    with pytest.raises(InvalidInput, match="budget_tokens"):
        brief(svc, budget_tokens=budget)


def test_long_values_are_cut_and_budget_holds(svc: MemoryService) -> None:
    long_value = "x" * 3000
    remember(svc, "A very long value.", facts=[{"subject": "proj", "predicate": "blob", "object": long_value}])
    result = brief(svc, budget_tokens=120)
    assert estimate_tokens(result.text()) <= 120
    assert len(result.facts) == 1 and result.facts[0].object.endswith("…") and len(result.facts[0].object) == 160


def test_default_budget_comes_from_the_environment() -> None:
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_BRIEF_TOKENS": "800"}).brief_tokens == 800
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_BRIEF_TOKENS": "10"}).brief_tokens == 50
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_BRIEF_TOKENS": "lots"}).brief_tokens == 1500
    assert Settings.from_env(store="/tmp/x", environ={}).brief_tokens == 1500


def test_live_filter_of_the_brief_matches_the_store(big) -> None:
    """Every current fact the brief lists is live now; none of them is a superseded row."""
    svc, clock = big
    result = brief(svc, budget_tokens=4000)
    shown = Filter().live(clock.now, clock.now).kinds(["fact"]).ids([f.id for f in result.facts])
    live = {r.id for r in svc.store.find(shown)}
    assert live == {f.id for f in result.facts}
