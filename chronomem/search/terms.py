"""The tokenizer: words of a query or memory as the lexical channel indexes them and ranking reads them —
code-aware terms and named entities.

`terms` keeps identifiers whole *and* split (`ERR_LEDGER_TIMEOUT` → `err_ledger_timeout`,
`err`, `ledger`, `timeout`; `src/auth/` → `src/auth`, `src`, `auth`; `parseHTTPDate` →
`parsehttpdate`, `parse`, `http`, `date`), drops stop words, and folds simple plurals.
`entities` picks out what a question names — mixed-case words, identifiers, paths,
versions, hyphenated names — the things whose absence from the store means it holds
nothing on the subject.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from chronomem.search.english import common_word, word_lists

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each few for from further had has have
    having he her here hers him his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours out over own same she should so some such than that the their
    theirs them then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours
    anything something thing things know tell remind remember recall recorded stored notes note say said says
    get got give show want wants like use uses used using right currently current still latest please quick
    one""".split()
)

#: A word of any script (Unicode letters and digits), or identifiers joined by `_-./:#@+`.
_TOKEN = re.compile(r"[^\W_]+(?:[_\-./:#@+][^\W_]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SPLIT = re.compile(r"[_\-./:#@+]+")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # the Snowball English stemmer: the same family LanceDB's full-text index uses

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Stem plain English words so `ports`/`port` and `pinned`/`pin` meet; identifiers and words of other
    scripts are left alone (the stemmer is English's).

    The stemmer keeps agent nouns whole (`owner`, `server`, `worker`); their `-er` goes too, so
    "who is the owner" meets "Infra owns it" and "served by" meets "server" (stems under five
    letters keep it: `user`, `over`).
    """
    if not word.isalpha() or not word.isascii():
        return word
    stem = str(_stemmer().stemWord(word))
    return stem[:-2] if len(stem) >= 5 and stem.endswith("er") else stem


def tokens(text: str) -> list[str]:
    """The words and whole identifiers of `text` as written (`ledger-api`, `src/auth`, `3.11`), nothing dropped."""
    return _TOKEN.findall(text)


def terms(text: str) -> list[str]:
    """Case-folded, stemmed (English) terms with identifiers both whole and split; stop words dropped.

    Every script is read: words are Unicode letters and digits, case-folded, without diacritics (Arabic's
    short vowels, Hebrew's points, accents: `café` meets `cafe`); a single letter counts only outside ASCII
    (a CJK word written alone)."""
    return list(iter_terms(text))


def iter_terms(text: str, lazy: bool = False) -> Iterator[str]:
    """`terms`, one at a time. With `lazy` the text is read only as far as the caller takes terms: for one that
    usually stops at the first (reading all of a text's words at once is ~1.8x faster than one at a time)."""
    if not text.isascii():
        text = _without_marks(text)
    for raw in (match.group() for match in _TOKEN.finditer(text)) if lazy else _TOKEN.findall(text):
        if raw.isalnum():
            tail = raw[1:]
            if tail == tail.lower():  # a plain word or number (most tokens): one piece, nothing to split
                piece = raw.casefold()
                if piece not in STOP_WORDS and _kept(piece):
                    yield fold(piece)
                continue
            pieces = [raw, *_CAMEL.findall(raw)]
        else:
            pieces = [raw, *(p for p in _SPLIT.split(raw) if p)]
        for piece in dict.fromkeys(p.casefold() for p in pieces):
            if piece not in STOP_WORDS and _kept(piece):
                yield fold(piece)


def indexed_terms(content: str, kind: str) -> list[str]:
    """The terms a row is searched by. A fact counts each once: its sentence often repeats its subject
    in the value ("harborview module path:notifications: cmd/notifications/"), which is not emphasis,
    and BM25 ranked that sibling above the fact a question asked for ("… module owner:notifications: Infra")."""
    found = terms(content)
    return list(dict.fromkeys(found)) if kind == "fact" else found


def row_terms(content: str, kind: str) -> str:
    """A row's `terms` column (storage/schema.py): `indexed_terms` joined by spaces. No term holds a space (a term
    is a run of letters, digits and `_-./:#@+`), so LanceDB's `whitespace` tokenizer gives back exactly these."""
    return " ".join(indexed_terms(content, kind))


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in order: what the lexical channel searches for (each term once)."""
    return list(dict.fromkeys(terms(text)))


def _kept(piece: str) -> bool:
    return len(piece) > 1 or piece.isdigit() or not piece.isascii()


def _without_marks(text: str) -> str:
    """`text` without its marks (Unicode category M: accents, Arabic's harakat, Hebrew's points, Indic vowel
    signs), recomposed. A regular expression's \\w does not match a mark, so a word with one inside would be
    cut in two; without them the word stays whole, on the query's side as on the memory's."""
    decomposed = unicodedata.normalize("NFKD", text)
    marks = {ord(c): None for c in set(decomposed) if unicodedata.category(c).startswith("M")}  # each letter once
    return unicodedata.normalize("NFC", decomposed.translate(marks) if marks else decomposed)


_ENTITY = re.compile(r"`([^`]{2,80})`|([A-Za-z0-9]+(?:[_\-./:#@+][A-Za-z0-9]+)+/?)|\b([A-Za-z]*[A-Z][A-Za-z0-9]*)\b")
_DATEISH = re.compile(r"^\d{1,4}(?:[-/.:]\d{1,4})*(?:z|am|pm|th|st|nd|rd)?$")
CALENDAR_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday".split()
)


#: What joins a name's parts: `pydantic-ai`, `pydantic_ai`, `Pydantic AI` are the project `pydanticai`.
_NAME_JOINERS = frozenset("-_ ")


def without_name(text: str, name: str) -> str:
    """`text` without the words naming `name` (whole words, case-insensitive, `'s` included).

    A search scoped to one project gains nothing from the project's name in the query — every
    memory searched belongs to it — while the lexical and dense channels would favour the
    memories that happen to spell it out. Text that is nothing but the name is kept as it is.
    The name counts however its parts are joined (project `pydanticai` is named by "pydantic-ai",
    "pydantic_ai" and "Pydantic AI"), and not where it is part of an identifier, a path or an
    address: `Effect.interrupt` and `effect/src` keep project `effect`'s name, `copperfield-api` project
    `copperfield`'s.
    """
    parts = [c for c in name if c not in _NAME_JOINERS]
    if not parts:
        return text
    spelled = "[-_ ]?".join(re.escape(c) for c in parts)
    pattern = re.compile(r"(?<![\w./:@-])" + spelled + r"(?:'s)?(?![\w-]|[./:@]\w)", re.IGNORECASE)
    if not pattern.search(text):
        return text
    out = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(pattern.sub(" ", text).split()))
    return out if out.strip(" ?.!,;:'\"") else text


def entities(text: str, ignore: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Named things in `text` (lower-cased): identifiers, paths, versions, mixed-case and hyphenated names.

    A capitalised word that only starts a sentence is not a name; dates, weekdays,
    months, stop words and anything in `ignore` (e.g. project names) are skipped.
    """
    return set(named_things(text, ignore))


def named_things(text: str, ignore: frozenset[str] | set[str] = frozenset()) -> dict[str, bool]:
    """`entities` with whether each is an identifier (True) or a plain word (False).

    An identifier — backticked, an abbreviation (`SLA`), or with a digit, a separator (`catalog-svc`,
    `socket.io`, `src/auth`) or capitals inside it (`GraphQL`, `parseHTTPDate`) — is spelled one way:
    if the store never spells it, the store holds nothing on it. A plain capitalised word (`Vivaldi`,
    `European`) may be what a memory says in other words (`Europe`, "classical music"). An English
    compound (`transgender-specific`, `pre-release`: `english_compound`) describes rather than names,
    like any other word, and a compound of stop words and single letters (`and/or`, `U.S.`) names nothing.
    """
    found: dict[str, bool] = {}
    for match in _ENTITY.finditer(text):
        raw = next(g for g in match.groups() if g)
        if match.group(3) and re.fullmatch(r"[A-Z][a-z]+", raw):
            before = text[: match.start()].rstrip()
            if not before or before[-1] in ".?!:\"'(":
                continue
        value = raw.strip().strip(".,;:?!()'\"").lower()
        if value.endswith("'s"):
            value = value[:-2]
        if (
            len(value) < 2
            or value in STOP_WORDS
            or value in CALENDAR_WORDS
            or value in ignore
            or _DATEISH.match(value)
            or value.rstrip("s") in ignore
            or all(len(p) < 2 or p in STOP_WORDS for p in _SPLIT.split(value))
        ):
            continue
        if match.group(1) is None and raw[1:].islower() and english_compound(value):
            continue  # written as prose ("Re-running", "pre-release"); in backticks or with capitals inside, a name
        plain = (
            match.group(3) is not None and raw.isalpha() and not raw.isupper() and not re.search(r"[a-z][A-Z]", raw)
        )
        found[value] = found.get(value, False) or not plain
    return found


#: Words that make an English compound of the word they join (`transgender-specific`, `career-wise`,
#: `pre-release`, `non-blocking`): a closed class of English word formation, not a naming scheme.
_COMBINING_SUFFIXES = frozenset(
    "specific wise related based like free friendly oriented style level wide proof ready aware centric driven "
    "focused sized term time long old made minded".split()
)
_COMBINING_PREFIXES = frozenset("non pre post self re co anti multi semi sub inter over under well ex mid".split())
#: The particles of English phrasal nouns (`sign-off`, `follow-up`, `roll-out`, `check-in`): closed classes too.
_PARTICLES = frozenset("off up out in on down over back away through".split())
#: Numerals that begin a compound adjective (`third-party`, `two-factor`, `first-class`, `single-page`).
_NUMERALS = frozenset(
    "zero one two three four five six seven eight nine ten first second third fourth fifth single double triple "
    "half".split()
)


def english_compound(name: str) -> bool:
    """A lower-case pair of words joined by a hyphen that English forms (`wars-related`, `self-hosted`,
    `sign-off`, `third-party`, `card-playing`): not a name but a description, which a memory may well give in other words
    ("related to the war", "the owner approves", "a library from outside")."""
    first, hyphen, last = name.partition("-")
    return (
        bool(hyphen)
        and first.isalpha()
        and last.isalpha()
        and first.islower()
        and last.islower()
        and (
            last in _COMBINING_SUFFIXES
            or last in _PARTICLES
            or first in _COMBINING_PREFIXES
            or first in _NUMERALS
            # a noun and a participle (`card-playing`, `record-breaking`, `hand-written`): English forms these freely
            or (last.endswith(("ing", "ed", "en")) and common_word(last) and common_word(first))
        )
    )


def warm() -> None:
    """Load what the first query would otherwise wait for (the word lists, the stemmer), for a warm-up thread."""
    word_lists()
    _stemmer()


def _word_or_its_s_form(word: str) -> str:
    """A pattern for a word with or without its `-s` ending (`test` and `tests`)."""
    stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
    return re.escape(stem) + "s?"


#: What goes on after the end of an identifier within a longer one: a letter, a digit, `_`, or `-` and one of those.
_LONGER_NAME = re.compile(r"\w|-\w")


def holds_name(text: str, name: str) -> bool:
    """Whether lower-cased `text` holds the lower-cased `name`. A word is found inside longer ones as before
    (`payments` in "payments-svc"); a name with a digit or a separator is found only where it ends: a longer
    identifier that begins with it names another thing (`kt_db_max_conns_v2` is not `kt_db_max_conns`,
    `contracts::bad_cursor-v2` not `contracts::bad_cursor`), while a path below a folder still counts
    (`src/auth/login.py` holds `src/auth`)."""
    if name.isalpha():
        return name in text
    start = text.find(name)
    while start >= 0:
        if not _LONGER_NAME.match(text, start + len(name)):
            return True
        start = text.find(name, start + 1)
    return False


def mentioned(name: str, text: str, identifier: bool | None = True) -> bool:
    """Whether lower-cased `text` mentions the lower-cased name: verbatim (`holds_name`), a hyphenated name of
    words with its words apart or with a word's `-s` form (`ice-cream` in "ice cream", `test-only` in
    "tests-only") but not where more of a longer name follows (`billing-worker-v2`, as `holds_name` reads it),
    or a plain word's `-s` form by its stem (`Johns` → john)."""
    if holds_name(text, name):
        return True
    parts = name.split("-")
    if len(parts) > 1 and all(p.isalpha() for p in parts):
        if re.search(r"\b" + r"[\s_-]+".join(_word_or_its_s_form(p) for p in parts) + r"\b(?!-\w)", text):
            return True
    if not identifier and name.endswith("s") and len(name) > 4:
        return re.search(r"\b" + re.escape(name[:-1]) + r"\b", text) is not None
    return False
