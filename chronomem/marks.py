"""Internal marks kept in a row's `tags`: conflicts between live facts, the last recall hit, code anchors.

The `memories` schema has no column for any of them, so they live in `tags` under the
reserved prefix `cm:`:

- `cm:conflict:<id>` — this fact and fact <id> disagree and both stay live;
- `cm:seen:<ISO time>` — recall last returned this row then;
- `cm:anchor:<path>=<blob id>` — the row is about base-relative file <path>, whose content
  had git blob id <blob id> when it was written (see chronomem/codebase.py).

Anchors are tags rather than a new column so that stores written before them need no
migration and export/import carries them unchanged; the `paths` column keeps the paths as
the caller meant them (globs included) and `commit` the HEAD at write time. The path is
everything between the prefix and the last `=` (blob ids are hex, so a path may hold `=`).

User tags never start with `cm:`; every reader that shows tags hides the reserved ones
(`user_tags`), and tags are never searched (the full-text index covers `content` only).
A fact derived from a chunk inherits its user tags and anchors (`inherited_tags`), not its
conflict or recall marks.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from chronomem.records import UTC

RESERVED_PREFIX = "cm:"
CONFLICT_PREFIX = "cm:conflict:"
SEEN_PREFIX = "cm:seen:"
ANCHOR_PREFIX = "cm:anchor:"


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


def anchors_of(tags: Iterable[str]) -> dict[str, str]:
    """The files this row is anchored to → their blob ids when it was written."""
    out: dict[str, str] = {}
    for tag in tags:
        if tag.startswith(ANCHOR_PREFIX):
            path, sep, sha = tag[len(ANCHOR_PREFIX) :].rpartition("=")
            if sep and path:
                out[path] = sha
    return out


def anchor_tags(anchors: dict[str, str]) -> list[str]:
    """The tags that record `anchors` (path → blob id), in path order."""
    return [f"{ANCHOR_PREFIX}{path}={sha}" for path, sha in sorted(anchors.items())]


def with_anchors(tags: list[str], anchors: dict[str, str]) -> list[str]:
    """`tags` with `anchors` recorded; a path anchored already takes the new blob id."""
    if not anchors:
        return list(tags)
    merged = {**anchors_of(tags), **anchors}
    return [t for t in tags if not t.startswith(ANCHOR_PREFIX)] + anchor_tags(merged)


def inherited_tags(tags: Iterable[str]) -> list[str]:
    """What a fact derived from a row with `tags` carries: the user's tags and the anchors."""
    tags = list(tags)
    return user_tags(tags) + [t for t in tags if t.startswith(ANCHOR_PREFIX)]
