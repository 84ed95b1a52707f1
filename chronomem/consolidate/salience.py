"""Salience and decay: recall hits reinforce memories in the background; unused memories fade in rank.

Two sources of reinforcement raise a row's stored `salience`:
- a repeated statement of a fact (+0.5, `resolve.REINFORCE_STEP`, at write time);
- a recall hit (+`HIT_STEP`, applied here in a batch by the consolidator, never on the
  read path: `HitLog.record` only appends ids to memory).

Decay is computed at read time, so no row is rewritten as time passes and nothing is
ever removed by it:

    effective_salience = salience * 0.5 ** (age / HALF_LIFE)

where `age` is the time since the row was last reinforced (`last_reinforced`: the
latest of its creation, the newest chunk that restated it, and its last recall hit,
kept as the `cm:seen:<time>` mark in `tags` — the schema has no column for it).
`HALF_LIFE` is 90 days: a fact nobody has stated or recalled for a quarter counts half.

How ranking should use it (for the read path, retrieval/): add a small, bounded bonus
to the fused score, e.g. ``score += SALIENCE_WEIGHT * math.log1p(effective_salience(...))``
with `SALIENCE_WEIGHT` about 1/600 (a tenth of one RRF rank step at rank 1), so salience
breaks near-ties between equally relevant memories but never lifts an irrelevant one
over a relevant one, and never gates results. Hits are recorded only for `recall`
(not `as_of`: looking at the past is not a sign the past matters now).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime, timedelta

from chronomem.consolidate.marks import seen_at, with_seen
from chronomem.records import UTC, MemoryRecord
from chronomem.service import MemoryService
from chronomem.storage import Filter

#: Time for an unreinforced memory's effective salience to halve.
HALF_LIFE = timedelta(days=90)
#: What one recall hit adds to `salience`.
HIT_STEP = 0.1
#: Hits within this long of the previous one refresh the time but add nothing (one session is one signal).
HIT_COOLDOWN = timedelta(minutes=30)
#: Stored salience never grows beyond this.
MAX_SALIENCE = 10.0
#: Most hit ids applied per consolidator step.
HIT_BATCH = 256
#: Suggested weight of `log1p(effective_salience)` in a fused ranking score (see the module docstring).
SALIENCE_WEIGHT = 1.0 / 600


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
    seen = seen_at(record.tags)
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
