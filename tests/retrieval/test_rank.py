"""Pure ranking: abstention on unknown names, entity matches, foreign projects, newer wins, collapse."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search.candidates import Candidate
from chronomem.retrieval.rank import (
    _CommonValues,
    QueryInfo,
    RankConfig,
    gate_names,
    never_mentioned,
    rank,
    successor_of,
    tells_nothing,
    term_set,
    term_weights,
    weighted_coverage,
)
from chronomem.retrieval.values import value_kinds
from chronomem.search.terms import terms

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def cand(text: str, *, days: int = 0, dense: float = 0.7, d_rank: int | None = 1, l_rank: int | None = 1,
         vector: list[float] | None = None, kind: str = "chunk", sources: list[str] | None = None) -> Candidate:
    record = MemoryRecord(
        id=new_id(), kind=kind, project="p", content=text, valid_at=T0 + timedelta(days=days), created_at=T0,
        vector=vector or [1.0, 0.0], source_ids=sources or [],
    )
    return Candidate(record, dense, lexical=1.0 if l_rank else None, dense_rank=d_rank, lexical_rank=l_rank)


def texts(ranking) -> list[str]:
    return [r.candidate.record.content for r in ranking.items]


def test_empty_pool_and_unknown_names_abstain() -> None:
    assert rank(QueryInfo("anything"), []).abstained
    pool = [cand("The API listens on 8080.")]
    outcome = rank(QueryInfo("Which port does billing-api use?", missing_entities=("billing-api",)), pool)
    assert outcome.abstained and "billing-api" in outcome.reason


def test_an_absent_identifier_always_counts_an_absent_plain_word_only_alone() -> None:
    names = {"melanie": False, "vivaldi": False, "billing-api": True}
    assert never_mentioned(names, ["billing-api", "vivaldi"]) == ["billing-api"]
    assert never_mentioned(names, ["vivaldi"]) == []  # Melanie is stored: a memory may say "classical music"
    assert never_mentioned(names, ["melanie", "vivaldi", "billing-api"]) == ["melanie", "vivaldi", "billing-api"]
    assert never_mentioned({"kafka": False}, ["kafka"]) == ["kafka"]  # the only thing it names is not stored


def test_what_began_in_the_named_period_gains() -> None:
    earlier = cand("We baked a lemon cake for the sale.", days=40, dense=0.7, vector=[1.0, 0.0])
    then = cand("We baked a chocolate tart for the party!", days=75, dense=0.6, vector=[0.0, 1.0])
    unrelated = cand("The car needs new tyres.", days=70, dense=0.1, d_rank=3, l_rank=None, vector=[0.6, 0.8])
    pool = [earlier, then, unrelated]
    march = (T0 + timedelta(days=60), T0 + timedelta(days=90))
    asked = "What did we bake?"
    assert texts(rank(QueryInfo(asked, intent="past"), pool))[0] == earlier.record.content
    dated = rank(QueryInfo(asked, intent="past", period=march), pool)
    assert texts(dated)[0] == then.record.content and "dated" in dated.items[0].channels
    off = rank(QueryInfo(asked, intent="past", period=march), pool, RankConfig(period_weight=0.0))
    assert texts(off)[0] == earlier.record.content


def test_weak_dense_and_no_lexical_abstains() -> None:
    pool = [cand("Lunch was nice.", dense=0.1, l_rank=None)]
    assert rank(QueryInfo("deploy procedure"), pool).abstained
    assert not rank(QueryInfo("deploy procedure"), [cand("Deploys use ArgoCD.", dense=0.6, l_rank=None)]).abstained


def test_exact_identifier_beats_a_look_alike() -> None:
    look_alike = cand("SES-6439 seen in somebody else's logs.", d_rank=1, l_rank=1, vector=[0.0, 1.0])
    exact = cand("SES-6436 is fixed in PR #1885.", d_rank=2, l_rank=2, vector=[1.0, 0.0])
    filler = [cand(f"filler {i}", d_rank=3 + i, l_rank=None, vector=[0.6, 0.8]) for i in range(10)]
    outcome = rank(QueryInfo("What is the status of SES-6436?"), [look_alike, exact, *filler])
    assert texts(outcome)[0] == "SES-6436 is fixed in PR #1885."


def test_memories_about_another_project_are_demoted() -> None:
    foreign = cand("In Pinecask, the lint command is biome check.", d_rank=1, l_rank=1, vector=[0.0, 1.0])
    ours = cand("Lint with ruff check.", d_rank=2, l_rank=2)
    info = QueryInfo("What is the lint command?", project_names=("brambleway",), other_project_names=("pinecask",))
    outcome = rank(info, [foreign, ours])
    assert texts(outcome)[0] == "Lint with ruff check." and outcome.items[1].foreign


def test_another_projects_name_inside_code_is_a_word_of_a_command_not_that_project() -> None:
    # a store with a project named after a tool this project runs: `uv run ...` is not about the `uv` project
    command = cand("- Format: `uv run ruff format .`", d_rank=1, l_rank=1, vector=[0.0, 1.0])
    prose = cand("In uv, formatting is done with `cargo fmt`.", d_rank=2, l_rank=2)
    info = QueryInfo("What command formats the code?", project_names=("mcppy",), other_project_names=("uv",))
    outcome = rank(info, [command, prose])
    assert texts(outcome)[0] == command.record.content
    assert not outcome.items[0].foreign and outcome.items[1].foreign


def test_newer_wins_among_memories_about_the_same_thing() -> None:
    old = cand("Port for audit-svc is 6010.", days=0, d_rank=1, l_rank=1)
    new = cand("audit-svc listens on port 7494.", days=30, d_rank=2, l_rank=2)
    other = cand("Port for billing-worker is 5180.", days=60, d_rank=3, l_rank=3, vector=[0.0, 1.0])
    current = rank(QueryInfo("Which port does audit-svc listen on?"), [old, new, other])
    assert texts(current)[:2] == ["audit-svc listens on port 7494.", "Port for audit-svc is 6010."]
    history = rank(QueryInfo("How has the port of audit-svc changed?", intent="history"), [new, old, other])
    assert texts(history)[:2] == ["Port for audit-svc is 6010.", "audit-svc listens on port 7494."]
    event = rank(QueryInfo("When did audit-svc use port 6010?", intent="event"), [old, new, other])
    assert texts(event)[0] == "Port for audit-svc is 6010."


def test_a_history_orders_what_is_said_of_the_thing_asked_not_its_siblings() -> None:
    sibling = cand("audit-svc hosts the audit module.", days=-10, dense=0.75)
    old = cand("Port for audit-svc is 6010.", days=0, dense=0.7)
    new = cand("audit-svc listens on port 7494.", days=30, dense=0.8)
    history = rank(QueryInfo("How has the port of audit-svc changed?", intent="history"), [new, sibling, old])
    assert texts(history) == ["Port for audit-svc is 6010.", "audit-svc listens on port 7494.", sibling.record.content]


@pytest.mark.parametrize(
    ("asked", "answer", "sibling"),
    [
        ("Whose sign-off do I need to touch webhooks?", "Owner of webhooks: Growth.", "webhooks code: `libs/webhooks/`."),
        ("Which folder holds webhooks?", "webhooks code: `libs/webhooks/`.", "Owner of webhooks: Growth."),
        ("What number goes after the colon when I curl billing-worker?",
         "billing-worker binds 5180 locally and in containers.", "billing is served by billing-worker."),
    ],
)
def test_a_question_favours_the_memory_holding_the_kind_of_answer_it_asks_for(
    asked: str, answer: str, sibling: str
) -> None:
    pool = [cand(sibling, dense=0.8), cand(answer, dense=0.7), cand("Lunch was nice.", dense=0.1, l_rank=None,
                                                                     vector=[0.0, 1.0])]
    ranked = rank(QueryInfo(asked), pool)
    assert texts(ranked)[0] == answer and "answer type" in ranked.items[0].channels
    assert texts(rank(QueryInfo(asked), pool, RankConfig(answer_type_weight=0.0)))[0] == sibling


def test_a_chunk_collapses_into_its_fact_and_duplicates_into_one() -> None:
    chunk = cand("Tests run with nox -s tests.", d_rank=2, l_rank=2)
    fact = cand("p test command: nox -s tests", kind="fact", sources=[chunk.record.id], d_rank=1, l_rank=1)
    twin = cand("Tests run with  nox -s tests.", d_rank=3, l_rank=3)
    outcome = rank(QueryInfo("how do we run the tests"), [chunk, fact, twin])
    assert texts(outcome) == ["p test command: nox -s tests"]


def test_a_fact_takes_the_place_of_its_chunk_when_the_chunk_ranks_higher() -> None:
    chunk = cand("Tests now run with `nox -s tests`.", d_rank=1, l_rank=1)
    other = cand("Lint with ruff before the tests.", d_rank=2, l_rank=2)
    fact = cand("p test command: nox -s tests", kind="fact", sources=[chunk.record.id], d_rank=3, l_rank=3)
    outcome = rank(QueryInfo("how do we run the tests"), [chunk, other, fact])
    assert texts(outcome) == ["p test command: nox -s tests", "Lint with ruff before the tests."]


def test_a_reinforced_memory_leads_an_equal_one_and_an_unused_one_fades() -> None:
    from datetime import timedelta

    from chronomem.records import utcnow

    now = utcnow()
    recalled = cand("Deploys go through the release pipeline.", d_rank=1, l_rank=1)
    forgotten = cand("Deploys go through the release pipeline!", d_rank=1, l_rank=1)
    recalled.record.salience, forgotten.record.salience = 3.0, 1.0
    forgotten.record.created_at = now - timedelta(days=365)
    recalled.record.created_at = now
    for c in (recalled, forgotten):
        c.dense, c.lexical = 0.8, 5.0
    outcome = rank(QueryInfo("how do we deploy", now=now), [forgotten, recalled])
    assert texts(outcome)[0] == "Deploys go through the release pipeline."
    plain = rank(QueryInfo("how do we deploy"), [forgotten, recalled])  # no clock: salience plays no part
    assert plain.items[0].score == plain.items[1].score


def test_facts_on_different_slots_are_not_one_thing_for_the_newer_wins() -> None:
    port = cand("p service port:api: 3060", kind="fact", d_rank=1, l_rank=1)
    host = cand("p module service:inventory: api", kind="fact", dense=0.6, d_rank=2, l_rank=2)
    port.record.subject, port.record.predicate = "p", "service_port:api"
    host.record.subject, host.record.predicate = "p", "module_service:inventory"
    host.record.valid_at = port.record.valid_at.replace(year=port.record.valid_at.year + 1)
    outcome = rank(QueryInfo("what port is api on"), [port, host])
    assert texts(outcome)[0] == "p service port:api: 3060"


def test_a_memory_naming_only_part_of_what_the_best_one_names_is_another_thing() -> None:
    # The same test name in another file: not a newer word on the asked test, however recent.
    asked = cand("tests/reporting/test_dedupe.py::test_unicode_names is stable now (PR #795).", days=0)
    other = cand("Fixed the flaky tests/webhooks/test_expiry.py::test_unicode_names (PR #11).", days=30, d_rank=2, l_rank=2)
    filler = [cand(f"filler {i}", d_rank=3 + i, l_rank=None, vector=[0.6, 0.8]) for i in range(10)]
    info = QueryInfo("What's the status of the flaky tests/reporting/test_dedupe.py::test_unicode_names?")
    outcome = rank(info, [asked, other, *filler])
    assert texts(outcome)[0] == asked.record.content


def stated(text: str, subject: str, predicate: str, value: str, *, source: str = "agent", **kw) -> Candidate:
    c = cand(text, kind="fact", **kw)
    c.record.subject, c.record.predicate, c.record.object, c.record.source = subject, predicate, value, source
    return c


def test_a_stated_fact_whose_slot_the_query_names_beats_one_whose_value_names_it() -> None:
    # The value-match repeats the asked name and so wins on words and vectors alike; the slot decides.
    host = stated("brambleway module service:inventory: inventory-api", "brambleway", "module_service:inventory",
                  "inventory-api", dense=0.79, d_rank=1, l_rank=1)
    port = stated("brambleway service port:inventory-api: 3060", "brambleway", "service_port:inventory_api", "3060",
                  dense=0.75, d_rank=2, l_rank=2, vector=[0.0, 1.0])
    host.lexical, port.lexical = 14.6, 11.7
    info = QueryInfo("What port is inventory-api on in Brambleway?", project_names=("brambleway",))
    assert texts(rank(info, [host, port]))[0] == "brambleway service port:inventory-api: 3060"
    # The same two facts extracted by rules: their slots are guesses, so words and vectors decide as before.
    host.record.source = port.record.source = "rules"
    assert texts(rank(info, [host, port]))[0] == "brambleway module service:inventory: inventory-api"


def test_the_slot_whose_meaning_the_query_asks_leads_where_the_words_do_not_tell() -> None:
    # Both slots share only "catalog" with the query and the sibling's value repeats it; the owner slot means
    # what was asked ("responsible"), by the cosine of its slot phrase to the query.
    service = stated("proj module service:catalog: catalog-api", "proj", "module_service:catalog", "catalog-api",
                     dense=0.62, d_rank=1, l_rank=1)
    owner = stated("proj module owner:catalog: Core API", "proj", "module_owner:catalog", "Core API",
                   dense=0.60, d_rank=2, l_rank=2, vector=[0.0, 1.0])
    service.lexical, owner.lexical = 9.0, 7.5
    service.slot_cosine, owner.slot_cosine = 0.45, 0.75
    info = QueryInfo("Which team is responsible for catalog?", project_names=("proj",))
    assert texts(rank(info, [service, owner]))[0] == owner.record.content
    assert "slot meaning" in rank(info, [service, owner]).items[0].channels
    assert texts(rank(info, [service, owner], RankConfig(slot_sense_weight=0.0)))[0] == service.record.content
    # Below the floor a slot's meaning is no evidence at all, and extracted facts' slots are guesses.
    owner.slot_cosine = 0.44
    assert texts(rank(info, [service, owner]))[0] == service.record.content
    owner.slot_cosine, owner.record.source = 0.75, "rules"
    assert texts(rank(info, [service, owner]))[0] == service.record.content


def test_slot_match_counts_both_sides_and_ignores_project_names() -> None:
    from chronomem.retrieval.rank import slot_match, slot_text

    port = stated("proj service port:inventory-api: 3060", "proj", "service_port:inventory_api", "3060").record
    token = stated("proj secret location:GitHub deploy token: Vault", "proj", "secret_location:github_deploy_token",
                   "Vault").record
    assert slot_text(port) == "proj service port inventory-api"
    asked = {"port", "inventory-api", "inventori", "api"}
    assert slot_match(asked, port, frozenset({"proj"})) > 0.8
    assert slot_match(asked, port, frozenset({"proj"})) > slot_match(asked, port)  # the subject is not the slot
    assert 0 < slot_match({"deploy", "process"}, token, frozenset({"proj"})) < 0.35  # one generic word shared
    assert slot_match(asked, cand("port of inventory-api is 3060").record) == 0.0  # a chunk has no slot


def test_a_part_of_the_subjects_name_does_not_name_the_subject() -> None:
    from chronomem.retrieval.rank import slot_match

    port = stated("refunds-server service listens on: 6025", "refunds-server service", "listens on", "6025").record
    host = stated("refunds served by: refunds-server", "refunds", "served by", "refunds-server").record
    hosting = set(terms("What was refunds's host service?"))
    # "refunds" is only a part of `refunds-server`: the module's hosting fact is the slot asked, not the server's port
    assert slot_match(hosting, host) > slot_match(hosting, port)
    # asked by its whole name (with `_` for `-`), the server is the subject again
    assert slot_match(set(terms("What port does refunds_server listen on?")), port) > 0.5


def test_the_rare_word_of_the_query_counts_more_than_the_common_ones() -> None:
    """Many memories say "X hosts the Y module"; the one about the module asked leads, though BM25 prefers a sibling."""
    sibling = cand("billing-worker hosts the payments module.", dense=0.62, vector=[0.0, 1.0])
    sibling.lexical = 9.0
    asked = cand("The ledger module is served by ledger-worker.", dense=0.64, vector=[1.0, 0.0])
    asked.lexical = 8.0
    others = [
        cand(f"{name}-api hosts the {name} module.", dense=0.40, vector=[0.6, 0.8])
        for name in ("search", "auth", "exports", "catalog", "profiles", "audit")
    ]
    for c in others:
        c.lexical = 7.0
    pool = [sibling, asked, *others]
    query = QueryInfo("Which service hosts the ledger module?")
    assert texts(rank(query, pool, RankConfig(coverage_weight=0.0)))[0] == "billing-worker hosts the payments module."
    assert texts(rank(query, pool))[0] == "The ledger module is served by ledger-worker."


def test_term_weights_and_coverage() -> None:
    pool = [cand("auth module owner: Infra"), cand("checkout module owner: Data"), cand("Infra owns the ledger module")]
    ledger, owner, module, absent = terms("ledger owner module absent")
    weights = term_weights({ledger, owner, module, absent}, pool)
    assert set(weights) == {ledger, owner, module}  # a term no candidate has tells none apart
    assert weights[ledger] > weights[owner] == weights[module]  # `owns` counts for `owner`
    assert weighted_coverage(weights, term_set("Infra owns the ledger module")) == 1.0
    low, high = term_set("auth module owner: Infra"), term_set("the ledger module")
    assert 0 < weighted_coverage(weights, low) < weighted_coverage(weights, high)
    assert term_set("the owners") == term_set("owns") == {"own"}


def test_the_terms_the_store_found_in_a_candidate_stand_for_its_text() -> None:
    """The read index tells which of the query's terms each row contains; ranking then tokenizes nothing."""
    told = [cand("auth module owner: Infra"), cand("checkout module owner: Data"), cand("Infra owns the ledger module")]
    ledger, owner, module = terms("ledger owner module")
    for c in told:
        c.terms = frozenset({ledger, owner, module}) & term_set(c.record.content)
    untold = [cand(c.record.content) for c in told]
    assert term_weights({ledger, owner, module}, told) == term_weights({ledger, owner, module}, untold)
    told[0].terms = frozenset({ledger})  # what the store says counts, not what the text would give
    assert term_weights({ledger}, told)[ledger] == pytest.approx(math.log(1 + 3 / 2))


