"""The values a memory states (retrieval/values.py): what each kind reads, and that the fast-scanning patterns
(first-character lookaheads, possessive runs, a hint searched first) read exactly what the plain patterns
below — the specification — read, on thousands of generated texts mixing every kind's shapes."""

from __future__ import annotations

import random
import re

import pytest

from chronomem.retrieval import values
from chronomem.retrieval.values import value_kinds

PLAIN = {
    "address": r"\b[a-z][a-z0-9+.-]*://[^\s`'\"<>)]+|\b(?:GET|POST|PUT|PATCH|DELETE|HEAD)\s+/\S*|\blocalhost:\d+",
    "code": r"`([^`\n]{1,200})`",
    "path": r"(?<![:/\w.])(?:[\w.-]+/)+[\w.-]*|(?<![\w./])[\w-]*[A-Za-z_][\w-]*\.[a-z]{2,8}(?![\w/]|\.\w)",
    "version": r"(?<![\w.])v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?(?![\w.]*\w)",
    "identifier": r"\b[A-Z]{2,}(?: #?|#)\d+\b|\b[A-Za-z][A-Za-z0-9]*(?:(?:[_-]|::)[A-Za-z0-9]+)+\b"
    r"|\b[A-Za-z][a-z]+[A-Z]\w*\b|\b[A-Z]{2,}\d+\b",
    "number": r"(?<![\w#.\-/:])\d{2,}(?![\w.]*[A-Za-z])(?!\.\d)",
    "name": r"(?<=[a-z0-9,;)→>] )[A-Z][a-z][\w'-]*(?: [A-Z][\w'-]*)*|(?:^|(?<=[.!?] ))[A-Z][\w'-]*(?: [A-Z][\w'-]*)+",
}

PIECES = [
    "the", "port", "is", "now", "Billing", "Core API", "DevEx", "parseDate", "billing-worker", "MR_REDIS_URL",
    "refunds::DEADLOCK", "PAY-7233", "CON5449", "CL 18873", "PR #412", "RFC 7231", "2.24.2", "v1.2.3-rc.1", "6045",
    "8080", "3.14", "12.5kg", "apps/billing/", "settings.toml", "src/app/main.py", "e.g.", "https://x.io/a?b=1",
    "GET /api/v2/customers", "localhost:8080", "`nox -s tests`", "`src/app/`", "`2.19.7`", "no", "not", "whether",
    "Caroline", "LGBTQ", "café", "naïve-mode", "Ünïcode_name", "x", "__init__.py", "a.b.c", "1.2.3.4.5", "--flag",
    "C++", "node.js", "I'm", "O'Brien", "Mid-Term", "(see", "it)", "42", "#99", "a/b", "//", ".", ",", ";", "?", "!",
    "→", "->", "=>",
]
SEPARATORS = [" ", " ", " ", ", ", ". ", "; ", "\n", "", "-", "/", "_", ":", "."]


def generated(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = rng.choices(PIECES, k=rng.randrange(1, 14))
        out.append("".join(w + rng.choice(SEPARATORS) for w in words).strip())
    return out


def plain_value_kinds(text: str) -> dict[str, frozenset[str]]:
    """value_kinds with the plain patterns and no hints: the specification."""
    kinds = [(kind, re.compile(PLAIN[kind])) for kind in ("address", "code", "path", "version", "identifier", "number")]

    def shape(code: str) -> str:
        for kind, pattern in kinds:
            if kind != "code" and (match := pattern.match(code)) and match.end() == len(code):
                return kind
        return "code"

    out: dict[str, set[str]] = {}
    taken: list[tuple[int, int]] = []
    for kind, pattern in kinds:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            taken.append(match.span())
            value = (match.group(1) if match.re.groups else match.group()).rstrip(values._TRAILING)
            if value:
                out.setdefault(shape(value) if kind == "code" else kind, set()).add(value.lower())
    for match in re.finditer(PLAIN["name"], text):
        words = [w for w in match.group().lower().split() if w not in values.STOP_WORDS and w not in values.CALENDAR_WORDS]
        if words and not any(start < match.end() and match.start() < end for start, end in taken):
            out.setdefault("name", set()).add(" ".join(words))
    return {kind: frozenset(found) for kind, found in out.items()}


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_patterns_read_what_the_plain_ones_read(seed: int) -> None:
    texts = generated(2500, seed)
    differ = [t for t in texts if value_kinds.__wrapped__(t) != plain_value_kinds(t)]
    assert not differ, differ[:3]
    read = [kind for t in texts for kind in value_kinds.__wrapped__(t)]
    assert {"address", "code", "path", "version", "identifier", "number", "name"} <= set(read)  # every kind is tried


def test_each_kind_reads_its_shape() -> None:
    found = value_kinds(
        "Moved `nox -s tests` to apps/billing/ and settings.toml; GET /api/v2/customers on localhost:8080 "
        "runs 2.24.2 with MR_REDIS_URL, port 6045, and the Identity team owns it."
    )
    assert found["code"] == {"nox -s tests"}
    assert found["path"] == {"apps/billing/", "settings.toml"}
    assert found["address"] == {"get /api/v2/customers", "localhost:8080"}
    assert found["version"] == {"2.24.2"} and found["identifier"] == {"mr_redis_url"} and found["number"] == {"6045"}
    assert found["name"] == {"identity"}
    # an arrow stands between two values: the capital after it is a name, not a sentence's first word
    assert value_kinds("thumbnails changed owner: Merchant Tools → Integrations.")["name"] == {"tools", "integrations"}
    assert value_kinds("owner moved from the Core team -> Billing")["name"] == {"core", "billing"}


def test_values_by_kind() -> None:
    assert value_kinds("Fetch customers with `GET /api/v2/customers`.") == {"address": {"get /api/v2/customers"}}
    assert value_kinds("No longer 2.19.7; use 2.24.2 for numpy.") == {"version": {"2.19.7", "2.24.2"}}
    assert value_kinds("Code owners for search: the Identity team.") == {"name": {"identity"}}
    assert value_kinds("Core API owns the search module.") == {"name": {"core api"}}
    assert value_kinds("ops-console is exposed on port 5008.") == {"number": {"5008"}, "identifier": {"ops-console"}}
    assert value_kinds("Billing code lives in apps/billing/src/.") == {"path": {"apps/billing/src/"}}
    assert value_kinds("the tests pass") == {}


def test_references_and_ticket_keys_are_identifiers_not_numbers() -> None:
    assert value_kinds("PR #412 fixed BUG7781 in parser::LEXER.") == {"identifier": {"pr #412", "bug7781", "parser::lexer"}}
    assert value_kinds("RFC 7231 says so; the port is 7231.") == {"identifier": {"rfc 7231"}, "number": {"7231"}}


def test_a_code_span_takes_the_kind_of_its_text() -> None:
    assert value_kinds("Moved from `src/app/` to lib/app/.") == {"path": {"src/app/", "lib/app/"}}
    assert value_kinds("Run `nox -s tests` on port `8080`.") == {"code": {"nox -s tests"}, "number": {"8080"}}
    assert value_kinds("Call `parseDate` there.") == {"identifier": {"parsedate"}}
