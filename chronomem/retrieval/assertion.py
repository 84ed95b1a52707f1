"""Whether a memory asserts the value it names, or only mentions it: pure, no I/O.

A note can name a value without saying it holds: "Saw 6045 used as the port in a tutorial; that's
not how this repo does it", "Asked whether the env var could become `X_URL`; no decision". English
marks such a clause with a closed class of words — the negators and the words of doubt or question
(`UNASSERTING_CUES`) — the cue words that negation and hedge detection have long used (NegEx; the
CoNLL-2010 hedge cues), not any data set's phrasing.

A cue alone does not make a mention: a retraction ("I can't back up DevEx as the owner of uploads")
and a fix ("`sync_retry` no longer flakes") use the same words to take back or close what an older
memory said. What tells them apart is structure: a mention brings a value of its own — one that no
older memory in the candidate pool names — while a correction names only what older memories
already name, and an update names the old value beside the new ("No longer 2.19.7; use 2.24.2"). So
`mentions` marks a memory that carries a cue and, in some kind of value, only values new to the pool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from chronomem.retrieval.values import value_kinds

#: The negators (not, no, never, none, nor, neither, nothing, nobody, without, -n't) and the words of doubt
#: or question (whether, might, maybe, perhaps, could, would, a question mark ending a clause — not the `?` of a
#: URL's query string): closed classes of English. "may" is left out (a month as often as a modal); "should"
#: too (an instruction asserts). A cue joined to other characters by `-`, `_`, `/` or `.` is part of a name, not
#: a word: `strict-no-cover`, `--no-verify`, `no_proxy`.
UNASSERTING_CUES = re.compile(
    r"(?<![\w\-/.])(?:not|no|never|none|nor|neither|nothing|nobody|without|whether|might|maybe|perhaps|could|would)"
    r"(?![\w\-/]|\.\w)"
    r"|n't\b|\?(?=[\s\"')\]]|$)"
)


@lru_cache(maxsize=16384)  # the same memories come back query after query
def unasserting(text: str) -> bool:
    """Whether `text` carries a negator or a word of doubt or question."""
    return UNASSERTING_CUES.search(text.lower()) is not None


def mentions(texts: Sequence[str], times: Sequence[datetime]) -> list[bool]:
    """For each memory (text, valid time) of a pool: does it only mention a value rather than assert it?

    True when the text carries an unasserting cue and, in some kind of value (values.py), names only values
    that no memory of the pool valid before it names: a value put forward, not held. A cue over values older
    memories gave is not a mention: a retraction or a fix takes back what they said ("`sync_test` no longer
    flakes"), an update replaces it ("No longer 2.19.7; use 2.24.2").
    """
    out = [False] * len(texts)
    cued = {i for i, text in enumerate(texts) if unasserting(text)}
    if not cued:
        return out
    last = max(times[i] for i in cued)  # memories valid after the newest cued one matter to none
    older: dict[str, set[str]] = {}  # by kind, the values named by the memories valid before the current time
    order = sorted((i for i in range(len(texts)) if times[i] <= last), key=lambda i: times[i])
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and times[order[end]] == times[order[start]]:
            end += 1
        for i in order[start:end]:
            if i in cued:
                kinds = value_kinds(texts[i])
                out[i] = any(not (found & older.get(kind, set())) for kind, found in kinds.items())
        for i in order[start:end]:
            for kind, found in value_kinds(texts[i]).items():
                older.setdefault(kind, set()).update(found)
        start = end
    return out