def test_a_negated_instruction_asserts_the_values_it_names() -> None:
    """Agents' notes negate to give a rule ("Don't …: `a` not `b`"), not to set a value aside: such a note is
    ranked by its match like any other (a negator once demoted it by 0.7, and this ordering flipped)."""
    rule = cand('Don\'t include the error in the log message: `log.exception("Failed")`, not `log.exception(e)`.',
                dense=0.80, vector=[0.0, 1.0])
    rule.lexical = 11.0
    older = cand("Always use `log.exception()` when catching errors in the log message.", days=-5, dense=0.70,
                 vector=[1.0, 0.0])
    older.lexical = 9.0
    filler = [cand(f"filler note {i}", dense=0.30, l_rank=None, vector=[0.6, 0.8]) for i in range(5)]
    ranked = rank(QueryInfo("Should the log message include the caught error?"), [rule, older, *filler])
    assert texts(ranked)[0] == rule.record.content


def test_a_newer_sibling_statement_does_not_take_the_place_of_the_answer() -> None:
    """The newer note names the same service but says something else about it: it matches the question far worse."""
    port = cand("reporting-api port: 7395", days=0, dense=0.72)
    port.lexical = 17.0
    hosts = cand("reporting-api hosts the reporting module.", days=30, dense=0.50)
    hosts.lexical = 10.0
    filler = [cand(f"filler note {i}", dense=0.30, l_rank=None, vector=[0.0, 1.0]) for i in range(5)]
    query = QueryInfo("Which port does reporting-api listen on?")
    old_rule = RankConfig(newer_score_share=0.0, answer_type_weight=0.0)
    assert texts(rank(query, [port, hosts, *filler], old_rule))[0] == "reporting-api hosts the reporting module."
    assert texts(rank(query, [port, hosts, *filler], replace(old_rule, newer_score_share=0.7)))[0] == port.record.content
    # the question asks for a number and the best match holds one: a newer note without one restates nothing
    assert texts(rank(query, [port, hosts, *filler], replace(old_rule, answer_type_weight=0.2)))[0] == port.record.content


