"""Code-aware terms, named entities, and the time a query names."""

from __future__ import annotations

from datetime import datetime

import pytest

from chronomem.records import UTC
from chronomem.retrieval.temporal import read_time
from chronomem.search.terms import entities, fold, mentioned, named_things, terms

NOW = datetime(2024, 8, 20, tzinfo=UTC)


def test_identifiers_are_kept_whole_and_split() -> None:
    got = terms("ERR_LEDGER_TIMEOUT in src/auth/ from parseHTTPDate, v1.2.3")
    for expected in ("err_ledger_timeout", "err", "ledger", "timeout", "src/auth", "auth", "parsehttpdate", "parse", "http", "date", "v1.2.3"):
        assert fold(expected) in got
    assert "the" not in terms("the port") and terms("ports") == terms("port") and terms("pinned") == terms("pin")
    assert fold("ERR_X") == "ERR_X"  # identifiers are not stemmed
    assert terms("owner") == terms("owns") and terms("served") == terms("servers") and terms("workers") == terms("work")
    assert terms("user") == ["user"] and terms("billing-worker")[0] == "billing-worker"  # short stems, identifiers


def test_entities_are_the_named_things() -> None:
    assert entities("Which GraphQL schema file does Brambleway use?", ignore={"brambleway"}) == {"graphql"}
    assert entities("What port is catalog-svc on?") == {"catalog-svc"}
    assert entities("Find notes that mention `INC-6653`.") == {"inc-6653"}
    assert entities("What was it on 2024-05-30, in May?") == set()
    assert entities("Where is the lint step?") == set()
    assert entities("Has Tim been to the U.S. and/or Canada?") == {"tim", "canada"}  # stop words and letters name nothing


def test_identifiers_are_told_from_plain_words() -> None:
    got = named_things("Does Tim's GraphQL gateway on catalog-svc (v2) use `redis` like Vivaldi, via CDN and parseHTTPDate?")
    assert {n for n, exact in got.items() if exact} == {"graphql", "catalog-svc", "redis", "parsehttpdate", "cdn"}
    assert {n for n, exact in got.items() if not exact} == {"tim", "vivaldi"}
    compounds = named_things("Did Caroline go to transgender-specific events, career-wise or self-hosted, on ledger-svc?")
    assert compounds == {"caroline": False, "ledger-svc": True}  # English compounds describe, they do not name
    assert named_things("Do we run `pre-commit` or Self-Hosted runners?") == {"pre-commit": True, "self-hosted": True}
    assert named_things("Re-running usually passes.") == {}
    phrasal = named_things("Whose sign-off adds a third-party follow-up or two-factor check to catalog-svc?")
    assert phrasal == {"catalog-svc": True}  # phrasal nouns and numeral compounds are English words too


def test_mentioned_allows_spelling_that_names_the_same_thing() -> None:
    assert mentioned("ice-cream", "she made vegan ice cream again")
    assert mentioned("test-only", "| tests-only changes | `pnpm test`")  # a joined word's -s form is that word
    assert mentioned("tests-only", "for test only changes") and not mentioned("test-only", "the tester only")
    assert mentioned("catalog-svc", "catalog-svc listens on 8080") and not mentioned("catalog-svc", "the catalog service")
    assert mentioned("johns", "john said so", identifier=False)
    assert not mentioned("johns", "john said so", identifier=True)  # an identifier is spelled one way
    assert not mentioned("stripe", "strip the prefix", identifier=False)
    # a longer hyphenated name is another name, however the shorter one's words are joined
    assert not mentioned("billing-worker", "billing-worker-v2 drains the queue")
    assert not mentioned("billing-worker", "billing worker-v2 drains the queue")
    assert mentioned("billing-worker", "the billing-worker. then the queue") and mentioned("billing-worker", "billing workers, v2")


@pytest.mark.parametrize(
    ("query", "at", "text", "intent"),
    [
        ("Back on July 3, 2024, what was the pinned version of requests?", datetime(2024, 7, 3, 23, 59, 59, 999999, tzinfo=UTC),
         "what was the pinned version of requests?", "past"),
        ("What was the language for Brambleway on 2024-05-30?", datetime(2024, 5, 30, 23, 59, 59, 999999, tzinfo=UTC),
         "What was the language for Brambleway?", "past"),
        ("what was the test command in March?", datetime(2024, 3, 31, 23, 59, 59, 999999, tzinfo=UTC),
         "what was the test command?", "past"),
        ("How has the auth directory changed over time?", None, "How has the auth directory changed over time?", "current"),
        ("When did we move to nox?", None, "When did we move to nox?", "event"),
        ("Which port does audit-svc use?", None, "Which port does audit-svc use?", "current"),
        ("May I ask which port it is?", None, "May I ask which port it is?", "current"),
        ("Did anyone fix the flaky test_expiry?", None, "Did anyone fix the flaky test_expiry?", "current"),
        ("Did we move to nox, and when?", None, "Did we move to nox, and when?", "event"),
        # past tense alone asks what is now settled: the latest word on it leads
        ("What did we decide about the search owner?", None, "What did we decide about the search owner?", "current"),
        ("Was the cache ever migrated?", None, "Was the cache ever migrated?", "current"),
        # "when" joining a clause is not the question's word
        ("What should I run when deploying?", None, "What should I run when deploying?", "current"),
        ("What values has the staging URL had, in order?", None, "What values has the staging URL had, in order?", "current"),
        ("Walk me through every change to the deploy process.", None, "Walk me through every change to the deploy process.",
         "current"),
        ("Give me the history of the port.", None, "Give me the history of the port.", "current"),
        ("Into which line of history do changes get integrated?", None,
         "Into which line of history do changes get integrated?", "current"),
        ("Is there a required format for git history entries?", None,
         "Is there a required format for git history entries?", "current"),
        ("How has Nate shared his recipes?", None, "How has Nate shared his recipes?", "current"),
        ("What do I run in order to deploy?", None, "What do I run in order to deploy?", "current"),
        ("What books has Melanie read?", None, "What books has Melanie read?", "current"),
        ("How many times has the deploy failed?", None, "How many times has the deploy failed?", "current"),
        ("Which Redis does the cache use?", None, "Which Redis does the cache use?", "current"),
        ("What status does the ticket have?", None, "What status does the ticket have?", "current"),
        # a weekday written before the date is part of the dated phrase, not a word to search for
        ("Back on Friday, 18 July 2024: which port did audit-svc use?", datetime(2024, 7, 18, 23, 59, 59, 999999, tzinfo=UTC),
         "which port did audit-svc use?", "past"),
        ("What did we ship on Wed, 3 Jul 2024?", datetime(2024, 7, 3, 23, 59, 59, 999999, tzinfo=UTC), "What did we ship?",
         "past"),
        ("Billing on Monday 2024-05-06: the owner was who?", datetime(2024, 5, 6, 23, 59, 59, 999999, tzinfo=UTC),
         "Billing: the owner was who?", "past"),
        # a weekday alone names no date
        ("What did we decide on Monday?", None, "What did we decide on Monday?", "current"),
    ],
)
def test_read_time(query: str, at: datetime | None, text: str, intent: str) -> None:
    reading = read_time(query, NOW)
    assert (reading.at, reading.text, reading.intent) == (at, text, intent)


