"""The expected answer type: read off a question, found in a memory."""

from __future__ import annotations

import pytest

from chronomem.retrieval.answer_type import AnswerTypes, expected_answer_type


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Whose sign-off do I need to touch audit?", "person"),
        ("Who is on the hook when sessions breaks?", "person"),
        ("Which part of the repo tree contains reporting?", "path"),
        ("If I need to edit inventory, which folder do I open?", "path"),
        ("What directory holds the billing code?", "path"),
        ("What URL path gives me all the reports?", "address"),
        ("Which HTTP route should a client call to list reports?", "address"),
        ("Which socket number does ingest-svc accept connections on?", "number"),
        ("What port is billing-worker on?", "number"),
        ("Which GraphQL schema file does Marrowgate use?", "path"),
        ("What is the endpoint for listing customers right now?", "address"),
        ("What did Harborview have as the endpoint for listing teams?", "address"),
        ("What was gateway's port in Marrowgate?", "number"),
        ("What values has the directory of the ledger code had, in order?", "path"),
        ("What does Caroline like to paint?", None),
        ("How do I run the tests?", None),
        ("Where did Melanie go camping?", None),
    ],
)
def test_expected_answer_type(question: str, kind: str | None) -> None:
    assert expected_answer_type(question) == kind


def test_a_person_is_a_capitalised_word_that_keeps_its_capital_in_the_middle_of_a_sentence() -> None:
    pool = [
        "Infra owns the catalog module; ask them before large changes.",
        "Owner of notifications: Infra.",
        "Pinecask: Look in `apps/checkout/` for the checkout logic.",
        "sessions is owned by the Core API team",
        "In Pinecask, sessions code: `pkg/sessions/`.",
        "Config for the session TTL. Sessions expire.",
        "Deployed on Monday, May the 3rd.",
    ]
    answers = AnswerTypes(pool, ignore={"pinecask", "sessions", "catalog", "checkout"})
    held = [text for text in pool if answers.holds(text, "person")]
    # "Infra" begins its sentence, but the pool also writes it mid-sentence; "Look" only ever begins one;
    # an abbreviation, the question's own words, months and weekdays name nobody.
    assert held == pool[:2] + [pool[3]]
    assert AnswerTypes(pool[:1], ignore=()).holds(pool[0], "person") is False  # nothing corroborates "Infra"
    assert AnswerTypes([], ignore=()).holds("Owner of webhooks: Growth.", "person")  # a value after a label


def test_paths_addresses_and_numbers() -> None:
    answers = AnswerTypes([], ignore=())
    assert answers.holds("inventory code: `quillstack/inventory/`.", "path")
    assert answers.holds("The reporting module lives in apps/reporting/.", "path")
    assert not answers.holds("Staging is at https://preview.brambleway.dev.", "path")  # a URL's slashes
    assert not answers.holds("inventory is deployed as part of inventory-svc.", "path")
    assert answers.holds("The schema is schema.graphql.", "path")  # a file's name
    for text in ("Set `app.http.client.timeout_ms` to 500.", "Prefer small PRs, e.g. one module each."):
        assert not answers.holds(text, "path"), text
    assert answers.holds("Staging is at https://preview.brambleway.dev.", "address")
    assert answers.holds("`GET /api/v2/reports` returns reports, paginated.", "address")
    assert answers.holds("local ingest-svc: http://localhost:3245.", "address")
    assert not answers.holds("Set `CP_REDIS_URL` for the Redis URL.", "address")
    assert answers.holds("billing-worker binds 5180 locally and in containers.", "number")
    assert answers.holds("checkout-worker runs on :5515.", "number")
    for text in ("Merged PR #314, which fixes PAY-7233.", "ADR-006: plain workspaces.", "The project targets Python 3.11."):
        assert not answers.holds(text, "number"), text