def test_a_newer_statement_of_the_same_kind_of_answer_still_wins() -> None:
    old = cand("reporting-api port: 7395", days=0, dense=0.72)
    new = cand("reporting-api now listens on 7400.", days=30, dense=0.70)
    filler = [cand(f"filler note {i}", dense=0.30, l_rank=None, vector=[0.0, 1.0]) for i in range(5)]
    ranked = rank(QueryInfo("Which port does reporting-api listen on?"), [old, new, *filler])
    assert texts(ranked)[0] == new.record.content
    assert "answer type" in ranked.items[0].channels


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What TV show does her GF like?", {}),  # abbreviations of common words
        ("Does she have a Golden Retriever?", {"golden": None, "retriever": False}),  # "golden" is common English
        ("<BOD> What did Jon say about card-playing?", {"jon": None}),  # markup and an English compound: no names
        ("Which city have both Jean and John visited?", {"jean": None, "john": None}),  # common: never alone
        ("What version of dashmap is it pinned to?", {"dashmap": False}),  # a rare word, even in lower case
        ("Which port does billing-api listen on?", {"billing-api": True}),
        ("Which Storybook instance documents the UI?", {"storybook": False}),
    ],
)
def test_the_names_gate_reads_rare_names_never_common_words_abbreviations_or_markup(
    question: str, names: dict[str, bool | None]
) -> None:
    assert gate_names(QueryInfo(question)) == names
    assert never_mentioned(names, list(names)) == [n for n, kind in names.items() if kind is not None]


