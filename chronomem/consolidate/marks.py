"""Consolidator marks kept in a row's `tags`: conflicts between live facts, and the last recall hit.

The `memories` schema has no column for either, and both change in place like salience
(ranking metadata, not bi-temporal facts), so they live in `tags` under the reserved
prefix `cm:` — `cm:conflict:<id>` (this fact and fact <id> disagree and both stay live)
and `cm:seen:<ISO time>` (recall last returned this row then). User tags never start
with `cm:`; readers that show tags may hide the reserved ones (`user_tags`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from chronomem.records import UTC

RESERVED_PREFIX = "cm:"
CONFLICT_PREFIX = "cm:conflict:"
SEEN_PREFIX = "cm:seen:"


def conflicts_of(tags: Iterable[str]) -> list[str]:
    """Ids this row is flagged as conflicting with, in the order they were flagged."""
    return [t[len(CONFLICT_PREFIX) :] for t in tags if t.startswith(CONFLICT_PREFIX)]


def with_conflicts(tags: list[str], ids: Iterable[str]) -> list[str]:
    """`tags` plus a conflict mark for each of `ids` (no duplicates)."""
    marks = [CONFLICT_PREFIX + i for i in ids]
    return list(dict.fromkeys([*tags, *marks]))


def seen_at(tags: Iterable[str]) -> datetime | None:
    """When recall last returned this row, if ever."""
    for tag in tags:
        if tag.startswith(SEEN_PREFIX):
            try:
                return datetime.fromisoformat(tag[len(SEEN_PREFIX) :].replace("Z", "+00:00")).astimezone(UTC)
            except ValueError:
                return None
    return None


def with_seen(tags: list[str], at: datetime) -> list[str]:
    """`tags` with the recall-hit mark set to `at` (replacing an older one)."""
    stamp = SEEN_PREFIX + at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [t for t in tags if not t.startswith(SEEN_PREFIX)] + [stamp]


def user_tags(tags: Iterable[str]) -> list[str]:
    """The tags a user gave, without the consolidator's marks."""
    return [t for t in tags if not t.startswith(RESERVED_PREFIX)]
