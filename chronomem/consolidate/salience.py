"""Salience and decay: recall hits reinforce memories in the background; unused memories fade in rank.

Two sources of reinforcement raise a row's stored `salience`:
- a repeated statement of a fact (+0.5, `resolve.REINFORCE_STEP`, at write time);
- a recall hit (+`HIT_STEP`, applied here in a batch by the consolidator, never on the
  read path: `HitLog.record` only appends ids to memory).

`apply_hits` never rewrites a memory row (rows are written once): it appends each hit row's new
state to the `usage` side table (storage/usage.py) — the last hit's time, the count of hits, and
the salience they added (`boost`) — and every read attaches the latest state to the row
(`MemoryRecord.with_usage`: `record.salience` is the stored salience plus the boost, and
`record.usage.seen_at` the last hit). A restated fact's step is recorded the same way
(consolidate/apply.py).

Decay is computed at read time (`chronomem.facts.effective_salience`), so no row is rewritten
as time passes and nothing is ever removed by it:

    effective_salience = salience * 0.5 ** (age / HALF_LIFE)

where `age` is the time since the row was last reinforced (`last_reinforced`: the latest of
its creation, the newest chunk that restated it, and its last recall hit). `HALF_LIFE` is
90 days: a fact nobody has stated or recalled for a quarter counts half.

Ranking (retrieval/rank.py) adds `RankConfig.salience_weight × log1p(effective salience)` to
a memory's score: a bounded bonus that lets reinforced memories lead among equally relevant
ones and never gates a result; the brief (tools/brief.py) orders facts by it. Hits are
recorded only for `recall` (not `as_of`: looking at the past is not a sign the past matters now).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from collections.abc import Iterable
from datetime import datetime, timedelta

from chronomem.records import Usage
from chronomem.service import MemoryService
from chronomem.storage import Filter

#: What one recall hit adds to `salience`.
HIT_STEP = 0.1
#: Hits within this long of the previous one refresh the time but add nothing (one session is one signal).
HIT_COOLDOWN = timedelta(minutes=30)
#: Stored salience never grows beyond this.
MAX_SALIENCE = 10.0
#: Most hit ids applied per consolidator step.
HIT_BATCH = 256


class HitLog:
    """Ids recall returned, waiting for the consolidator (in memory only: a lost hit only costs ranking)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._hits: dict[str, datetime] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def record(self, ids: Iterable[str], at: datetime) -> None:
        with self._lock:
            for memory_id in ids:
                if len(self._hits) >= self.limit and memory_id not in self._hits:
                    break  # a flood of hits while the consolidator is busy: keep what we have
                self._hits[memory_id] = at

    def take(self, n: int = HIT_BATCH) -> dict[str, datetime]:
        with self._lock:
            taken = dict(list(self._hits.items())[:n])
            for memory_id in taken:
                del self._hits[memory_id]
            return taken

    def __len__(self) -> int:
        with self._lock:
            return len(self._hits)


def apply_hits(svc: MemoryService, hits: dict[str, datetime]) -> int:
    """Record the hits on the live rows among `hits` in the usage table, in one commit; returns rows reinforced."""
    if not hits:
        return 0
    store = svc.store
    with svc.writing():
        rows = store.find(Filter().ids(list(hits)).known(svc.now()))
        states = []
        for row in rows:
            at = hits[row.id]
            state = row.usage or Usage(id=row.id, at=at)
            previous = state.seen_at
            bump = 0.0 if previous is not None and at - previous < HIT_COOLDOWN else HIT_STEP
            bump = max(min(row.salience + bump, MAX_SALIENCE) - row.salience, 0.0)
            states.append(
                replace(
                    state,
                    at=max(at, state.at),
                    seen_at=max(at, previous or at),
                    hits=state.hits + 1,
                    boost=state.boost + bump,
                )
            )
        store.usage.append(states)
    return len(states)


# ------------------------------------------------------------------------------ the salience of an event alone
#: The zipf frequency (log10 per billion words, wordfreq) at and above which a word is a function word: `the` 7.7,
#: `of` 7.5, `about` 6.3, `which` 6.2 sit above it; ordinary content words (`deploy` 3.7, `fine` 5.3) below.
FUNCTION_ZIPF = 6.0
#: Information (in zipf points below FUNCTION_ZIPF) at which an event's salience is one half: one identifier,
#: number or word English does not use (zipf 0) carries exactly this much.
HALF_SALIENCE_INFORMATION = FUNCTION_ZIPF


def word_information(token: str) -> float:
    """How much one token of an event says, in zipf points below a function word's frequency (0 … FUNCTION_ZIPF):
    an identifier, a path, a number or a version (anything with a digit or a joiner inside: `ledger-api`,
    `src/auth`, `3.11`, `ERR_TIMEOUT`) says the most; a common word little; a function word nothing."""
    if any(ch.isdigit() for ch in token) or any(ch in "_-./:#@+" for ch in token.strip("_-./:#@+")):
        return FUNCTION_ZIPF
    from chronomem.search.english import word_zipf

    return max(FUNCTION_ZIPF - word_zipf(token), 0.0)


def event_salience(text: str) -> float:
    """The salience of a statement on its own, in [0, 1): 1 − 2^(−information / HALF_SALIENCE_INFORMATION), where
    the information sums `word_information` over the statement's distinct tokens (a repeated word says nothing new).

    Filler ("running the tests now", "ok, done") is made of frequent words and scores low; a statement that names
    things (identifiers, versions, paths, numbers, rare words) scores high, however it is phrased. Pure and cheap:
    no store, no model (wordfreq's offline frequency list)."""
    from chronomem.search.terms import tokens

    information = sum(word_information(token) for token in dict.fromkeys(t.lower() for t in tokens(text)))
    return 1.0 - 0.5 ** (information / HALF_SALIENCE_INFORMATION)