def _hosting_pool() -> tuple[Candidate, Candidate, list[Candidate]]:
    """The host service of `translations`, changed by a note worded unlike the question, among the project's
    other modules' host services (so "service" is common in the pool and "translations" rare, as in a store)."""
    old = cand("translations is bundled into the calendar-backend service.", days=0, dense=0.80)
    old.lexical = 12.0
    moved = cand("Moved translations from calendar-backend into tagging-server.", days=30, dense=0.62)
    moved.lexical = 5.0
    siblings = []
    for i, module in enumerate(("dispatch", "ratings", "payroll", "coupons")):
        sibling = cand(f"{module} is bundled into the {module}-jobs service.", days=i, dense=0.55)
        sibling.lexical = 6.0
        siblings.append(sibling)
    return old, moved, siblings


def test_a_later_note_naming_the_leaders_value_beside_another_of_its_kind_takes_its_place() -> None:
    old, moved, siblings = _hosting_pool()
    query = QueryInfo("Which service runs translations?")
    # the update shares one word with the question: it scores too far below to win by "the newer wins" alone
    assert texts(rank(query, [old, moved, *siblings], RankConfig(succession=False)))[0] == old.record.content
    ranked = rank(query, [old, moved, *siblings])
    assert texts(ranked)[:2] == [moved.record.content, old.record.content]
    # recall shows why it leads though it scored lower; nothing else is marked so
    assert "later word" in ranked.items[0].channels
    assert not any("later word" in item.channels for item in ranked.items[1:])
    assert not any("later word" in item.channels for item in rank(replace(query, intent="event"), [old, moved]).items)
    # the chain goes on from the update: the next note naming its new value and another
    again = cand("translations left tagging-server; it runs in payroll-jobs now.", days=60, dense=0.60)
    again.lexical = 5.0
    assert texts(rank(query, [old, moved, again, *siblings]))[0] == again.record.content
    # as it stood before the second move, the first move is the answer (as_of: the slice ends before it)
    assert texts(rank(replace(query, intent="past"), [old, moved, *siblings]))[0] == moved.record.content


