"""Pending-chunk extraction in the consolidator, over the real store and model, with time-travel assertions.

Every test checks that nothing is physically removed: the ids stored before consolidation
are all still stored after it, and the row count only grows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from chronomem.consolidate.runner import Consolidator
from chronomem.consolidate.watermark import LATENESS, STATE_FILE, ConsolidationState, StageMark
from chronomem.records import UTC
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import as_of, forget, history, recall, remember


def consolidate(svc: MemoryService) -> list:
    return Consolidator(svc, llm=None).run_to_completion()


def stored_ids(svc: MemoryService) -> set[str]:
    return {i for i, _ in svc.store.keys(Filter())}


def note(svc: MemoryService, clock, text: str, at: str, **kw):
    clock.advance(seconds=1)  # distinct transaction times, as real writes have
    return remember(svc, text, valid_from=at, **kw)


def facts_in(result) -> list[str | None]:
    return [i.object for i in result.results if i.kind == "fact"]


def test_a_chain_of_stated_changes_reads_back_at_every_time(svc: MemoryService, clock) -> None:
    first = note(svc, clock, "The deploy command is now `make deploy`.", "2024-01-10")
    note(svc, clock, "Standup moved to 10:30 tomorrow.", "2024-02-01")
    note(svc, clock, "The deploy command is now fly deploy.", "2024-03-01")
    note(svc, clock, "Switched the deploy command from fly deploy to kamal deploy.", "2024-05-01")
    before_ids, before_count = stored_ids(svc), svc.store.count()
    known_before = clock.now
    clock.advance(minutes=1)
    steps = consolidate(svc)
    assert steps[0].did == "extract rules" and steps[0].counts["facts"] == 3

    now = recall(svc, "how do we deploy", kinds=["fact"])
    assert facts_in(now)[0] == "kamal deploy"
    assert "make deploy" not in facts_in(now) and "fly deploy" not in facts_in(now)
    chunks_now = [i.text for i in recall(svc, "deploy command", kinds=["chunk"]).results]
    assert first.id not in [i.id for i in recall(svc, "deploy command", kinds=["chunk"]).results]
    assert not any("make deploy" in t for t in chunks_now), "a superseded statement must not surface as current"
    for at, value in (("2024-02-01", "make deploy"), ("2024-04-01", "fly deploy"), ("2024-05-20", "kamal deploy")):
        assert facts_in(as_of(svc, "deploy command", at, kinds=["fact"]))[0] == value, at
    assert as_of(svc, "deploy command", "2024-05-20", known_at=known_before.isoformat(), kinds=["fact"]).abstained

    chain = history(svc, subject="proj", predicate="deploy command")
    assert [e.object for e in chain.entries] == ["make deploy", "fly deploy", "kamal deploy"]
    assert [e.status for e in chain.entries] == ["ended", "ended", "current"]
    assert [e.invalid_at for e in chain.entries] == ["2024-03-01T00:00:00Z", "2024-05-01T00:00:00Z", None]
    assert chain.entries[0].superseded_by == chain.entries[1].id and all(e.source == "rules" for e in chain.entries)
    assert before_ids <= stored_ids(svc) and svc.store.count() > before_count


def test_an_agent_fact_outranks_an_extracted_one(svc: MemoryService, clock) -> None:
    agent = note(svc, clock, "API port settled.", "2024-01-01", facts=[{"subject": "api", "predicate": "port", "object": "8080"}])
    note(svc, clock, "The api listens on port 9090.", "2024-02-01")
    before_ids = stored_ids(svc)
    consolidate(svc)
    chain = history(svc, subject="api", predicate="port")
    by_value = {e.object: e for e in chain.entries}
    assert by_value["8080"].status == by_value["9090"].status == "current", "both stay live"
    assert by_value["9090"].source == "rules" and by_value["9090"].supersedes is None
    assert by_value["9090"].conflicts_with == [agent.facts[0].id]
    assert by_value["8080"].conflicts_with == [by_value["9090"].id]
    assert "conflicts with" in chain.text()
    # A later agent statement supersedes both.
    clock.advance(seconds=1)
    later = remember(svc, "Port is 7070 now.", valid_from="2024-03-01", facts=[{"subject": "api", "predicate": "port", "object": "7070"}])
    assert later.facts[0].action == "superseded"
    assert facts_in(recall(svc, "api port", kinds=["fact"])) == ["7070"]
    assert before_ids <= stored_ids(svc)


def test_a_retraction_retracts_the_matching_fact_and_states_the_right_value(svc: MemoryService, clock) -> None:
    bump = note(svc, clock, "Bumped numpy to 2.1.0.", "2024-01-05")
    note(svc, clock, "The numpy docs moved to a new site.", "2024-01-06")
    consolidate(svc)
    [wrong] = [f for f in svc.store.find(Filter().derived_from([bump.id]).kinds(["fact"]))]
    known_before = clock.now
    note(svc, clock, "Ignore what I said about the numpy version; it's actually 2.0.2.", "2024-02-01")
    before_ids = stored_ids(svc)
    clock.advance(seconds=1)
    consolidate(svc)
    assert facts_in(recall(svc, "numpy version", kinds=["fact"])) == ["2.0.2"]
    assert bump.id not in [i.id for i in recall(svc, "numpy bumped", kinds=["chunk"]).results]
    stored = svc.store.get(wrong.id)
    assert stored is not None and stored.expired_at is not None and stored.reason.startswith("retracted by")
    # Retracted means never true: as of January (known now) the right value holds; as known then, the old one.
    assert facts_in(as_of(svc, "numpy version", "2024-01-20", kinds=["fact"])) == ["2.0.2"]
    assert facts_in(as_of(svc, "numpy version", "2024-01-20", known_at=known_before.isoformat(), kinds=["fact"])) == ["2.1.0"]
    chain = history(svc, subject="numpy", predicate="version")
    assert [(e.object, e.status) for e in chain.entries] == [("2.1.0", "retracted"), ("2.0.2", "current")]
    assert before_ids <= stored_ids(svc)


def test_a_retraction_also_retracts_an_agent_fact_it_names(svc: MemoryService, clock) -> None:
    note(svc, clock, "Queue decision.", "2024-01-01", facts=[{"subject": "proj", "predicate": "queue", "object": "Kafka"}])
    note(svc, clock, "Disregard my note that the queue is Kafka. That was a guess.", "2024-02-01")
    note(svc, clock, "Ignore what I said about the frontend framework.", "2024-02-02")  # nothing matches: no change
    consolidate(svc)
    chain = history(svc, subject="proj", predicate="queue")
    assert [e.status for e in chain.entries] == ["retracted"]
    assert recall(svc, "which queue do we use", kinds=["fact"]).abstained


def test_a_move_names_the_slot_by_its_old_value(svc: MemoryService, clock) -> None:
    note(svc, clock, "The HTTP client is now requests.", "2024-01-01")
    consolidate(svc)
    note(svc, clock, "We moved from requests to httpx.", "2024-03-01")
    consolidate(svc)
    chain = history(svc, subject="proj", predicate="http_client")
    assert [(e.object, e.status) for e in chain.entries] == [("requests", "ended"), ("httpx", "current")]
    assert history(svc, subject="requests", predicate="replaced_by").entries[0].object == "httpx"


def test_late_arrival_goes_to_the_past_and_agent_structured_chunks_are_left_alone(svc: MemoryService, clock) -> None:
    note(svc, clock, "The docs command is now mkdocs serve.", "2024-03-01")
    note(svc, clock, "Docs: the docs command is now sphinx-build docs out.", "2024-01-01")  # told late
    note(svc, clock, "The lint command is now ruff.", "2024-01-01",
         facts=[{"subject": "proj", "predicate": "lint_command", "object": "ruff check"}])
    consolidate(svc)
    assert facts_in(recall(svc, "docs command", kinds=["fact"]))[0] == "mkdocs serve"
    assert facts_in(as_of(svc, "docs command", "2024-02-01", kinds=["fact"]))[0] == "sphinx-build docs out"
    lint = history(svc, subject="proj", predicate="lint_command")
    assert [(e.object, e.source) for e in lint.entries] == [("ruff check", "agent")], "the agent's own facts are trusted"


def test_forgotten_chunks_are_not_extracted_and_reprocessing_is_idempotent(svc: MemoryService, clock) -> None:
    gone = note(svc, clock, "The build command is now bazel build //...", "2024-01-01")
    forget(svc, gone.id, "wrong project", retract=True)
    note(svc, clock, "The cache backend is now Redis.", "2024-01-02")
    consolidate(svc)
    assert history(svc, subject="proj", predicate="cache_backend").entries[0].object == "Redis"
    assert svc.store.count(Filter().slot("proj", "build_command")) == 0
    count = svc.store.count()
    (svc.store.path / STATE_FILE).unlink()  # the marker is lost: every chunk is pending again
    consolidate(svc)
    assert svc.store.count() == count, "chunks already extracted are recognised by their facts"
    [fact] = svc.store.find(Filter().slot("proj", "cache_backend"))
    assert fact.salience == 1.0


def test_two_processes_share_one_watermark(svc: MemoryService, clock, embedder, tmp_path) -> None:
    other = MemoryService(svc.settings, embedder=embedder, clock=clock)  # a second server on the same store
    a, b = Consolidator(svc, llm=None), Consolidator(other, llm=None)
    for i in range(5):
        note(svc, clock, f"The job{i} port is {8000 + i}.", "2024-01-01")
    a.run_to_completion()
    for i in range(5, 8):
        note(other, clock, f"The job{i} port is {8000 + i}.", "2024-01-01")
    assert a.pending_chunks()["rules"] == 3 and b.pending_chunks()["rules"] == 3
    b.run_to_completion()
    a.run_to_completion()
    ports = svc.store.find(Filter().kinds(["fact"]).known(clock.now))
    assert sorted(f.object for f in ports) == [str(8000 + i) for i in range(8)]
    assert all(f.salience == 1.0 for f in ports), "each chunk was extracted once"


def test_stage_mark_window_keeps_late_and_simultaneous_commits_pending() -> None:
    t0 = datetime(2024, 6, 1, 12, tzinfo=UTC)
    mark = StageMark()
    assert not mark.is_done("a", t0)
    mark.advance([("a", t0), ("b", t0)])
    assert mark.is_done("a", t0) and mark.is_done("b", t0)
    assert not mark.is_done("c", t0), "same instant, not yet seen"
    assert not mark.is_done("late", t0 - LATENESS / 2), "a commit stamped slightly earlier is still picked up"
    assert mark.is_done("old", t0 - 2 * LATENESS)
    mark.advance([("d", t0 + 3 * LATENESS)])
    assert set(mark.recent) == {"d"}


def test_state_file_round_trips(tmp_path) -> None:
    state = ConsolidationState.load(tmp_path)
    mark = StageMark()
    mark.advance([("x", datetime(2024, 1, 1, tzinfo=UTC))])
    state.set_mark("rules", mark)
    state.save()
    again = ConsolidationState.load(tmp_path)
    assert again.seq == 1 and again.mark("rules").recent == mark.recent and again.mark("rules").cutoff == mark.cutoff
    (tmp_path / STATE_FILE).write_text("{not json")
    assert ConsolidationState.load(tmp_path).mark("rules").cutoff is None
    assert not list(tmp_path.glob(".state-*")), "no temporary files left behind"
    assert timedelta(seconds=1) < LATENESS
