"""The rule extractor, pure: what it reads from agent notes, what it refuses (precision first), normalization."""

from __future__ import annotations

from datetime import datetime

import pytest

from chronomem.consolidate.extract_rules import extract, split_sentences
from chronomem.records import UTC


def facts(text: str, project: str = "shop") -> list[tuple[str | None, str | None, str | None]]:
    return [(e.subject, e.predicate, e.object) for e in extract(text, project) if e.kind == "fact"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # changes of value
        ("The test command is now `nox -s tests`.", ("shop", "test_command", "nox -s tests")),
        ("FYI: the lint command is now ruff check . --fix (was flake8).", ("shop", "lint_command", "ruff check . --fix")),
        ("Our package manager is now uv.", ("shop", "package_manager", "uv")),
        ("I changed the default branch to trunk.", ("shop", "default_branch", "trunk")),
        ("The owner of the ingest module is now the Data team.", ("ingest module", "owner", "Data team")),
        ("The Python version is now 3.12.", ("python", "version", "3.12")),
        ("The release pipeline was switched to GitHub Actions, previously Travis.", ("shop", "release_pipeline", "GitHub Actions")),
        # moves
        ("Switched the CI provider from CircleCI to Buildkite.", ("shop", "ci_provider", "Buildkite")),
        ("We migrated the queue from RabbitMQ to SQS for the worker pool.", ("shop", "queue", "SQS")),
        ("We moved from `make` to `just` for the build command.", ("shop", "build_command", "just")),
        # deprecations
        ("requests is deprecated, use httpx instead.", ("requests", "status", "deprecated")),
        # ports
        ("The payments service listens on port 8443.", ("payments service", "port", "8443")),
        ("auth-gateway runs on localhost:7001.", ("auth-gateway", "port", "7001")),
        ("Port for the metrics exporter is 9102.", ("metrics exporter", "port", "9102")),
        ("redis's port is 6380.", ("redis", "port", "6380")),
        ("The port is 8080.", ("shop", "port", "8080")),
        # versions
        ("Bumped numpy to 2.1.3.", ("numpy", "version", "2.1.3")),
        ("serde is pinned at 1.0.197.", ("serde", "version", "1.0.197")),
        ("Upgraded django from 4.2.1 to 5.0.2 yesterday.", ("django", "version", "5.0.2")),
        ("We're on Node 20.11.1 now.", ("node", "version", "20.11.1")),
        ("The tokio version is 1.38.0.", ("tokio", "version", "1.38.0")),
    ],
)
def test_reads_plain_statements(text: str, expected: tuple[str, str, str]) -> None:
    assert facts(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        "Should we move the API to port 9000?",
        "Maybe the test command is now tox.",
        "We might switch from npm to pnpm.",
        "Someone on a forum said the payments service listens on port 8000.",
        "Read a blog post where the gateway listens on port 8081.",
        "The test command is not pytest anymore.",
        "The team is now happy with the results.",
        "It is now faster.",
        "Bumped the timeout to 1.5 seconds.",
        "Next week the staging URL will be https://stg.example.com.",
        "Tried port 5001 while experimenting with the proxy.",
        "If the cache is cold, the API listens on port 9001 for warm-up.",
        "We plan to bump numpy to 2.2.0.",
        "[Otherproject] The build command is now cargo make.",
        "In Otherproject, the port for billing is 7000.",
        "Standup moved to 10:30 tomorrow.",
        "Spent the afternoon reading through the exports code.",
        "```\nthe test command is now rm -rf /\n```",
        "The deploy command is now ready for review.",
    ],
)
def test_refuses_what_is_not_a_statement_of_the_current_value(text: str) -> None:
    assert extract(text, "shop") == []


def test_own_project_prefix_is_kept_and_dates_set_valid_from() -> None:
    [e] = extract("[Shop] Starting 2024-05-01 the deploy command is now fly deploy.", "shop")
    assert (e.subject, e.predicate, e.object) == ("shop", "deploy_command", "fly deploy")
    assert e.valid_from == datetime(2024, 5, 1, tzinfo=UTC)


def test_moves_without_an_attribute_name_the_value_to_replace() -> None:
    kinds = [(e.kind, e.subject, e.predicate, e.object, e.old_value) for e in extract("We replaced Celery with Dramatiq.", "shop")]
    assert kinds == [("fact", "celery", "replaced_by", "Dramatiq", None), ("replace", None, None, "Dramatiq", "Celery")]
    [only] = extract("Switched the team that owns reporting from Core to Growth.", "shop")
    assert (only.kind, only.old_value, only.object) == ("replace", "Core", "Growth")


def test_deprecation_names_the_replacement() -> None:
    found = extract("The /v1/users endpoint is deprecated in favour of /v2/users.", "shop")
    assert [(e.kind, e.predicate, e.object) for e in found] == [
        ("fact", "status", "deprecated"), ("fact", "replaced_by", "/v2/users"), ("replace", None, "/v2/users")
    ]
    assert extract("The old importer is deprecated because nobody maintains it.", "shop") == []


@pytest.mark.parametrize(
    ("text", "topic", "wrong", "right"),
    [
        ("Ignore what I said about the staging database; it's actually Postgres 16.", "staging database", None, "Postgres 16"),
        ("Disregard my note that the default branch is master. It's main.", "default branch", "master", "main"),
        ("Correction: the build tool is not make, the right value is just.", "build tool", "make", "just"),
        ("I was wrong: the owner of billing was never Dana. Use Priya.", "owner of billing", "Dana", "Priya"),
        ("Scratch my note on the CI runner (Jenkins); it's actually Drone.", "CI runner", "Jenkins", "Drone"),
        ("Ignore what I said about the queue being Kafka; that was wrong, and I don't know the real one.", "queue", "Kafka", None),
        ("Retracting: the cache TTL = `300` was wrong. Need to check with Sam.", "cache TTL", "300", None),
    ],
)
def test_retractions(text: str, topic: str, wrong: str | None, right: str | None) -> None:
    [e] = extract(text, "shop")
    assert (e.kind, e.topic, e.old_value, e.object) == ("retract", topic, wrong, right)


def test_question_is_not_a_retraction_and_code_is_not_prose() -> None:
    assert extract("Should I ignore what I said about the port?", "shop") == []
    assert split_sentences("Run it.\n```\nx = 1. y = 2\n```\nDone.") == ["Run it.", "Done."]