def test_a_later_note_naming_the_value_of_another_thing_does_not_take_the_place() -> None:
    old, _, siblings = _hosting_pool()
    # names calendar-backend and another service, but of `feeds`: "translations" is nowhere in it
    feeds = cand("feeds was carved out of calendar-backend and now runs in the dispatch-jobs service.", days=40)
    feeds.lexical = 6.0
    query = QueryInfo("Which service runs translations?")
    assert texts(rank(query, [old, feeds, *siblings]))[0] == old.record.content
    # a question about an event or a history keeps its own order
    assert texts(rank(replace(query, intent="event"), [old, feeds, *siblings]))[0] == old.record.content


def test_successor_of_needs_a_later_note_a_shared_value_the_question_does_not_name_and_the_subject() -> None:
    def note(text: str, days: int) -> MemoryRecord:
        return cand(text, days=days).record

    lead = note("Pinned prost at 3.26.2 in the lockfile.", 0)
    bump = note("Rolled prost forward to 3.32.0 (was on 3.26.2).", 10)
    assert successor_of(lead, bump, known="what version of prost?")
    assert not successor_of(bump, lead, known="what version of prost?")  # older: not a later word
    assert not successor_of(lead, bump, known="is prost still on 3.26.2?")  # the question names the value
    assert not successor_of(lead, note("Pinned prost at 3.26.2 again.", 10), known="")  # a restatement
    assert successor_of(lead, bump, known="", subject="prost")
    assert not successor_of(lead, note("Rolled tonic forward to 3.32.0 (was on 3.26.2).", 10), known="", subject="prost")
    host = note("dispatch was carved out of dispatch-jobs and now runs in invites-server.", 0)
    feeds = note("feeds was carved out of warehouse-server and now runs in dispatch-jobs.", 10)
    # "dispatch" is in that note only as part of the value it shares
    assert not successor_of(host, feeds, known="", subject="dispatch")
    # ... where a note that also says it outside the shared value speaks of it
    path = note("The reporting module lives in src/reporting/.", 0)
    moved = note("The directory of the reporting code is now `crates/reporting/src/` (was src/reporting/).", 10)
    assert successor_of(path, moved, known="", subject=terms("reporting")[0])
    # a fact's object is compared as a value: the agent wrote `:8445`, the later note says "port 8445"
    port = stated("refunds_server http port: :8445", "refunds_server", "http port", ":8445").record
    rebound = note("refunds-server was rebound from port 8445 to 5720 as of today.", 10)
    assert successor_of(port, rebound, known="what port does refunds-server bind?", subject="port")
    assert not successor_of(port, note("refunds-server still serves on port 8445.", 10), known="", subject="port")


