"""Safe `where` prefilters for LanceDB.

User-supplied strings (project names, ids, slot keys) only ever reach the filter as
SQL string literals quoted by `_string_literal`; times are formatted here from
`datetime` objects. No caller text is pasted into SQL unquoted. A property test
(tests/storage/test_filters.py) checks that any string round-trips as a literal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from chronomem.records import UTC


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


def _in(column: str, values: Iterable[str]) -> str:
    items = list(values)
    if not items:
        return "FALSE"
    if len(items) == 1:
        return f"{column} = {_string_literal(items[0])}"
    return f"{column} IN (" + ", ".join(_string_literal(v) for v in items) + ")"


@dataclass(frozen=True)
class Filter:
    """A conjunction of clauses, rendered to one SQL predicate by `sql()`."""

    clauses: tuple[str, ...] = ()

    def _and(self, clause: str) -> Filter:
        return Filter(self.clauses + (clause,))

    def live(self, at: datetime, known_at: datetime) -> Filter:
        """Rows valid at `at` (valid time) as recorded at `known_at` (transaction time)."""
        t, k = _time_literal(at), _time_literal(known_at)
        return self._and(
            f"valid_at <= {t} AND (invalid_at IS NULL OR invalid_at > {t}) "
            f"AND created_at <= {k} AND (expired_at IS NULL OR expired_at > {k})"
        )

    def known(self, known_at: datetime) -> Filter:
        """Rows recorded and not expired at `known_at`, whatever their valid time."""
        k = _time_literal(known_at)
        return self._and(f"created_at <= {k} AND (expired_at IS NULL OR expired_at > {k})")

    def began_by(self, at: datetime) -> Filter:
        """Rows whose valid time started at or before `at`, whether or not it has ended."""
        return self._and(f"valid_at <= {_time_literal(at)}")

    def projects(self, projects: Iterable[str]) -> Filter:
        return self._and(_in("project", projects))

    def kinds(self, kinds: Iterable[str]) -> Filter:
        return self._and(_in("kind", kinds))

    def ids(self, ids: Iterable[str]) -> Filter:
        return self._and(_in("id", ids))

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
        return self._and(f"created_at >= {_time_literal(since)}")

    def revisions(self) -> Filter:
        """Revision rows: restatements of an earlier row (e.g. with its validity closed)."""
        return self._and("revision_of IS NOT NULL")

    def ended_by(self, t: datetime) -> Filter:
        """Rows whose validity ended at or before `t`."""
        return self._and(f"invalid_at IS NOT NULL AND invalid_at <= {_time_literal(t)}")

    def superseding(self, ids: Iterable[str]) -> Filter:
        """Facts that replaced any of these ids."""
        return self._and(_in("supersedes", ids))

    def with_paths(self) -> Filter:
        """Rows about files: a non-empty `paths` list (code anchors)."""
        return self._and("paths IS NOT NULL AND array_length(paths) > 0")

    def originals(self) -> Filter:
        """Rows as first written, not the revisions that restate them."""
        return self._and("revision_of IS NULL")

    def sql(self) -> str | None:
        if not self.clauses:
            return None
        return " AND ".join(f"({c})" for c in self.clauses)
