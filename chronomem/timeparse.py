"""Turning what a caller writes for a time into an aware UTC datetime.

Accepts ISO 8601 dates and date-times (a naive time is read as UTC), the words
`now`, `today`, `yesterday`, and relative phrases such as "3 weeks ago" or
"last monday" (through dateparser, imported only when such a phrase arrives).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from chronomem.errors import InvalidInput
from chronomem.records import UTC

#: Dates outside this range are refused: they are typos, and LanceDB stores microseconds in int64.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def parse_time(text: str | datetime, now: datetime, *, field: str = "time") -> datetime:
    """Parse `text` relative to `now`; raise InvalidInput with a one-line reason on failure."""
    if isinstance(text, datetime):
        value = text if text.tzinfo else text.replace(tzinfo=UTC)
        return _in_range(value.astimezone(UTC), field, str(text))
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{field} is empty: give an ISO 8601 date such as 2024-05-01 or a phrase like '3 weeks ago'")
    raw = text.strip()
    if len(raw) > 100:
        raise InvalidInput(f"{field} is too long to be a date ({len(raw)} characters)")
    lowered = raw.lower()
    if lowered == "now":
        return now
    if lowered == "today":
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    if lowered == "yesterday":
        return (now - timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    iso = _parse_iso(raw)
    if iso is not None:
        return _in_range(iso, field, raw)
    relative = _parse_phrase(raw, now)
    if relative is not None:
        return _in_range(relative, field, raw)
    raise InvalidInput(
        f"cannot read {field} {raw!r}: use an ISO 8601 date or time (2024-05-01, 2024-05-01T14:30:00Z) "
        "or a phrase like '3 weeks ago'"
    )


def exact_time(text: str | datetime, now: datetime, *, field: str = "time") -> datetime | None:
    """`text` read as an ISO 8601 time or one of now/today/yesterday — None for anything else (a phrase,
    a git ref); InvalidInput when it is such a time but out of range, or is too long."""
    if isinstance(text, datetime) or not isinstance(text, str) or not text.strip():
        return parse_time(text, now, field=field)
    raw = text.strip()
    if len(raw) > 100:
        raise InvalidInput(f"{field} is too long to be a date ({len(raw)} characters)")
    if raw.lower() in ("now", "today", "yesterday"):
        return parse_time(raw, now, field=field)
    value = _parse_iso(raw)
    return None if value is None else _in_range(value, field, raw)


def _parse_iso(raw: str) -> datetime | None:
    candidate = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        value = datetime.fromisoformat(candidate)
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _parse_phrase(raw: str, now: datetime) -> datetime | None:
    import dateparser

    settings = {
        "RELATIVE_BASE": now.astimezone(UTC).replace(tzinfo=None),
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
        "RETURN_AS_TIMEZONE_AWARE": True,
        "PREFER_DATES_FROM": "past",
    }
    try:
        value = dateparser.parse(raw, languages=["en"], settings=settings)
    except (ValueError, OverflowError, TypeError):
        return None
    if value is None:
        return None
    return value.astimezone(UTC)


def _in_range(value: datetime, field: str, raw: str) -> datetime:
    if not (EARLIEST <= value < LATEST):
        raise InvalidInput(f"{field} {raw!r} is outside the supported range 1970-01-01 .. 2199-12-31")
    return value


def iso(value: datetime | None) -> str | None:
    """The form every result uses for a time: ISO 8601 in UTC with a Z."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