def test_a_value_much_of_the_pool_gives_ties_no_note_to_another() -> None:
    """Every turn of a chat carries its date stamp: the year and the speaker's name are in most of the pool, so a
    later turn sharing them (with another day) is no later word on anything."""
    asked = cand("[15 July 2023] Melanie: Flowers bring joy; they were an important part of my wedding.", dense=0.8)
    asked.lexical = 12.0
    later = [
        cand(f"[{day} August 2023] Melanie: Wow, Caroline, the colors are bright and the flowers pretty.", days=day,
             dense=0.6)
        for day in (20, 25)
    ] + [cand(f"[{day} June 2023] Caroline: Thanks, Melanie! See you soon.", days=-day, dense=0.3) for day in (1, 2, 3)]
    for c in later:
        c.lexical = 4.0
    query = QueryInfo("What do flowers mean to Melanie?")
    assert texts(rank(query, [asked, *later]))[0] == asked.record.content
    # the same notes in a pool where the year is rare: then it is a shared value, and the later note leads
    assert successor_of(asked.record, later[1].record, known=query.text.lower())
    assert not successor_of(asked.record, later[1].record, known=query.text.lower(), common={"2023"})


def test_the_values_counted_common_when_asked_are_those_a_count_of_the_whole_pool_gives() -> None:
    """`_CommonValues` counts a value only when asked, over the texts that can hold it: the same answer as counting
    every text's values (`values.value_kinds`), in ASCII texts or not, a name of several words among them."""
    pool = [
        "[15 July 2023] Melanie: the Bank of America card works; see `src/app/` and v1.2.3.",
        "[16 July 2023] Melanie: moved src/app/ to `lib/app/` (was v1.2.3), Bank of America still.",
        "[17 July 2023] Caroline: café day on port 8443 with Ωmega-svc; `8443` is the port.",
        "[18 July 2023] Caroline: ΣΟΦΙΑ-db listens on 8443, owned by Identity Platform now.",
        "[19 July 2023] Melanie: the card is owned by Identity Platform since 2023.",
        "no values here at all",
    ]
    for limit in (0, 1, 2, 3):
        common = _CommonValues(pool, limit)
        counted: dict[str, int] = {}
        for text in pool:
            for found in value_kinds(text).values():
                for value in found:
                    counted[value] = counted.get(value, 0) + 1
        assert counted and all((value in common) == (n > limit) for value, n in counted.items())
        assert "never said" not in common


