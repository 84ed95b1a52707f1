"""Salience and decay: recall hits reinforce memories in the background; unused memories fade in rank.

Two sources of reinforcement raise a row's stored `salience`:
- a repeated statement of a fact (+0.5, `resolve.REINFORCE_STEP`, at write time);
- a recall hit (+`HIT_STEP`, applied here in a batch by the consolidator, never on the
  read path: `HitLog.record` only appends ids to memory).

`apply_hits` writes hits by upserting each row again with its new `salience` and the time of
its last hit as the `cm:seen:<time>` mark in `tags` (the schema has no column for it): the one
place a memory row is rewritten in place rather than only having its validity closed.

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
from collections.abc import Iterable
from datetime import datetime, timedelta

from chronomem.facts import HALF_LIFE, effective_salience, last_reinforced, record_salience
from chronomem.marks import seen_at, with_seen
from chronomem.records import MemoryRecord
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
    """Raise salience and set the seen mark of the live rows among `hits` in one commit; returns rows changed."""
    if not hits:
        return 0
    store = svc.store
    with svc.writing():
        rows = store.find(Filter().ids(list(hits)).known(svc.now()), with_vectors=True)
        updated = []
        for row in rows:
            at = hits[row.id]
            previous = seen_at(row.tags)
            bump = 0.0 if previous is not None and at - previous < HIT_COOLDOWN else HIT_STEP
            salience = min(row.salience + bump, MAX_SALIENCE)
            updated.append(row.copy(salience=salience, tags=with_seen(row.tags, max(at, previous or at))))
        store.upsert(updated)
    return len(updated)
