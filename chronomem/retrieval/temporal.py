"""What a query says about time: the moment it names, and whether it asks about now, then, or change.

`read_time` finds dated phrasing ("on May 10, 2024", "in March", "as of 2024-05-01",
"on Friday, 18 July 2025", "3 weeks ago", "last week") and returns the query without it —
so dates do not skew lexical and dense matching — plus the moment it names, which narrows the slice. It
also classifies the intent, which decides how ranking treats newer and older memories
about the same thing: `current` (the default: what is true now — the newer wins),
`past` (a dated question: what was true then — the newer within that slice wins) or
`event` (past tense with no date, "when did we…": about something that happened, so
recency says nothing; a yes/no question — "did anyone fix X?" — asks how it stands now).
A pattern for a question about several things ("what books has she read", "how many times…": a plural
noun asked about with its auxiliary, or a counting phrase), which kept their order, was deleted (2026-11-29): it read
no question of dev's and moved no first answer of agentfiles_validation; on devmem_validation, without it, "At what
times does the orphaned upload sweep kick in?" gets the newest cron first, not an older one (macro hit@1 0.681 ->
0.684); LoCoMo's MRR went 0.514 -> 0.510 (R@10 0.718 either way). A history (how something changed, oldest first) is asked by calling
`history`, which passes its own intent: a pattern of history wording gave that intent to none of the 2,096
questions of DevMem (both splits), agentfiles_validation and LoCoMo that go through `recall`, and was deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from chronomem.records import UTC

_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_MONTHS = {
    m: i
    for i, names in enumerate(
        [
            ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
            ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"),
            ("nov", "november"), ("dec", "december"),
        ],
        start=1,
    )
    for m in names
}
# a weekday written before a date belongs to it ("on Friday, 18 July 2025", "Fri, 18 Jul 2025"): left in the query,
# it would be a word for the search to match
_WEEKDAY = r"(?:(?:mon|tue(?:s)?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+)?"
_LEAD = r"\b(?:(?:back|as|way)\s+)?(?:on|in|around|at|of|by|during|since|before|after|as\s+of)?\s*" + _WEEKDAY
_PATTERNS = [
    # 2024-05-10, 2024-05-10T12:00Z
    re.compile(_LEAD + r"(?P<iso>\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?)", re.I),
    # 15.06.2025 (day first, as dotted dates are written) / 06/15/2025 (month first unless the first number
    # cannot be a month)
    re.compile(_LEAD + r"(?P<num>\d{1,2}(?P<sep>[./])\d{1,2}(?P=sep)\d{4})\b", re.I),
    # May 10, 2024 / May 10th 2024 / 10 May 2024 / May 2024
    re.compile(_LEAD + r"(?P<mon>" + _MONTH + r")\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.I),
    re.compile(_LEAD + r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?P<mon>" + _MONTH + r")\.?,?\s+(?P<year>\d{4})\b", re.I),
    re.compile(_LEAD + r"(?P<mon>" + _MONTH + r")\.?\s+(?P<year>\d{4})\b", re.I),
    # in March (the latest March up to now; "may" alone is a verb far more often than a month)
    re.compile(r"(?:(?:back|way)\s+)?(?:in|during|around|by|since|as\s+of)\s+(?P<bare>" + _MONTH.replace("may|", "") + r")\b(?!\s+\d)", re.I),
    # 3 weeks ago, 2 days ago
    re.compile(_LEAD + r"(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I),
    # last week / last month / yesterday
    re.compile(_LEAD + r"(?P<rel>yesterday|last\s+(?:week|month|year))\b", re.I),
]
_WORD_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
# "When did we move to nox?", "Did we move to nox, and when?": a question asking when something was said or done;
# the memory that says it leads, not the newest on its topic. Only "when" as the question's own word: "what
# should I run when deploying?" asks for the current value. (A list of past-tense and past-reference words —
# did, was, were, had, went, used to, originally, formerly … — classified this before, and did not pay on
# validation: without it, DevMem current hit@1 0.792 -> 0.800 on dev and 0.658 -> 0.667 on validation, stale-leak
# on changed slots 0.071 -> 0.060 and 0.179 -> 0.167, macro hit@1 0.735 -> 0.734 and 0.672 -> 0.676; LoCoMo R@10
# 0.716 -> 0.717, MRR 0.518 -> 0.515; eval/results/devmem*-text.md, locomo.md.) Kept against issue 45's rule for
# word lists, measured 2026-11-29: without it LoCoMo's temporal recall@1 falls 0.569 -> 0.492 (MRR 0.694 -> 0.642;
# R@10 0.852 -> 0.855); it reads 2 of dev's questions, 3 of devmem_validation's and 1 of agentfiles_validation's
# (whose first answer is the same without it).
_EVENT = re.compile(r"^\W*when\b|\bwhen\W*$", re.I)

@dataclass(frozen=True)
class TimeReading:
    text: str  # the query without its dated phrase
    at: datetime | None  # the moment the phrase names, if any
    intent: str  # "current" | "past" | "event"; "history" only when the `history` tool asks
    since: datetime | None = None  # where a named day or month begins ("on May 10, 2024", "in March"); `at` ends it


def read_time(query: str, now: datetime) -> TimeReading:
    """Split the dated phrase off `query` and classify what it asks about time."""
    at: datetime | None = None
    since: datetime | None = None
    text = query
    for pattern in _PATTERNS:
        match = pattern.search(text)
        if match is None:
            continue
        moment = _moment(match, now)
        if moment is None:
            continue
        since, at = moment
        text = (text[: match.start()] + " " + text[match.end():]).strip()
        break
    text = re.sub(r"\s+([,?.!:;])", r"\1", re.sub(r"\s{2,}", " ", text)).strip(" ,:;")
    if at is not None:
        intent = "past"
    elif _EVENT.search(query):
        intent = "event"
    else:
        intent = "current"
    return TimeReading(text or query, at, intent, since)


def _end_of_day(day: datetime) -> datetime:
    """"On May 10": as it stood by the end of May 10 (what was said that day included), as "in May" is
    the end of May."""
    return day.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1, microseconds=-1)


def _moment(match: re.Match[str], now: datetime) -> tuple[datetime | None, datetime] | None:
    """The moment the phrase names, and where its day or month begins when it names one."""
    groups = match.groupdict()
    try:
        if groups.get("iso"):
            value = datetime.fromisoformat(groups["iso"].replace("Z", "+00:00"))
            value = value if value.tzinfo else value.replace(tzinfo=UTC)
            if len(groups["iso"]) == 10:
                return value, _end_of_day(value)
            return None, value
        if groups.get("num"):
            first, second, year = (int(p) for p in re.split(r"[./]", groups["num"]))
            day, month = (first, second) if groups["sep"] == "." or first > 12 else (second, first)
            start = datetime(year, month, day, tzinfo=UTC)
            return start, _end_of_day(start)
        if groups.get("mon") and groups.get("year"):
            month = _MONTHS[groups["mon"].lower().rstrip(".")]
            year = int(groups["year"])
            if groups.get("day"):
                day = datetime(year, month, int(groups["day"]), tzinfo=UTC)
                return day, _end_of_day(day)
            return _month(year, month)  # "in May 2024": as it stood by the end of May
        if groups.get("bare"):
            month = _MONTHS[groups["bare"].lower().rstrip(".")]
            start, end = _month(now.year if month <= now.month else now.year - 1, month)
            return start, min(end, now)
        if groups.get("unit"):
            n = groups["n"].lower()
            count = int(n) if n.isdigit() else _WORD_NUM[n]
            days = {"day": 1, "week": 7, "month": 30, "year": 365}[groups["unit"].lower()] * count
            return None, now - timedelta(days=days)
        if groups.get("rel"):
            rel = groups["rel"].lower()
            days = 1 if rel == "yesterday" else {"week": 7, "month": 30, "year": 365}[rel.split()[-1]]
            return None, now - timedelta(days=days)
    except (ValueError, KeyError, OverflowError):
        return None
    return None


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end - timedelta(microseconds=1)
