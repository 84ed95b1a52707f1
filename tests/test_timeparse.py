from datetime import datetime

import pytest

from chronomem.errors import InvalidInput
from chronomem.records import UTC
from chronomem.timeparse import exact_time, iso, parse_time

NOW = datetime(2024, 6, 15, 10, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T14:30:00Z", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01T16:30:00+02:00", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01 14:30", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("now", NOW),
        ("today", datetime(2024, 6, 15, tzinfo=UTC)),
        ("yesterday", datetime(2024, 6, 14, tzinfo=UTC)),
    ],
)
def test_absolute_times(text: str, expected: datetime) -> None:
    assert parse_time(text, NOW) == expected


def test_relative_phrases_are_relative_to_now() -> None:
    assert parse_time("3 weeks ago", NOW) == NOW.replace(day=25, month=5)
    assert parse_time("2 days ago", NOW).date() == datetime(2024, 6, 13).date()


@pytest.mark.parametrize("bad", ["", "   ", "not a date", "next blue moon", "2024-13-45", "x" * 200, "9999-01-01"])
def test_bad_times_are_one_line_errors(bad: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_time(bad, NOW, field="at")
    assert "\n" not in str(err.value)
    assert "at" in str(err.value)


def test_iso_is_utc_with_z() -> None:
    assert iso(datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02T03:04:05Z"
    assert iso(None) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("May 1 2024 - 10:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),  # a dash between date and time separates
        ("1 May 2024 -3pm", datetime(2024, 5, 1, 15, tzinfo=UTC)),
        ("yesterday at 3:15 pm", datetime(2024, 6, 14, 15, 15, tzinfo=UTC)),
        ("yesterday at 12am", datetime(2024, 6, 14, tzinfo=UTC)),
        ("yesterday at 23:59:59", datetime(2024, 6, 14, 23, 59, 59, tzinfo=UTC)),
        ("yesterday at 0:30", datetime(2024, 6, 14, 0, 30, tzinfo=UTC)),
        ("last friday 17:00", datetime(2024, 6, 14, 17, tzinfo=UTC)),
        ("2024-05-01 14:30 UTC", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-5-1", datetime(2024, 5, 1, tzinfo=UTC)),  # not ISO's form: dateparser's, as before
        ("2024-05-01\n", datetime(2024, 5, 1, tzinfo=UTC)),  # the whitespace around a text is dropped
        ("\t yesterday  ", datetime(2024, 6, 14, tzinfo=UTC)),
        ("3\u00a0weeks ago", NOW.replace(day=25, month=5)),  # a no-break space is a space
        ("2 hours ago", NOW.replace(hour=8)),
        ("3h ago", NOW.replace(hour=7)),
    ],
)
def test_dashes_clock_times_and_whitespace_that_are_fine(text: str, expected: datetime) -> None:
    assert parse_time(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("-1", "is a negative number"),  # dateparser read it as January
        ("-5", "is a negative number"),
        ("- 1", "is a negative number"),
        ("\u22121.5", "is a negative number"),  # the minus sign
        ("-2024", "is a negative number"),
        ("-3 days", "is a negative number"),
        ("in -3 days", "is a negative number"),
        ("yesterday at 25:00", "holds the clock time 25:00, which cannot be"),  # dateparser kept now's 10:30
        ("yesterday at 24:00", "holds the clock time 24:00"),
        ("today at 13:61", "holds the clock time 13:61"),
        ("yesterday at 00:00:60", "holds the clock time 00:00:60"),
        ("13pm yesterday", "holds 13pm, which cannot be: am and pm hours run 1-12"),
        ("yesterday at 0 a.m.", "am and pm hours run 1-12"),
        ("yesterday at 99", "holds the hour 99"),
        ("yesterday at 25 o'clock", "holds the hour 25"),
        ("2024-13-01", "is not a real date or time: month must be in 1..12"),  # dateparser read 13 January
        ("2024-02-30", "day is out of range for month"),
        ("2024-05-01T25:00", "hour must be in 0..23"),
        ("2024-01-01T00:00:00+99:00", "the UTC offset must be less than 24 hours"),
        ("2024-05-01\x00", "holds a control character (U+0000)"),
        ("3 days ago\x00", "holds a control character (U+0000)"),
        ("\x00yesterday", "holds a control character (U+0000)"),
        ("2024-05-01\x1b[31m", "holds a control character (U+001B)"),
        ("yesterday\x07", "holds a control character (U+0007)"),
        ("last\tmonday", "holds a control character (U+0009)"),
        ("now\x1f", "holds a control character (U+001F)"),
        ("yester\u200bday", "holds a control character (U+200B)"),
        ("2024-05-01\u202e", "holds a control character (U+202E)"),
        ("yesterday\u2028", "holds a control character (U+2028)"),
    ],
)
def test_negative_numbers_impossible_times_and_control_characters_are_refused(text: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_time(text, NOW, field="valid_from")
    message = str(err.value)
    assert message.startswith("valid_from ") and reason in message, message
    assert "\n" not in message and "\x00" not in message and "\x1b" not in message


@pytest.mark.parametrize("text", ["2024-13-01", "2024-05-01T25:00", "2024-05-01\x00", "now\x00", "v1.4.0\x1b"])
def test_exact_time_refuses_impossible_iso_and_control_characters(text: str) -> None:
    """as_of's first reading: an impossible ISO date is not tried as a git ref next (nor read by dateparser)."""
    with pytest.raises(InvalidInput):
        exact_time(text, NOW, field="at")


def test_exact_time_leaves_refs_and_phrases_alone() -> None:
    assert exact_time("v1.4.0", NOW) is None and exact_time("HEAD~1", NOW) is None
    assert exact_time("release-2024-05", NOW) is None and exact_time("3 weeks ago", NOW) is None
    assert exact_time("2024-05-01", NOW) == datetime(2024, 5, 1, tzinfo=UTC)