def test_relative_phrases() -> None:
    reading = read_time("What did we decide 3 weeks ago about caching?", NOW)
    assert reading.at == datetime(2024, 7, 30, tzinfo=UTC) and reading.text == "What did we decide about caching?"
    assert reading.since is None  # a moment, not a day or month that began somewhere


@pytest.mark.parametrize(
    ("query", "since"),
    [
        ("What did we ship on May 10, 2024?", datetime(2024, 5, 10, tzinfo=UTC)),
        ("What did we ship on 2024-05-10?", datetime(2024, 5, 10, tzinfo=UTC)),
        ("What did we ship in May 2024?", datetime(2024, 5, 1, tzinfo=UTC)),
        ("What did we ship in March?", datetime(2024, 3, 1, tzinfo=UTC)),
        ("What did we ship in August?", datetime(2024, 8, 1, tzinfo=UTC)),  # this month, up to now
    ],
)
def test_a_named_day_or_month_has_a_beginning(query: str, since: datetime) -> None:
    reading = read_time(query, NOW)
    assert reading.since == since and reading.at is not None and since < reading.at <= max(NOW, reading.at)


def test_without_name_drops_the_project_name_and_nothing_else() -> None:
    from chronomem.search.terms import without_name

    assert without_name("Which vault has Copperfield's prod database password?", "copperfield") == (
        "Which vault has prod database password?"
    )
    assert without_name("What port is api on in COPPERFIELD right now?", "copperfield") == "What port is api on in right now?"
    assert without_name("What port is copperfield-api on?", "copperfield") == "What port is copperfield-api on?"
    assert without_name("Copperfield?", "copperfield") == "Copperfield?"  # nothing else to search for
    assert without_name("lint command", "") == "lint command"


def test_without_name_reads_the_name_however_its_parts_are_joined() -> None:
    from chronomem.search.terms import without_name

    # a repository's name beside its project slug: agentfiles_validation's pydanticai-q003 asked "in pydantic-ai"
    assert without_name("How is pyright run in pydantic-ai?", "pydanticai") == "How is pyright run in?"
    assert without_name("What does Pydantic AI pin?", "pydanticai") == "What does pin?"
    assert without_name("Where is pydantic_ai's test config?", "pydantic-ai") == "Where is test config?"
    assert without_name("What does pydantic-ai-slim export?", "pydanticai") == "What does pydantic-ai-slim export?"


def test_without_name_leaves_identifiers_paths_and_addresses_that_hold_the_name() -> None:
    from chronomem.search.terms import without_name

    # agentfiles_validation's effect-q009: dropping "Effect" from `Effect.interrupt` left ".interrupt", which the
    # names gate then read as a name the store never mentions, and recall abstained
    question = "How should I yield Effect.interrupt or other terminal effects?"
    assert without_name(question, "effect") == question
    assert without_name("What is in effect/src now?", "effect") == "What is in effect/src now?"
    assert without_name("Is https://effect.website up?", "effect") == "Is https://effect.website up?"
    assert without_name("Which lint command does Effect use.", "effect") == "Which lint command does use."


def test_a_longer_identifier_is_another_name() -> None:
    from chronomem.search.terms import holds_name, mentioned

    # devmem_validation's identifier questions: "someone pasted contracts::BAD_CURSOR-v2 in chat from a different
    # service" led the question about `contracts::BAD_CURSOR` by the name it does not hold
    assert not holds_name("someone pasted contracts::bad_cursor-v2 in chat", "contracts::bad_cursor")
    assert not mentioned("kt_db_max_conns", "we never read kt_db_max_conns_v2")
    assert holds_name("kt_db_max_conns_v2 is not ours; kt_db_max_conns is.", "kt_db_max_conns")
    assert holds_name("bug: contracts::bad_cursor in contracts", "contracts::bad_cursor")
    assert holds_name("the login form is in src/auth/login.py", "src/auth")  # a path below the folder
    assert holds_name("payments-svc restarted", "payments")  # a word within a longer name, as before
