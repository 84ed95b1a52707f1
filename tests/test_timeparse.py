from datetime import datetime

import pytest

from chronomem.errors import InvalidInput
from chronomem.records import UTC
from chronomem.timeparse import iso, parse_time

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
