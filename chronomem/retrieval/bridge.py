"""The second hop: a question whose answer sits in a memory that the best match points to.

"Which port do I use for the auth module?" finds "auth is deployed as part of notifications-svc";
the port is in "notifications-svc listens on port 8576", which shares no word with the question but
the name the first memory brought. When the best match leaves some of the question's terms
uncovered and names things the question does not, one full-text search for those names with the
question's uncovered words looks for the memory that closes the gap. Of the matches that carry one
of the names, the one closest in meaning to the uncovered words (the cosine of its vector to theirs)
joins the first five results (fifth), unless it is there. Meaning, not a shared word: the memory that
answers "which team lead do I contact?" says "the Localization team is led by Astrid Holm", and the
one for "which channel" says "ping them in #fraud-kt on Slack".

Pure except for the searcher's lexical lookup (`Searcher.lexical`) and the embedding of the uncovered words
(`meaning`); the first four places are never taken, so a one-hop answer, and the next best matches, keep theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from chronomem.records import MemoryRecord
from chronomem.retrieval.rank import QueryInfo, query_terms
from chronomem.search.candidates import Searcher, cosine
from chronomem.search.terms import entities, terms

#: Names of the best match the second search looks for, at most.
MAX_BRIDGE_NAMES = 3
#: How many full-text matches the second search reads.
BRIDGE_SEARCH_LIMIT = 8
#: Where the second hop's memory goes (0-based): fifth, so it joins the first five without pushing the
#: best matches down (a two-memory answer needs both among the first few, not the second one second).
BRIDGE_POSITION = 4


T = TypeVar("T")


@dataclass(frozen=True)
class Bridge:
    """A memory found through a name of the best match, and the search that found it."""

    record: MemoryRecord
    lexical: float
    names: tuple[str, ...]
    search: str


def bridge_search(
    searcher: Searcher, query: QueryInfo, ranked: list[MemoryRecord], meaning: Callable[[str], Sequence[float]]
) -> Bridge | None:
    """The memory that answers what the best of `ranked` leaves open, when it is not already near the top.
    `meaning` embeds a phrase (the question's uncovered words)."""
    if not ranked:
        return None
    top = ranked[0]
    asked = query_terms(query)
    uncovered = asked - set(terms(top.content))
    if not uncovered:
        return None
    ignore = set(query.project_names) | set(query.other_project_names)
    named = entities(query.text, ignore=ignore)
    new_names = sorted(entities(top.content, ignore=ignore) - named, key=lambda n: (-len(n), n))
    new_names = [n for n in new_names if not set(terms(n)) <= asked][:MAX_BRIDGE_NAMES]
    if not new_names:
        return None
    words = [w for w in query.text.split() if set(terms(w)) & uncovered]
    search = " ".join([*new_names, *words])
    carriers = []
    for record, score in searcher.lexical(search, BRIDGE_SEARCH_LIMIT, with_vectors=True):
        text = record.content.lower()
        carried = tuple(n for n in new_names if n in text)
        if carried and record.id != top.id and record.vector is not None:
            carriers.append(Bridge(record, score, carried, search))
    if not carriers:
        return None
    found = carriers[0]
    if len(carriers) > 1:  # a choice to make: only then embed the uncovered words
        gap = meaning(" ".join(words) or query.text)
        found = max(carriers, key=lambda c: cosine(gap, c.record.vector))  # type: ignore[arg-type]
    if found.record.id in {r.id for r in ranked[: BRIDGE_POSITION + 1]}:
        return None
    return found


def placed(ranked: list[T], found: T, id_of: Callable[[T], str]) -> list[T]:
    """`ranked` with `found` at the second hop's place (taken out of wherever it stood further down)."""
    key = id_of(found)
    rest = [item for item in ranked if id_of(item) != key]
    return [*rest[:BRIDGE_POSITION], found, *rest[BRIDGE_POSITION:]]
