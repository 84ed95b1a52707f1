"""Which chunks each extraction stage has processed: a durable watermark per stage in the store directory.

The state lives in `consolidate-state.json` beside the table, rewritten atomically
(temporary file + `os.replace`) after every batch, and only by the holder of the
store's consolidation lock, so writers never race. Per stage it keeps

- `cutoff`: the latest transaction time (`created_at`) of a chunk the stage processed;
- `recent`: the ids it processed whose `created_at` is within `LATENESS` of the cutoff.

A chunk is pending when it is an original chunk row (not a revision) with
`created_at >= cutoff - LATENESS` and its id is not in `recent`.

Why this is sound across processes: every writer stamps `created_at` from the clock
while it holds the store's write lock and commits before releasing it, so a chunk
committed after one we have seen carries a `created_at` no earlier than that one's,
minus however far the clock may step back. `LATENESS` covers such steps, and chunks
stamped at the same instant (a frozen test clock; ULIDs whose random part sorts
"backwards" within one millisecond, which is why ULID order alone is not enough) are
told apart by `recent`. Rows written outside the write lock with an old `created_at`
(an import of another store's history) fall below the cutoff and count as processed:
they arrive with their facts. Processing is at-least-once: a crash between a batch's
commit and the state write re-runs that batch, and the stages skip chunks that already
carry facts of their own source.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chronomem.config import StoreLocation, is_remote
from chronomem.records import UTC

STATE_FILE = "consolidate-state.json"
#: How far back in transaction time a late commit may land and still be seen.
LATENESS = timedelta(seconds=5)


@dataclass
class StageMark:
    """One stage's progress: the cutoff and the ids processed near it."""

    cutoff: datetime | None = None
    recent: dict[str, datetime] = field(default_factory=dict)

    def window_start(self) -> datetime | None:
        return None if self.cutoff is None else self.cutoff - LATENESS

    def is_done(self, memory_id: str, created_at: datetime) -> bool:
        start = self.window_start()
        if start is not None and created_at < start:
            return True
        return memory_id in self.recent

    def advance(self, processed: list[tuple[str, datetime]]) -> None:
        """Record `processed` (id, created_at) and drop ids that fell out of the window."""
        if not processed:
            return
        latest = max(t for _, t in processed)
        if self.cutoff is None or latest > self.cutoff:
            self.cutoff = latest
        self.recent.update(dict(processed))
        start = self.window_start()
        assert start is not None
        self.recent = {i: t for i, t in self.recent.items() if t >= start}


class ConsolidationState:
    """The state file of one store: stage marks plus small facts about upkeep. In object storage it is an object
    beside the table (written whole by one PUT, so readers see the old or the new one), saved under the
    consolidation lease like the local file under its lock."""

    def __init__(self, path: Any, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def load(cls, store_dir: StoreLocation) -> ConsolidationState:
        path = store_dir / STATE_FILE
        try:
            data = json.loads(_read_state(path))
            if not isinstance(data, dict):
                data = {}
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError):
            data = {}  # unreadable: start over (at-least-once; stages skip chunks they already did)
        data.setdefault("version", 1)
        data.setdefault("stages", {})
        return cls(path, data)

    @property
    def seq(self) -> int:
        """Bumped on every save, so a process can tell that another one moved the marks."""
        return int(self.data.get("seq", 0))

    def mark(self, stage: str) -> StageMark:
        raw = self.data["stages"].get(stage) or {}
        cutoff = raw.get("cutoff")
        return StageMark(
            cutoff=_time(cutoff) if cutoff else None,
            recent={i: _time(t) for i, t in (raw.get("recent") or {}).items()},
        )

    def set_mark(self, stage: str, mark: StageMark) -> None:
        self.data["stages"][stage] = {
            "cutoff": _iso(mark.cutoff) if mark.cutoff else None,
            "recent": {i: _iso(t) for i, t in sorted(mark.recent.items())},
        }

    def save(self) -> None:
        """Write atomically: readers see the old file or the new one, never half of either."""
        self.data["seq"] = self.seq + 1
        text = json.dumps(self.data, indent=1, sort_keys=True)
        if is_remote(self.path):
            from chronomem.storage.remote import objects_of

            objects_of(self.path).put("", text.encode("utf-8"))
            return
        fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat()


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def _read_state(path: Any) -> str:
    """The state's text; FileNotFoundError when there is none."""
    if is_remote(path):
        from chronomem.storage.remote import objects_of

        raw = objects_of(path).get("")
        if raw is None:
            raise FileNotFoundError(str(path))
        return raw.decode("utf-8")
    return Path(path).read_text(encoding="utf-8")
