"""The values a memory states, by kind: pure, no I/O.

A statement about a thing gives it a value of some kind: an address (`GET /api/v2/customers`,
`https://…`, `localhost:8080`), a path (`apps/billing/`, `settings.toml`), a version (`2.24.2`), a
number (a port, a size), a code span (`` `nox -s tests` ``), an identifier (`billing-worker`,
`MR_REDIS_URL`) or a name written with a capital in mid-sentence (`the Identity team`). Ranking asks
which values a later note shares with an older one, kind by kind (`rank.successor_of`). The kinds are the shapes of
values in technical writing, not any data set's phrasing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from chronomem.search.terms import CALENDAR_WORDS, STOP_WORDS

ValueKinds = dict[str, frozenset[str]]

#: (kind, hint, pattern): `pattern` reads the values of a kind; `hint` tests for what every match of it holds (a "://",
#: a backtick, a slash, two digits in a row…), first, so that a text without it skips the pattern — most texts skip
#: most kinds. The hints run on every text of a recall's pool, so each is written in a form the regex engine finds
#: fast: alternatives that each begin with a literal, or with a character class after which a lookbehind checks the
#: rest, let it jump straight to where a match can begin; `in` is faster still. The patterns say the same as plain
#: ones, written to scan fast: a lookahead on the first character lets the regex engine skip to where a match can
#: start, and a possessive run (`*+`, `++`) where the next character cannot belong to the run stops it trying every
#: shorter one (each checked to match as before on ~50k texts of LoCoMo and both DevMem splits;
#: tests/retrieval/test_values.py).
_CAPITAL_AFTER_LETTER = re.compile(r"[A-Z](?<=[A-Za-z][A-Z])")
_KINDS: tuple[tuple[str, Callable[[str], object], re.Pattern[str]], ...] = (
    (
        "address",
        re.compile(r"://|localhost:|GET\s|POST\s|PUT\s|PATCH\s|DELETE\s|HEAD\s").search,
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s`'\"<>)]+|\b(?:GET|POST|PUT|PATCH|DELETE|HEAD)\s+/\S*|\blocalhost:\d+"),
    ),
    ("code", lambda text: "`" in text, re.compile(r"`([^`\n]{1,200})`")),
    (
        "path",
        re.compile(r"/|\.[a-z]").search,
        re.compile(r"(?<![:/\w.])(?:[\w.-]++/)+[\w.-]*+|(?<![\w./])(?=[\w-]*[A-Za-z_])[\w-]*+\.[a-z]{2,8}(?![\w/]|\.\w)"),
    ),
    (
        "version",
        re.compile(r"\d\.\d").search,
        re.compile(r"(?=[v\d])(?:(?<![\w.])v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?(?![\w.]*\w))"),
    ),
    # joined by -, _ or :: (`billing-worker`, `MR_REDIS_URL`, `PAY-7233`, `refunds::DEADLOCK`), with a capital
    # inside (`DevEx`, `parseDate`), a ticket key (`CON5449`), or a reference: capitals and a number (`CL 18873`,
    # `PR #412`, `RFC 7231`) — read before plain numbers, so a change list's number is not taken for a value
    (
        "identifier",
        lambda text: "_" in text or "-" in text or "::" in text or _CAPITAL_AFTER_LETTER.search(text) is not None,
        re.compile(
            r"(?=[A-Za-z])(?:\b[A-Z]{2,}(?: #?|#)\d+\b|\b[A-Za-z][A-Za-z0-9]*+(?:(?:[_-]|::)[A-Za-z0-9]++)+\b"
            r"|\b[A-Za-z][a-z]++[A-Z]\w*+\b|\b[A-Z]{2,}\d+\b)"
        ),
    ),
    ("number", re.compile(r"\d\d").search, re.compile(r"(?=\d)(?:(?<![\w#.\-/:])\d{2,}(?![\w.]*[A-Za-z])(?!\.\d))")),
)
#: A name (a person, a team, a product): capitalised words after the first word of a clause or after an arrow
#: ("Merchant Tools → Integrations": the arrow stands between two values), or two or more at its start ("Core API
#: owns …"), where one capital could be the sentence's; and what every such name holds.
_NAME = re.compile(
    r"(?=[A-Z])(?:(?<=[a-z0-9,;)→>] )[A-Z][a-z][\w'-]*+(?: [A-Z][\w'-]*+)*|(?:^|(?<=[.!?] ))[A-Z][\w'-]*+(?: [A-Z][\w'-]*+)+)"
)
_NAME_HINT = re.compile(r"[a-z0-9,;)→>] [A-Z][a-z]|[A-Z][\w'-]* [A-Z]")
_SPACE_CAPITAL = re.compile(" [A-Z]")  # what every match of the name hint holds, found faster
_TRAILING = ".,;:!?`'\")"


def _shape(code: str) -> str:
    """The kind of a code span's text when the whole of it has the shape of another kind (`src/app/` is a path
    with or without backticks), else "code"."""
    for kind, hint, pattern in _KINDS:
        if kind != "code" and hint(code) and (match := pattern.match(code)) and match.end() == len(code):
            return kind
    return "code"


@lru_cache(maxsize=16384)  # the same memories come back query after query
def value_kinds(text: str) -> ValueKinds:
    """The values `text` states, lower-cased, by kind (a kind with none is left out)."""
    out: dict[str, set[str]] = {}
    taken: list[tuple[int, int]] = []  # spans already read as a value of an earlier kind
    for kind, hint, pattern in _KINDS:
        if not hint(text):
            continue
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue  # part of a value already read (a route inside a code span is an address)
            taken.append(match.span())
            value = (match.group(1) if match.re.groups else match.group()).rstrip(_TRAILING)
            if value:
                out.setdefault(_shape(value) if kind == "code" else kind, set()).add(value.lower())
    named = _SPACE_CAPITAL.search(text) is not None and _NAME_HINT.search(text) is not None
    for match in _NAME.finditer(text) if named else ():
        words = [w for w in match.group().lower().split() if w not in STOP_WORDS and w not in CALENDAR_WORDS]
        if words and not any(start < match.end() and match.start() < end for start, end in taken):
            out.setdefault("name", set()).add(" ".join(words))
    return {kind: frozenset(found) for kind, found in out.items()}
