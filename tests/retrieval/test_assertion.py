"""Mentions and statements (retrieval/assertion.py) and the kinds of value a note gives (retrieval/values.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from chronomem.records import UTC
from chronomem.retrieval.assertion import mentions, unasserting
from chronomem.retrieval.values import value_kinds

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def test_negators_and_words_of_doubt_are_cues_a_statement_is_not() -> None:
    for text in (
        "Saw 6045 used as the port in a tutorial; that's not how we do it.",
        "Priya wondered whether `internal/core/` would work as the path.",
        "Could the Redis URL become `X_URL` one day?",
        "No decision on moving to pnpm.",
    ):
        assert unasserting(text), text
    for text in ("billing-api listens on 8080.", "Tests should run with `nox -s tests`.", "We moved in May."):
        assert not unasserting(text), text


def test_a_cue_with_a_value_of_its_own_is_a_mention_one_that_names_only_older_values_is_not() -> None:
    stated = "Note: ops-console is exposed on port 5008."
    aside = "Saw 6045 used as the ops-console port in a tutorial; that isn't how this repo does it."
    retraction = "Withdrawn: I can't vouch for port 5008 on ops-console."
    flaky = "`sync_retry_test` flakes on CI about once a day."
    fixed = "`sync_retry_test` no longer flakes."
    texts = [stated, aside, retraction, flaky, fixed]
    times = [T0 + timedelta(days=d) for d in range(len(texts))]
    assert mentions(texts, times) == [False, True, False, False, False]


def test_an_update_worded_with_a_negation_names_the_old_value_and_is_no_mention() -> None:
    texts = ["numpy is pinned at 2.19.7.", "No longer 2.19.7; use 2.24.2 for numpy.", "Maybe try numpy 3.1.0 someday?"]
    assert mentions(texts, [T0 + timedelta(days=d) for d in range(3)]) == [False, False, True]


def test_a_value_first_said_in_a_note_with_a_cue_is_that_notes_own() -> None:
    # the same two notes, the aside first: its value is still new to the pool when it is said
    texts = ["Could port 6045 work for ops-console?", "ops-console is exposed on port 6045."]
    assert mentions(texts, [T0, T0 + timedelta(days=1)]) == [True, False]


def test_values_by_kind() -> None:
    assert value_kinds("Fetch customers with `GET /api/v2/customers`.") == {"address": {"get /api/v2/customers"}}
    assert value_kinds("No longer 2.19.7; use 2.24.2 for numpy.") == {"version": {"2.19.7", "2.24.2"}}
    assert value_kinds("Code owners for search: the Identity team.") == {"name": {"identity"}}
    assert value_kinds("Core API owns the search module.") == {"name": {"core api"}}
    assert value_kinds("ops-console is exposed on port 5008.") == {"number": {"5008"}, "identifier": {"ops-console"}}
    assert value_kinds("Billing code lives in apps/billing/src/.") == {"path": {"apps/billing/src/"}}
    assert value_kinds("the tests pass") == {}


def test_a_query_string_is_no_question() -> None:
    assert not unasserting("List orders with `GET /v1/orders?page=2&per=50`.")
    assert unasserting("Is the orders route paginated?")
    assert unasserting('He asked "does it page?" and left.')


def test_references_and_ticket_keys_are_identifiers_not_numbers() -> None:
    assert value_kinds("PR #412 fixed BUG7781 in parser::LEXER.") == {"identifier": {"pr #412", "bug7781", "parser::lexer"}}
    assert value_kinds("RFC 7231 says so; the port is 7231.") == {"identifier": {"rfc 7231"}, "number": {"7231"}}


def test_a_fix_citing_its_change_names_the_older_ticket_and_is_no_mention() -> None:
    texts = [
        "Filed ENG4410: the exporter hangs when the queue is empty.",
        "Merged PR 9912 so ENG4410 doesn't happen anymore.",
        "Someone suggested PR 7001 might help with the exporter; nobody tried it.",
    ]
    assert mentions(texts, [T0 + timedelta(days=d) for d in range(3)]) == [False, False, True]


def test_a_code_span_takes_the_kind_of_its_text() -> None:
    assert value_kinds("Moved from `src/app/` to lib/app/.") == {"path": {"src/app/", "lib/app/"}}
    assert value_kinds("Run `nox -s tests` on port `8080`.") == {"code": {"nox -s tests"}, "number": {"8080"}}
    assert value_kinds("Call `parseDate` there.") == {"identifier": {"parsedate"}}


def test_an_update_that_quotes_only_the_old_value_is_no_mention() -> None:
    texts = ["The ledger code is in `pkg/ledger/`.", "ledger no longer lives in `pkg/ledger/`; it is in core/ledger/ now."]
    assert mentions(texts, [T0, T0 + timedelta(days=1)]) == [False, False]


def test_a_cue_inside_a_name_is_not_a_cue() -> None:
    # `strict-no-cover`, a flag, an env var: the word is part of a name, and the note asserts what it says
    for text in ("Full check: `./scripts/test` (~23s). Runs `strict-no-cover` on changed files.",
                 "Commit with --no-verify only in an emergency.", "Set no_proxy for the mirror."):
        assert not unasserting(text), text
    assert unasserting("The mirror is not at mirror-01 any more.")
