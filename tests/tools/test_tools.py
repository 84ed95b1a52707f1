"""The five tools over a real store and the real model: semantics of DESIGN.md, and bad input."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chronomem.errors import InvalidInput, NotFound
from chronomem.service import MemoryService
from chronomem.tools import as_of, forget, history, recall, remember

TESTS_Q = "how do we run the tests?"


def tell_test_command_story(svc: MemoryService, clock) -> tuple:
    first = remember(
        svc,
        "We run the tests with plain pytest.",
        valid_from="2024-01-10",
        facts=[{"subject": "proj", "predicate": "test command", "object": "pytest"}],
    )
    clock.advance(days=1)
    second = remember(
        svc,
        "Tests now run with nox -s tests; we moved off bare pytest.",
        valid_from="2024-03-01",
        facts=[{"subject": "Proj", "predicate": "test_command", "object": "nox -s tests"}],
    )
    return first, second


def ids(result) -> list[str]:
    return [item.id for item in result.results]


def texts(result) -> list[str]:
    return [item.text for item in result.results]


def test_remember_stores_verbatim_and_returns_ids(svc: MemoryService) -> None:
    content = "  The API listens on port 8080 — see `server/main.go`.\nSecond line.  "
    result = remember(svc, content, tags=["infra"], paths=["server/main.go"])
    stored = svc.store.get(result.id)
    assert stored is not None and stored.content == content and stored.kind == "chunk"
    assert stored.project == "proj" and stored.tags == ["infra"] and stored.paths == ["server/main.go"]
    assert result.facts == []


def test_knowledge_update_story(svc: MemoryService, clock) -> None:
    first, second = tell_test_command_story(svc, clock)
    assert first.facts[0].action == "added"
    assert second.facts[0].action == "superseded" and second.facts[0].supersedes == first.facts[0].id
    rows_before = svc.store.count()

    now = recall(svc, TESTS_Q)
    assert not now.abstained
    assert now.results[0].kind == "fact" and now.results[0].object == "nox -s tests"
    assert all("plain pytest" not in t for t in texts(now)), "the superseded chunk must not surface as current"
    assert first.facts[0].id not in ids(now) and first.id not in ids(now)

    past = as_of(svc, TESTS_Q, "2024-02-01")
    assert past.results[0].object == "pytest"
    assert past.results[0].invalid_at == "2024-03-01T00:00:00Z"
    assert "nox -s tests" not in " ".join(t for t in texts(past))

    chain = history(svc, subject="proj", predicate="test command")
    assert [e.object for e in chain.entries] == ["pytest", "nox -s tests"]
    assert [e.status for e in chain.entries] == ["ended", "current"]
    assert chain.entries[0].invalid_at == chain.entries[1].valid_at == "2024-03-01T00:00:00Z"
    assert chain.entries[0].superseded_by == second.facts[0].id
    assert history(svc, first.facts[0].id).entries == chain.entries
    assert svc.store.count() == rows_before, "reads never write"


def test_as_of_known_at_reads_what_we_believed_then(svc: MemoryService, clock) -> None:
    before_update = clock.now
    tell_test_command_story(svc, clock)
    clock.advance(hours=1)
    # At a valid time after the change, but as known before the change was recorded: still pytest.
    believed = as_of(svc, TESTS_Q, "2024-04-01", known_at=before_update.isoformat())
    assert believed.results[0].object == "pytest" and believed.results[0].invalid_at is None
    known_now = as_of(svc, TESTS_Q, "2024-04-01")
    assert known_now.results[0].object == "nox -s tests"


def test_nothing_is_physically_removed(svc: MemoryService, clock) -> None:
    counts = [svc.store.count()]
    first, second = tell_test_command_story(svc, clock)
    counts.append(svc.store.count())
    forget(svc, second.id, "we went back to pytest")
    counts.append(svc.store.count())
    assert counts == sorted(counts) and counts[-1] > counts[1]
    for memory_id in (first.id, second.id, first.facts[0].id, second.facts[0].id):
        assert svc.store.get(memory_id) is not None


def test_same_fact_again_reinforces(svc: MemoryService) -> None:
    a = remember(svc, "Owner of billing is Dana.", facts=[{"subject": "billing", "predicate": "owner", "object": "Dana"}])
    before = svc.store.count()
    b = remember(svc, "Billing is owned by Dana.", facts=[{"subject": "billing", "predicate": "owner", "object": "dana"}])
    assert b.facts[0].action == "reinforced" and b.facts[0].id == a.facts[0].id
    assert svc.store.count() == before + 1  # only the new chunk
    fact = svc.store.get(a.facts[0].id)
    assert fact is not None and fact.salience > 1.0 and set(fact.source_ids) == {a.id, b.id}


def test_out_of_order_fact_goes_to_the_past(svc: MemoryService) -> None:
    remember(svc, "Port is 8080.", valid_from="2024-05-01", facts=[{"subject": "api", "predicate": "port", "object": "8080"}])
    late = remember(
        svc, "Back in March the port was 8000.", valid_from="2024-03-01",
        facts=[{"subject": "api", "predicate": "port", "object": "8000"}],
    )
    assert late.facts[0].action == "placed_in_past"
    assert recall(svc, "api port", kinds=["fact"]).results[0].object == "8080"
    assert as_of(svc, "api port", "2024-04-01", kinds=["fact"]).results[0].object == "8000"


def test_forget_invalidates_and_keeps_the_past(svc: MemoryService, clock) -> None:
    note = remember(svc, "We cache sessions in Redis.", valid_from="2024-01-01",
                    facts=[{"subject": "proj", "predicate": "session_store", "object": "Redis"}])
    clock.advance(days=1)
    result = forget(svc, note.id, "we dropped Redis")
    assert result.action == "invalidated" and result.also == [note.facts[0].id]
    assert recall(svc, "where are sessions cached").abstained
    past = as_of(svc, "where are sessions cached", (clock.now - timedelta(days=2)).isoformat())
    # The chunk is collapsed into the fact stated in it; the fact names it as its source.
    assert any(note.id in (i.revision_of, i.id, *i.source_ids) for i in past.results)
    chain = history(svc, note.id)
    assert [e.status for e in chain.entries] == ["revised", "ended"]
    assert chain.entries[-1].reason == "we dropped Redis"
    again = forget(svc, note.id, "twice")
    assert again.action == "unchanged"


def test_retract_means_never_true(svc: MemoryService, clock) -> None:
    note = remember(svc, "The staging database is Postgres 12.", valid_from="2024-01-01")
    known_before = clock.now
    clock.advance(days=1)
    assert forget(svc, note.id, "typo: it was never Postgres 12", retract=True).action == "retracted"
    assert recall(svc, "staging database version").abstained
    assert as_of(svc, "staging database version", "2024-02-01").abstained
    then = as_of(svc, "staging database version", "2024-02-01", known_at=known_before.isoformat())
    assert ids(then) == [note.id]


def test_projects_are_isolated_unless_asked(svc: MemoryService) -> None:
    remember(svc, "Deploys go through ArgoCD.", project="alpha")
    remember(svc, "Deploys go through Spinnaker.", project="beta")
    remember(svc, "I prefer deploys on Tuesdays.", project="global")
    alpha = recall(svc, "how do deploys work", project="alpha")
    assert {i.project for i in alpha.results} == {"alpha"}
    both = recall(svc, "how do deploys work", project="alpha", scope="both")
    assert {i.project for i in both.results} == {"alpha", "global"}
    everything = recall(svc, "how do deploys work", scope="all")
    assert {i.project for i in everything.results} == {"alpha", "beta", "global"}


def test_recall_abstains_when_nothing_relevant(svc: MemoryService) -> None:
    remember(svc, "The frontend is built with Vite and React.")
    result = recall(svc, "What is the airspeed velocity of an unladen swallow?")
    assert result.abstained and result.results == []
    assert "Nothing relevant" in result.text()
    empty = recall(svc, "anything at all", project="empty-project")
    assert empty.abstained


def test_an_unstored_identifier_abstains_an_unstored_plain_word_beside_a_stored_name_does_not(svc: MemoryService) -> None:
    remember(svc, "Melanie: I went to a classical concert with my kids, it was lovely.")
    remember(svc, "The catalog service listens on 8080.")
    unknown_service = recall(svc, "Which port does catalog-svc listen on?")
    assert unknown_service.abstained and "catalog-svc" in unknown_service.text()
    assert recall(svc, "Which port does Kafka use?").abstained  # the one thing it names is not stored
    vivaldi = recall(svc, "Would Melanie enjoy a concert of Vivaldi?")
    assert not vivaldi.abstained and "classical concert" in vivaldi.results[0].text
    kid_friendly = recall(svc, "Was there a kid-friendly concert?")  # an English compound names nothing
    assert not kid_friendly.abstained and "classical concert" in kid_friendly.results[0].text
    sign_off = recall(svc, "Whose sign-off do I need for the catalog service?")  # a phrasal noun, not a name
    assert not sign_off.abstained and "catalog service" in sign_off.results[0].text


def test_a_dated_question_marks_what_began_that_month(svc: MemoryService) -> None:
    remember(svc, "Release 4.1 shipped the export button.", valid_from="2024-02-10")
    remember(svc, "Release 4.2 shipped bulk import.", valid_from="2024-03-12")
    march = recall(svc, "What shipped in March 2024?").results
    assert march[0].text == "Release 4.2 shipped bulk import." and "dated" in march[0].channels
    assert all("dated" not in (i.channels or []) for i in march[1:])
    assert all("dated" not in (i.channels or []) for i in recall(svc, "What shipped?").results)


def test_a_time_before_anything_was_stored_dates_the_event_not_the_record(svc: MemoryService) -> None:
    remember(svc, "Caroline: I moved here from Sweden, my home country.", valid_from="2023-06-09")
    remember(svc, "Melanie: I painted a sunset last weekend.", valid_from="2023-06-10")
    remember(svc, "The office moved to the second floor.", valid_from="2023-01-05")
    moved = recall(svc, "Where did Caroline move from 4 years ago?")  # 2020: the store begins in 2023
    assert not moved.abstained and "Sweden" in moved.results[0].text
    assert "Nothing was stored by 2020-06-" in moved.message and moved.at.startswith("2024-06-01")
    back_then = recall(svc, "What did Melanie paint in May 2023?")  # the slice then holds a note: no fallback
    assert back_then.abstained and "Nothing was stored by" not in back_then.message


def test_recall_results_carry_provenance_and_channels(svc: MemoryService) -> None:
    r = remember(svc, "Lint with ruff check . before pushing.", facts=[{"subject": "proj", "predicate": "lint_command", "object": "ruff check ."}])
    item = recall(svc, "lint command ruff").results[0]
    assert item.id == r.facts[0].id and item.source_ids == [r.id] and item.source == "agent"
    assert item.channels and set(item.channels) <= {"dense", "lexical", "slot", "slot meaning"} and item.score and item.score > 0
    assert "slot" in item.channels  # the query names the fact's slot (lint command)
    assert item.valid_at and item.created_at


def test_budget_tokens_is_never_exceeded(svc: MemoryService) -> None:
    for i in range(6):
        remember(svc, f"Deployment note {i}: " + "the rollout uses blue green switching and health checks. " * 8)
    result = recall(svc, "deployment rollout", budget_tokens=250)
    assert result.tokens <= 250 and result.results
    assert sum(len(i.text) for i in result.results) / 4 <= 250 + len(result.results)
    assert result.truncated


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "content is empty"),
        ({"content": None}, "content is required"),
        ({"content": 42}, "must be a string"),
        ({"content": "x" * 40_000}, "limit is 32,000"),
        ({"content": "bell\x07"}, "control character"),
        ({"content": "ok", "valid_from": "the day after never"}, "cannot read valid_from"),
        ({"content": "ok", "facts": "not a list"}, "facts must be a list"),
        ({"content": "ok", "facts": [{"subject": "a", "predicate": "b", "object": "c"}] * 51}, "limit is 50"),
        ({"content": "ok", "project": "bad\nname"}, "control characters"),
        ({"content": "ok", "tags": [1]}, "must be a string"),
    ],
)
def test_remember_bad_input_writes_nothing(svc: MemoryService, kwargs: dict, message: str) -> None:
    before = svc.store.count()
    content = kwargs.pop("content")
    with pytest.raises(InvalidInput) as err:
        remember(svc, content, **kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert svc.store.count() == before


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: recall(s, ""), InvalidInput, "query is empty"),
        (lambda s: recall(s, "x", limit=0), InvalidInput, "limit must be from 1"),
        (lambda s: recall(s, "x", limit="ten"), InvalidInput, "whole number"),
        (lambda s: recall(s, "x", scope="galaxy"), InvalidInput, "scope must be"),
        (lambda s: recall(s, "x", kinds=["note"]), InvalidInput, "kinds"),
        (lambda s: as_of(s, "x", "not a date"), InvalidInput, "cannot read at"),
        (lambda s: as_of(s, "x", ""), InvalidInput, "at is required"),
        (lambda s: as_of(s, "x", "2024-01-01", known_at="soonish maybe"), InvalidInput, "known_at"),
        (lambda s: forget(s, "01ARZ3NDEKTSV4RRFFQ69G5FAV"), NotFound, "no memory has id"),
        (lambda s: forget(s, "' OR 1=1 --"), InvalidInput, "not a memory id"),
        (lambda s: forget(s, None), InvalidInput, "id is required"),
        (lambda s: history(s, "01ARZ3NDEKTSV4RRFFQ69G5FAV"), NotFound, "no memory has id"),
        (lambda s: history(s), InvalidInput, "subject and predicate"),
        (lambda s: history(s, subject="nobody", predicate="nothing"), NotFound, "no facts"),
    ],
)
def test_read_and_forget_bad_input(svc: MemoryService, call, error, message: str) -> None:
    with pytest.raises(error) as err:
        call(svc)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_directory_as_project_gets_its_repository_key(svc: MemoryService, tmp_path) -> None:
    import subprocess

    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    key = svc.project(str(repo))
    assert key.startswith("repo-") and svc.project(str(repo / "sub")) == key
    assert svc.project("plain-name") == "plain-name"


def test_chunks_follow_their_facts_when_values_arrive_out_of_order(svc: MemoryService) -> None:
    notes = {}
    for month, port in (("05", "8003"), ("01", "8001"), ("03", "8002")):
        notes[port] = remember(
            svc, f"The gateway port is {port}.", valid_from=f"2024-{month}-01",
            facts=[{"subject": "gateway", "predicate": "port", "object": port}],
        )
    for at, port in (("2024-02-01", "8001"), ("2024-04-01", "8002"), (None, "8003")):
        result = recall(svc, "gateway port", kinds=["chunk"]) if at is None else as_of(svc, "gateway port", at, kinds=["chunk"])
        assert [i.text for i in result.results] == [f"The gateway port is {port}."], at
    chain = history(svc, subject="gateway", predicate="port")
    assert [e.object for e in chain.entries] == ["8001", "8002", "8003"]
    assert [e.invalid_at for e in chain.entries] == ["2024-03-01T00:00:00Z", "2024-05-01T00:00:00Z", None]


def test_a_history_question_brings_back_superseded_values_oldest_first(svc: MemoryService, clock) -> None:
    first, second = tell_test_command_story(svc, clock)
    retracted = remember(svc, "The tests once ran under tox.", valid_from="2023-12-01")
    forget(svc, retracted.id, "never true", retract=True)

    changed = history(svc, query="how has the test command changed over time?")
    values = [entry.object for entry in changed.entries if entry.object is not None]
    assert values == ["pytest", "nox -s tests"], "every value, oldest first, the ended one included"
    assert retracted.id not in {e.id for e in changed.entries}, "a retraction was never true: no history shows it"
    asked_of_recall = recall(svc, "how has the test command changed over time?")
    assert first.facts[0].id not in ids(asked_of_recall), "recall reads no history off the words: it asks what holds now"

    now = recall(svc, "what is the test command?")
    assert first.facts[0].id not in ids(now), "a plain question still sees only the live slice"
