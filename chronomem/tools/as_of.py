"""`as_of`: answer from the slice valid at `at` as known at `known_at` (default now)."""

from __future__ import annotations

from typing import Any

from chronomem.errors import InvalidInput
from chronomem.service import MemoryService
from chronomem.timeparse import parse_time
from chronomem.tools.recall import search_slice
from chronomem.tools.results import RecallResult


def as_of(
    svc: MemoryService,
    query: Any,
    at: Any,
    *,
    known_at: Any = None,
    project: str | None = None,
    scope: str = "project",
    limit: Any = 10,
    budget_tokens: Any = None,
    kinds: Any = None,
) -> RecallResult:
    """What was true at `at` (ISO 8601 or a phrase like '3 weeks ago'), as recorded by `known_at`."""
    if at is None or (isinstance(at, str) and not at.strip()):
        raise InvalidInput("at is required: an ISO 8601 date such as 2024-05-01, or a phrase like '3 weeks ago'")
    now = svc.now()
    at_time = parse_time(at, now, field="at")
    known_time = parse_time(known_at, now, field="known_at") if known_at else now
    return search_slice(
        svc,
        query,
        at=at_time,
        known_at=known_time,
        project=project,
        scope=scope,
        limit=limit,
        budget_tokens=budget_tokens,
        kinds=kinds,
        narrow_to_phrase=False,
    )
