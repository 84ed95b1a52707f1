"""What both ranking (retrieval/) and consolidation (consolidate/) read off a stored row, as pure functions:
who made a fact (`EXTRACTED_SOURCES`), the words its slot is compared by (`slot_phrase`), and how salient a
row is now (`effective_salience`, `record_salience`; consolidate/salience.py records the reinforcement in the
`usage` side table, which reads attach to each row as `record.usage`: its boost is already in
`record.salience` and its restating chunks in `record.source_ids`, its last recall hit is `usage.seen_at`).

Kept below both so that ranking never imports the consolidator.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from chronomem.records import UTC, MemoryRecord

#: Sources whose facts were extracted by chronomem rather than stated by the agent.
EXTRACTED_SOURCES = frozenset({"rules", "llm"})

#: Time for an unreinforced memory's effective salience to halve.
HALF_LIFE = timedelta(days=90)


def slot_phrase(subject: str, predicate: str) -> str:
    """The words a slot is compared by: `proj test command` for (proj, test_command)."""
    return f"{subject} {predicate.replace('_', ' ')}".strip()


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
