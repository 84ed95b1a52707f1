"""Turning what a caller writes for a time into an aware UTC datetime.

Accepts ISO 8601 dates and date-times (a naive time is read as UTC), the words
`now`, `today`, `yesterday`, and relative phrases such as "3 weeks ago" or
"last monday" (through dateparser, imported only when such a phrase arrives).

Refused with a one-line InvalidInput, besides what reads as no time at all: a control character anywhere but
the whitespace around the text (a NUL, an escape, a tab inside); an ISO 8601 form whose values cannot be
(2024-13-01, 2024-02-30, T25:00: Python's own reason is given); a clock time that cannot be (25:00, 13:61,
13pm, "at 99") in a phrase, which dateparser would otherwise drop silently, keeping now's time of day; and a
negative number as a time ("-1", "-3 days": dateparser reads "-1" as a month), while a dash that separates a
date from its time ("May 1 2024 - 10:00") stays a separator.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta

from chronomem.errors import InvalidInput
from chronomem.records import UTC

#: Dates outside this range are refused: they are typos, and LanceDB stores microseconds in int64.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

#: Unicode categories no date holds: controls (NUL, ESC, TAB...), invisible format characters (zero-width
#: space, bidi overrides), lone surrogates, and the line and paragraph separators.
_CONTROL = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: The whitespace around a text that is dropped before it is read (a trailing newline from a shell or a file).
_AROUND = " \t\r\n"
_MINUS = "[-\u2010-\u2015\u2212\ufe63\uff0d]"
_UNITS = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|wks?|fortnights?|months?|years?|yrs?|decades?|centur(?:y|ies)|[smhdwy])"
#: A negative number as a time: a text that starts with one ("-1", "- 2024", "-3 days"), or a negative amount of
#: a unit inside a phrase ("in -3 days"). A dash between a date and a time ("May 1 2024 - 10:00", "1 May 2024 -3pm") is not.
_NEGATIVE = re.compile(rf"^{_MINUS}\s*\d|(?<!\S){_MINUS}\s*\d+(?:[.,]\d+)?\s*{_UNITS}\b", re.IGNORECASE)
#: h:mm or h:mm:ss, not part of a longer run of digits and colons.
_CLOCK = re.compile(r"(?<![\d:.])(\d{1,2}):(\d{1,2})(?::(\d{1,2}))?(?![\d:])")
#: An hour on the 12-hour clock: 3pm, 11:30 a.m.
_MERIDIEM = re.compile(r"(?<![\d:.])(\d{1,3})(?::\d{1,2})?\s*[ap]\.?\s?m\b\.?", re.IGNORECASE)
#: An hour by the clock's face or after "at": 5 o'clock, at 17.
_HOUR = re.compile(r"(?<![\d:.])(\d{1,3})\s*o'?\s*clock\b|\bat\s+(\d{1,3})(?![\d:.])(?!\s*[ap]\.?\s?m\b)", re.IGNORECASE)


def parse_time(text: str | datetime, now: datetime, *, field: str = "time") -> datetime:
    """Parse `text` relative to `now`; raise InvalidInput with a one-line reason on failure."""
    if isinstance(text, datetime):
        value = text if text.tzinfo else text.replace(tzinfo=UTC)
        return _in_range(value.astimezone(UTC), field, str(text))
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"{field} is empty: give an ISO 8601 date such as 2024-05-01 or a phrase like '3 weeks ago'")
    raw = _readable(text, field)
    lowered = raw.lower()
    if lowered == "now":
        return now
    if lowered == "today":
        return now.replace(hour=0, minute=0, second=0, microsecond=0)
    if lowered == "yesterday":
        return (now - timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    iso = _parse_iso(raw, field)
    if iso is not None:
        return _in_range(iso, field, raw)
    _check_phrase(raw, field)
    relative = _parse_phrase(raw, now)
    if relative is not None:
        return _in_range(relative, field, raw)
    raise InvalidInput(
        f"cannot read {field} {raw!r}: use an ISO 8601 date or time (2024-05-01, 2024-05-01T14:30:00Z) "
        "or a phrase like '3 weeks ago'"
    )


def exact_time(text: str | datetime, now: datetime, *, field: str = "time") -> datetime | None:
    """`text` read as an ISO 8601 time or one of now/today/yesterday — None for anything else (a phrase,
    a git ref); InvalidInput when it is such a time but out of range or impossible, is too long, or holds a
    control character."""
    if isinstance(text, datetime) or not isinstance(text, str) or not text.strip():
        return parse_time(text, now, field=field)
    raw = _readable(text, field)
    if raw.lower() in ("now", "today", "yesterday"):
        return parse_time(raw, now, field=field)
    value = _parse_iso(raw, field)
    return None if value is None else _in_range(value, field, raw)


def _readable(text: str, field: str) -> str:
    """`text` without the whitespace around it; InvalidInput when what is left holds a control character or is
    too long to be a date."""
    for char in text.strip(_AROUND):
        if unicodedata.category(char) in _CONTROL:
            raise InvalidInput(
                f"{field} holds a control character (U+{ord(char):04X}), which no date or time has: send the date alone"
            )
    raw = text.strip()
    if len(raw) > 100:
        raise InvalidInput(f"{field} is too long to be a date ({len(raw)} characters)")
    return raw


def _check_phrase(raw: str, field: str) -> None:
    """InvalidInput for a phrase holding a negative number as a time or a clock time that cannot be: dateparser
    would read the one as something else and drop the other, silently."""
    if _NEGATIVE.search(raw):
        raise InvalidInput(
            f"{field} {raw!r} is a negative number, which is not a time: write '3 days ago' or an ISO 8601 date"
        )
    for match in _CLOCK.finditer(raw):
        hour, minute, second = (int(part) if part else 0 for part in match.groups())
        if hour > 23 or minute > 59 or second > 59:
            raise InvalidInput(
                f"{field} {raw!r} holds the clock time {match.group(0)}, which cannot be: hours run 0-23, "
                "minutes and seconds 0-59"
            )
    for match in _MERIDIEM.finditer(raw):
        if not 1 <= int(match.group(1)) <= 12:
            raise InvalidInput(f"{field} {raw!r} holds {match.group(0).strip()}, which cannot be: am and pm hours run 1-12")
    for match in _HOUR.finditer(raw):
        hour = int(match.group(1) or match.group(2))
        if hour > 23:
            raise InvalidInput(f"{field} {raw!r} holds the hour {hour}, which cannot be: hours run 0-23")


def _parse_iso(raw: str, field: str) -> datetime | None:
    """`raw` as ISO 8601 (None when it is not in that form); InvalidInput when it is, with values that cannot be
    (Python's parser then says which: "month must be in 1..12", "day is out of range for month")."""
    candidate = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        value = datetime.fromisoformat(candidate)
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("Invalid isoformat string") or not candidate[:1].isdigit():
            return None
        if reason.startswith("offset must be"):  # Python's names timedelta reprs
            reason = "the UTC offset must be less than 24 hours"
        raise InvalidInput(f"{field} {raw!r} is not a real date or time: {reason}") from None
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
