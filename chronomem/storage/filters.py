"""Safe `where` prefilters for LanceDB.

User-supplied strings (project names, ids, slot keys) only ever reach the filter as
literals quoted by LanceDB's own expression builder (`lancedb.expr.lit`); times are
formatted here from `datetime` objects. No caller text is pasted into SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from chronomem.records import UTC


def _string_literal(value: str) -> str:
    from lancedb.expr import lit

    if not isinstance(value, str):
        raise TypeError(f"filter literal must be a string, not {type(value).__name__}")
    return lit(value).to_sql()


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

    def sql(self) -> str | None:
        if not self.clauses:
            return None
        return " AND ".join(f"({c})" for c in self.clauses)
