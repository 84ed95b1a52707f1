"""What both ranking (retrieval/) and consolidation (consolidate/) read off a stored row, as pure functions:
who made a fact (`EXTRACTED_SOURCES`), the words its slot is compared by (`slot_phrase`), how a subject is
compared across a model's namings (`subject_form`, `same_subject`, `identifiers`), and how salient a
row is now (`effective_salience`, `record_salience`; consolidate/salience.py records the reinforcement in the
`usage` side table, which reads attach to each row as `record.usage`: its boost is already in
`record.salience` and its restating chunks in `record.source_ids`, its last recall hit is `usage.seen_at`).

Kept below both so that ranking never imports the consolidator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import lru_cache

from chronomem.records import CODE_SPAN, UTC, MemoryRecord

#: Sources whose facts were extracted by chronomem rather than stated by the agent.
EXTRACTED_SOURCES = frozenset({"rules", "llm"})
#: The source of a fact read off a note by the structure of a slot it restates (consolidate/restate.py): the slot's
#: own names, written by whoever stated its value, with the one new value of its kind the note gives. Not among
#: `EXTRACTED_SOURCES`: it is resolved and ranked like the slot's other facts, so it supersedes an agent's value.
STRUCTURE_SOURCE = "structure"

#: Time for an unreinforced memory's effective salience to halve.
HALF_LIFE = timedelta(days=90)


def slot_phrase(subject: str, predicate: str) -> str:
    """The words a slot is compared by: `proj test command` for (proj, test_command)."""
    return f"{subject} {predicate.replace('_', ' ')}".strip()


_IDENTIFIER = re.compile(r"\S*(?:\d|\w[-./:@#]\w)\S*")
_JOINERS = re.compile(r"[\s_\-]+")
_QUOTES = re.compile(r"[`'\"()\[\]{}]")
#: Leading words that name nothing (English articles and demonstratives).
ARTICLES = frozenset({"the", "a", "an", "this", "our"})
#: A trailing word that only says the subject is a service: `payments`, `payments-svc`, `the payments service`
#: name one thing (the issue's own example, #44), while `payments-db` names another.
_SERVICE_WORDS = frozenset({"service", "svc"})
#: Words after the project's own name that still mean the project (`marrowgate repo`, `the marrowgate project`).
_PROJECT_WORDS = frozenset({"project", "repo", "repository", "codebase"})


def phrase_words(text: str) -> list[str]:
    """A slot phrase's words as compared: lower case, quotes and brackets off, `-`/`_` read as spaces."""
    return [w for w in _JOINERS.sub(" ", _QUOTES.sub(" ", text.lower())).split() if w]


def subject_form(subject: str, project: str) -> str:
    """A subject as compared across namings: case, quotes, `-`/`_`/spaces, a leading article and a trailing
    `service` do not count, and the project's own name (alone or with `repo`/`project` after it) is the project."""
    words = phrase_words(subject)
    while len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    if len(words) > 1 and words[-1] in _SERVICE_WORDS:
        words = words[:-1]
    if len(words) > 1 and words[-1] in _PROJECT_WORDS and words[:-1] == phrase_words(project):
        words = words[:-1]
    return " ".join(words)


@lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")


def _mentions(text: str, name: str) -> bool:
    return name in text and _name_pattern(name).search(text) is not None


def about_other_project(text: str, own_names: Iterable[str], other_names: Iterable[str]) -> bool:
    """Whether a note is about another project of the store: it names one (outside code: `uv run pytest` names
    no project `pytest`) and none of its own (names as people write them, `display_name`)."""
    lowered = text.lower()
    prose = CODE_SPAN.sub(" ", lowered)
    return any(_mentions(prose, o.lower()) for o in other_names) and not any(
        _mentions(lowered, own.lower()) for own in own_names
    )


def identifiers(phrase: str) -> frozenset[str]:
    """Identifier-like tokens of a phrase (with a digit or inner punctuation): `checkout-api`, `inc-5447`."""
    return frozenset(m.group(0).strip(".,;:").lower() for m in _IDENTIFIER.finditer(phrase))


def same_subject(a: str, b: str, project: str) -> bool:
    """Whether two subjects, as a model names them, may name one thing: equal `subject_form`s, or one's words
    all among the other's (`auth` and `auth module`) when both hold the same identifiers (`payments` and
    `payments-db` do not: the hyphenated name is another thing)."""
    form_a, form_b = subject_form(a, project), subject_form(b, project)
    if form_a == form_b:
        return True
    words_a, words_b = set(form_a.split()), set(form_b.split())
    if not (words_a <= words_b or words_b <= words_a):
        return False
    return identifiers(a) == identifiers(b)


def effective_salience(
    salience: float, last_reinforced: datetime, now: datetime, half_life: timedelta = HALF_LIFE
) -> float:
    """`salience` decayed by the time since `last_reinforced` (never negative, never above `salience`)."""
    age = max((now - last_reinforced).total_seconds(), 0.0)
    return max(salience, 0.0) * 0.5 ** (age / half_life.total_seconds())


def last_reinforced(record: MemoryRecord) -> datetime:
    """When `record` was last created, restated or recalled."""
    times = [record.created_at]
    for source in record.source_ids:
        stated = _ulid_time(source)
        if stated is not None:
            times.append(stated)
    seen = record.usage.seen_at if record.usage is not None else None
    if seen is not None:
        times.append(seen)
    return max(times)


def record_salience(record: MemoryRecord, now: datetime) -> float:
    """`effective_salience` of a stored row at `now`."""
    return effective_salience(record.salience, last_reinforced(record), now)


def _ulid_time(value: str) -> datetime | None:
    try:
        from ulid import ULID

        return ULID.from_str(value).datetime.astimezone(UTC)
    except (ValueError, TypeError):
        return None