def test_one_attribute_named_two_ways_is_one_slot_to_a_question_that_cannot_tell_them_apart() -> None:
    # A model named the port "listens on" in one note and "http port" in the next: two slots to the consolidator
    # (the phrases are 0.19 alike), but the question is as close to both, and both hold an integer: the newer leads.
    older = stated("the audit-svc service listens on: 3551", "the audit-svc service", "listens_on", "3551",
                   dense=0.8, d_rank=1, l_rank=1)
    newer = stated("audit-svc http port: port 7494", "audit-svc", "http_port", "port 7494",
                   dense=0.78, d_rank=2, l_rank=2, days=5)
    older.slot_cosine, newer.slot_cosine = 0.83, 0.80
    info = QueryInfo("Which port does audit-svc listen on?")
    assert texts(rank(info, [older, newer]))[0] == newer.record.content
    # When the question means one of the two slots clearly more (owned by, asked; reviewed by, newer), it stays.
    newer.slot_cosine = 0.83 - 0.2
    assert texts(rank(info, [older, newer]))[0] == older.record.content


def test_different_things_or_kinds_of_value_stay_apart_for_the_newer_wins() -> None:
    older = stated("payments port: 8443", "payments", "port", "8443", dense=0.8, d_rank=1, l_rank=1)
    other_thing = stated("payments-db listens on: 5432", "payments-db", "listens_on", "5432",
                         dense=0.78, d_rank=2, l_rank=2, days=5)
    older.slot_cosine = other_thing.slot_cosine = 0.8
    info = QueryInfo("what port does payments use")
    assert texts(rank(info, [older, other_thing]))[0] == older.record.content
    other_kind = stated("payments served by: payments-api", "payments", "served_by", "payments-api",
                        dense=0.78, d_rank=2, l_rank=2, days=5)
    other_kind.slot_cosine = 0.8
    assert texts(rank(info, [older, other_kind]))[0] == older.record.content


def test_a_newer_note_in_the_words_of_a_facts_own_note_around_another_value_takes_its_place() -> None:
    # The agent passed a fact with the old value and none with the new: the fact's slot match lifts it far
    # above any note, but the newer note says the fact's own note's words around another value.
    fact = stated("nightly export duration value: 6 min", "nightly export duration", "value", "6 min",
                  dense=0.8, d_rank=1, l_rank=1)
    fact.slot_cosine = 0.8
    old_note = cand("Perf note: nightly export duration sits at 6 min.", dense=0.7, d_rank=3, l_rank=3)
    new_note = cand("Perf note: nightly export duration sits at 86 min.", dense=0.7, d_rank=2, l_rank=2, days=60)
    fact.record.source_ids = [old_note.record.id]
    fact.lexical, old_note.lexical, new_note.lexical = 9.0, 9.0, 9.0
    info = QueryInfo("what is the nightly export duration")
    assert texts(rank(info, [fact, old_note, new_note]))[0] == new_note.record.content


