"""Safe `where` prefilters for LanceDB.

User-supplied strings (project names, ids, slot keys) only ever reach the filter as
SQL string literals quoted by `_string_literal`; times are formatted here from
`datetime` objects. No caller text is pasted into SQL unquoted. A property test
(tests/storage/test_filters.py) checks that any string round-trips as a literal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from chronomem.records import UTC

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _string_literal(value: str) -> str:
    # Standard SQL quoting (double the quote). Not lancedb.expr.lit: in 0.40 it leaves a
    # quote that follows a backslash undoubled, so "x\\' OR 1=1 --" escapes its literal.
    if not isinstance(value, str):
        raise TypeError(f"filter literal must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("filter literals cannot contain NUL")
    return "'" + value.replace("'", "''") + "'"


def _time_literal(value: datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("filter times must be timezone-aware")
    return "TIMESTAMP '" + value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "'"


def micros(value: datetime) -> int:
    """`value` as integer microseconds since the Unix epoch (the table's time unit)."""
    if value.tzinfo is None:
        raise ValueError("filter times must be timezone-aware")
    return (value - _EPOCH) // _MICROSECOND


def _in(column: str, values: Iterable[str]) -> str:
    items = list(values)
    if not items:
        return "FALSE"
    if len(items) == 1:
        return f"{column} = {_string_literal(items[0])}"
    return f"{column} IN (" + ", ".join(_string_literal(v) for v in items) + ")"


@dataclass(frozen=True)
class Filter:
    """A conjunction of clauses, rendered to one SQL predicate by `sql()`.

    `ops` restates each clause as data — (name, arguments), times as UTC microseconds — so the
    in-memory read index (`readindex.py`) can evaluate it without SQL; clauses it has no op for are
    ("sql", clause), which sends the search to LanceDB.
    """

    clauses: tuple[str, ...] = ()
    ops: tuple[tuple[Any, ...], ...] = ()

    def _and(self, clause: str, op: tuple[Any, ...] | None = None) -> Filter:
        return Filter(self.clauses + (clause,), self.ops + (op or ("sql", clause),))

    def live(self, at: datetime, known_at: datetime) -> Filter:
        """Rows valid at `at` (valid time) as recorded at `known_at` (transaction time)."""
        t, k = _time_literal(at), _time_literal(known_at)
        return self._and(
            f"valid_at <= {t} AND (invalid_at IS NULL OR invalid_at > {t}) "
            f"AND created_at <= {k} AND (expired_at IS NULL OR expired_at > {k})",
            ("live", micros(at), micros(known_at)),
        )

    def known(self, known_at: datetime) -> Filter:
        """Rows recorded and not expired at `known_at`, whatever their valid time."""
        k = _time_literal(known_at)
        return self._and(f"created_at <= {k} AND (expired_at IS NULL OR expired_at > {k})", ("known", micros(known_at)))

    def began_by(self, at: datetime) -> Filter:
        """Rows whose valid time started at or before `at`, whether or not it has ended."""
        return self._and(f"valid_at <= {_time_literal(at)}", ("began_by", micros(at)))

    def projects(self, projects: Iterable[str]) -> Filter:
        items = tuple(projects)
        return self._and(_in("project", items), ("projects", items))

    def kinds(self, kinds: Iterable[str]) -> Filter:
        items = tuple(kinds)
        return self._and(_in("kind", items), ("kinds", items))

    def ids(self, ids: Iterable[str]) -> Filter:
        items = tuple(ids)
        return self._and(_in("id", items), ("ids", items))

    def slot(self, subject: str, predicate: str) -> Filter:
        return self._and(
            f"kind = 'fact' AND subject = {_string_literal(subject)} AND predicate = {_string_literal(predicate)}"
        )

    def revision_of(self, ids: Iterable[str]) -> Filter:
        return self._and(_in("revision_of", ids))

    def derived_from(self, chunk_ids: Iterable[str]) -> Filter:
        """Rows whose provenance (`source_ids`) names any of these chunks."""
        items = list(chunk_ids)
        if not items:
            return self._and("FALSE")
        return self._and("array_has_any(source_ids, make_array(" + ", ".join(_string_literal(v) for v in items) + "))")

    def slots(self, pairs: Iterable[tuple[str, str]]) -> Filter:
        """Facts in any of these (subject, predicate) slots."""
        items = list(dict.fromkeys(pairs))
        if not items:
            return self._and("FALSE")
        either = " OR ".join(
            f"(subject = {_string_literal(s)} AND predicate = {_string_literal(p)})" for s, p in items
        )
        return self._and(f"kind = 'fact' AND ({either})")

    def created_since(self, since: datetime) -> Filter:
        """Rows recorded (transaction time) at or after `since`."""
        return self._and(f"created_at >= {_time_literal(since)}", ("created_since", micros(since)))

    def revisions(self) -> Filter:
        """Revision rows: restatements of an earlier row (e.g. with its validity closed)."""
        return self._and("revision_of IS NOT NULL", ("revisions",))

    def ended_by(self, t: datetime) -> Filter:
        """Rows whose validity ended at or before `t`."""
        return self._and(f"invalid_at IS NOT NULL AND invalid_at <= {_time_literal(t)}", ("ended_by", micros(t)))

    def superseding(self, ids: Iterable[str]) -> Filter:
        """Facts that replaced any of these ids."""
        return self._and(_in("supersedes", ids))

    def sources(self, sources: Iterable[str]) -> Filter:
        """Rows whose `source` (who stated them: agent, rules, …) is one of these (SQL only: the read index keeps
        no source column, so a filter with it is answered by LanceDB)."""
        return self._and(_in("source", tuple(sources)))

    def with_paths(self) -> Filter:
        """Rows about files: a non-empty `paths` list (code anchors)."""
        return self._and("paths IS NOT NULL AND array_length(paths) > 0", ("with_paths",))

    def originals(self) -> Filter:
        """Rows as first written, not the revisions that restate them."""
        return self._and("revision_of IS NULL", ("originals",))

    def sql(self) -> str | None:
        if not self.clauses:
            return None
        return " AND ".join(f"({c})" for c in self.clauses)
