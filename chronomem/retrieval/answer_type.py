"""The expected answer type: what kind of thing a question asks for, and which memories hold one.

Question answering has long typed a question's answer from its wh-word and the noun it asks about:
"who" wants a person, "which folder" a path, "what URL" an address, "which port" a number. A memory
about the right thing that also holds that kind of answer ("Owner of webhooks: Growth.", "inventory
code: `quillstack/inventory/`", "billing-worker binds 5180") is likelier the answer than its siblings
about the same thing that do not ("webhooks code: `libs/webhooks/`" for "whose sign-off do I need?",
"inventory is deployed as part of inventory-svc" for "which folder do I open?").

No I/O: `expected_answer_type(question)` reads the type off the question, and
`AnswerTypes(pool texts, ignore).holds(text, kind)` says whether a memory holds one.
The cues are English's head nouns for these kinds of thing, not any data set's phrasings.

Measured against issue 45's rule (a word list goes unless it pays on dev, devmem_validation and
agentfiles_validation), 2026-11-29: it pays on both DevMem splits (recall's ranking as an eval ranker, macro
hit@1 0.758 with it, 0.736 without on dev; 0.708 and 0.666 on validation, paraphrase most of all) and moves
nothing on agentfiles_validation, whose questions never ask "who" or "which folder" of an answerable thing, nor on
LoCoMo's R@10. Reading the kind off the pool instead (the kind of value the pool's memories that use a question's
word give: a port's notes give numbers) did worse than either: 0.723 on dev, 0.686 on validation. It stays until a
mechanism does its work.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import cached_property
from typing import Literal

from chronomem.search.terms import CALENDAR_WORDS, STOP_WORDS, fold

AnswerType = Literal["person", "address", "path", "number"]

_WHO = re.compile(r"\bwho(?:m|se)?\b", re.I)
#: "which"/"what" and, within a few words, the noun the question asks about ("which part of the repo tree",
#: "what values has the directory of X had").
_ASKED_NOUN = r"\b(?:which|what)\b(?:\s+[\w'-]+){{0,5}}?\s+(?:{nouns})s?\b"
_ADDRESS = re.compile(_ASKED_NOUN.format(nouns="url|uri|link|address|endpoint|route|web ?page|website"), re.I)
_PATH = re.compile(_ASKED_NOUN.format(nouns="folder|directory|dir|path|file|tree|subtree"), re.I)
_NUMBER = re.compile(_ASKED_NOUN.format(nouns="number|port|socket"), re.I)
_ASKED_KINDS: tuple[tuple[AnswerType, re.Pattern[str]], ...] = (
    ("address", _ADDRESS), ("path", _PATH), ("number", _NUMBER)
)

#: A URL, an HTTP route ("GET /api/v1/reports"), or a local address ("localhost:3245").
_HOLDS_ADDRESS = re.compile(r"\b[a-z][a-z0-9+.-]*://\S|\b(?:GET|POST|PUT|PATCH|DELETE|HEAD)\s+/|\blocalhost:\d")
#: A path: words joined by slashes ("apps/reporting/", "pkg/billing"), not a URL's (none begins after a ":" or
#: a "/", so "https://host/a/b" holds none; a file's name ending one does count); or a file's name
#: ("settings.toml", "schema.graphql"), not a dotted name ("app.http.client") or an abbreviation ("e.g.").
_HOLDS_PATH = re.compile(
    r"(?<![:/\w])(?:[\w.-]+/)+[\w.-]*(?<!:)"  # a path
    r"|(?<![\w.])[\w-]*[A-Za-z_][\w-]*\.[a-z]{2,8}(?!\w|\.\w)"  # a file's name
)
#: A number of two or more digits standing alone ("binds 5180", ":3245"), not part of a name ("PAY-7233",
#: "PR #314", "ADR-006") or of a version ("3.11").
_HOLDS_NUMBER = re.compile(r"(?<![\w#.\-/])\d{2,}(?![\w.-]*[A-Za-z])(?!\.\d)")
#: A capitalised word (not an abbreviation); `_sentence_start` tells which begin a sentence or a clause.
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w'-]*")


def expected_answer_type(question: str) -> AnswerType | None:
    """The kind of thing `question` asks for, when its wording says: a person (who, whose), an address
    (what URL, which endpoint), a path (which folder, which part of the repo tree) or a number (which
    port); else None."""
    if _WHO.search(question):
        return "person"
    for kind, pattern in _ASKED_KINDS:
        if pattern.search(question):
            return kind
    return None


class AnswerTypes:
    """Which memories of a candidate pool hold an answer of a given type.

    A person or a team is named by a capitalised word that is not one of `ignore` (the question's words,
    the project names), a stop word, a month or a weekday. A word that begins a sentence ("Infra owns
    catalog", "Look in `apps/`") or follows a label ("Pinecask: Grab the key") may be capitalised only
    for its place, so it counts as a name only where the pool also writes it capitalised in the middle
    of a sentence ("owned by Infra") — names keep their capital everywhere, other words do not.
    """

    def __init__(self, texts: Iterable[str], ignore: Collection[str]) -> None:
        self.texts = texts
        self.ignore = ignore

    @cached_property
    def mid_sentence_names(self) -> set[str]:
        """The words the pool writes capitalised in the middle of a sentence (read once, for "who" only)."""
        return {word for text in self.texts for word, starts in self._capitalised(text) if not starts}

    def holds(self, text: str, kind: AnswerType) -> bool:
        if kind == "address":
            return bool(_HOLDS_ADDRESS.search(text))
        if kind == "path":
            return bool(_HOLDS_PATH.search(text))
        if kind == "number":
            return bool(_HOLDS_NUMBER.search(text))
        return any(not starts or word in self.mid_sentence_names for word, starts in self._capitalised(text))

    def _capitalised(self, text: str) -> Iterable[tuple[str, bool]]:
        """The candidate names of `text`, lower-cased, each with whether its place may explain its capital."""
        for match in _CAPITALISED.finditer(text):
            word = match.group().lower().removesuffix("'s")
            if word in STOP_WORDS or word in CALENDAR_WORDS or word in self.ignore or fold(word) in self.ignore:
                continue
            yield word, _sentence_start(text, match.start(), match.end())


def _sentence_start(text: str, start: int, end: int) -> bool:
    """Whether the word at text[start:end] begins the text, a sentence, or a clause after a label
    ("Pinecask: Look in …") — a value after a label ("Owner of webhooks: Growth.") ends the sentence."""
    before = text[:start].rstrip(" \t\"'(")
    if not before or before[-1] in ".!?-–—\n":
        return True
    if before[-1] == ":":
        rest = text[end:].lstrip(" ,")
        return bool(rest) and rest[0].islower()
    return False