def test_a_chain_links_from_any_of_its_members_however_far_down_the_newest_ranks() -> None:
    # The best match is the oldest line; the next one says the same in other words and joins by meaning; the
    # newest is that one's words around another value, ranked far down and unlike the best match's vector.
    first = cand("- For formatting: `uv run ruff format .`", dense=0.9, d_rank=1, l_rank=1)
    second = cand("- Format: `uv run ruff format .`", days=20, dense=0.85, d_rank=2, l_rank=2)
    fillers = [cand(f"Formatting note number {n} about code.", dense=0.6, d_rank=3 + n, l_rank=None,
                    vector=[0.0, 1.0]) for n in range(5)]
    newest = cand("- Format: `uv run --frozen ruff format .`", days=100, dense=0.3, d_rank=9, l_rank=None,
                  vector=[0.0, 1.0])
    first.lexical, second.lexical = 3.0, 3.0
    ranking = rank(QueryInfo("What command formats the code?"), [first, second, *fillers, newest])
    assert texts(ranking)[0] == newest.record.content
    # without the member it chains to, the newest line is another thing (its words are not the best one's)
    alone = rank(QueryInfo("What command formats the code?"), [first, *fillers, newest])
    assert texts(alone)[0] == first.record.content


def test_a_later_note_naming_a_facts_object_beside_another_value_is_its_later_word() -> None:
    from chronomem.retrieval.rank import successor_of

    fact = stated("Copperfield build command: pnpm build", "Copperfield", "build command", "pnpm build").record
    later = cand("We moved from `pnpm build` to `tsc -b` for the build command.", days=30).record
    unrelated = cand("We moved from `npm ci` to `pnpm install` for installs.", days=30).record
    assert successor_of(fact, later, known="what's the build command", subject="build")
    assert not successor_of(fact, unrelated, known="what's the build command")


def test_a_newer_note_naming_another_value_in_other_words_does_not_displace_a_stated_fact() -> None:
    # No fact came with the newer note, and its words are not the fact's note's: a stale wiki page, a draft
    # branch. Another value of the fact's kind is no evidence it is the later word on the fact's slot.
    fact = stated("price lists route: GET /api/v3/price-lists", "price lists", "route", "GET /api/v3/price-lists",
                  dense=0.8, d_rank=1, l_rank=1)
    fact.slot_cosine = 0.8
    own = cand("The route `GET /api/v3/price-lists` lists price lists.", dense=0.7, d_rank=3, l_rank=3)
    fact.record.source_ids = [own.record.id]
    wiki = cand("A stale wiki page claims the route that lists price lists is GET /rest/price-lists; it's outdated.",
                dense=0.7, d_rank=2, l_rank=2, days=60)
    fact.lexical, own.lexical, wiki.lexical = 9.0, 9.0, 9.0
    info = QueryInfo("which route returns a list of price lists")
    assert texts(rank(info, [fact, own, wiki]))[0] == fact.record.content


def test_facts_whose_predicates_name_different_things_are_never_one_slot_to_the_question() -> None:
    # An agent that puts the thing in the predicate (`service_port:api`): the subject is the project for all of them.
    api = stated("shop service port:api: 3060", "shop", "service_port:api", "3060", dense=0.8, d_rank=1, l_rank=1)
    web = stated("shop service port:web: 4000", "shop", "service_port:web", "4000", dense=0.78, d_rank=2, l_rank=2,
                 days=5)
    api.slot_cosine, web.slot_cosine = 0.80, 0.78
    info = QueryInfo("which port does the service listen on", project_names=("shop",))
    assert texts(rank(info, [api, web]))[0] == api.record.content


def test_a_memory_that_tells_nothing_the_question_does_not_gives_way_to_one_that_does() -> None:
    # A heading whose list follows in other notes matches every word of the question and is the shortest text, so
    # BM25 puts it first; it cannot hold the answer.
    heading = cand("- Line length:", dense=0.75)
    heading.lexical = 9.0
    answer = cand("- Line length: 88 chars maximum", dense=0.72, d_rank=2, l_rank=2)
    answer.lexical = 7.5
    filler = [cand(f"filler note {i}", dense=0.30, l_rank=None, vector=[0.0, 1.0]) for i in range(5)]
    info = QueryInfo("What line length limit applies?")
    assert texts(rank(info, [heading, answer, *filler]))[0] == answer.record.content
    unpenalised = RankConfig(told_nothing_penalty=1.0)
    assert texts(rank(info, [heading, answer, *filler], unpenalised))[0] == heading.record.content


@pytest.mark.parametrize(
    ("text", "question", "nothing"),
    [
        ("- Line length:", "What line length limit applies?", True),
        ("Line length (88 chars)", "What line length limit applies?", False),  # a value
        ("webhooks is under `crates/webhooks/src/`.", "Anything stored about `crates/webhooks/src/`?", False),
        ("Line length errors occur often", "What line length limit applies?", False),  # words of its own
        ("", "What line length limit applies?", False),
    ],
)
def test_tells_nothing_means_only_the_questions_words_and_no_value(text: str, question: str, nothing: bool) -> None:
    assert tells_nothing(text, set(terms(question))) is nothing
