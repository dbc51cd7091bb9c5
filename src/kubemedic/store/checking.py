"""Checking rows read back from the archive against the schema, before anything uses them.

PostgreSQL keeps every value in its column's type. SQLite does not: a column is a preference,
and a row edited by hand (or by another program) may hold ``'abc'`` where a time belongs, a
float where a count belongs, a number where text belongs. Used as they are, such values end in
a ``TypeError`` far from the row, or print as if they were fine. So every row a query hands on
passes ``check`` first, which raises ``RowError`` naming the table, the row and the column and
what was expected (``table events, row 17: column last_seen: expected a time, found 'abc'``).
The archive itself is never changed: what was recorded stays as it was.

The check is a few type comparisons per value, a small part of building the row's object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

import sqlalchemy as sa

from kubemedic.errors import InputError
from kubemedic.store import schema

__all__ = [
    "RowError",
    "check",
    "check_all",
    "check_value",
    "expected",
    "scan_sqlite",
    "shown",
    "shown_text",
    "where",
]

TIME_COLUMNS: Final = frozenset(
    {
        "first_seen",
        "last_seen",
        "deleted_at",
        "recorded_at",
        "at",
        "started_at",
        "finished_at",
        "updated_at",
        "since",
    }
)
"""Float columns holding seconds since the Unix epoch."""

_EARLIEST: Final = -62135596800.0  # 0001-01-01T00:00:00Z
_LATEST: Final = 253402300799.0  # 9999-12-31T23:59:59Z
_NUMBER: Final = (int, float)
_INTEGER: Final = (int,)
_TEXT: Final = (str,)


def shown_text(text: str, *, limit: int = 200) -> str:
    """``text`` as a message may echo it: undecodable bytes as ``\\xff``, at most ``limit``
    characters."""
    safe = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return safe if len(safe) <= limit else safe[:limit] + "…"


Row = TypeVar("Row", bound=Mapping[Any, Any])


class RowError(InputError, ValueError):
    """A row the archive holds cannot be read: ``str()`` names the table, the row, the column
    and what was expected."""


def _kind(column: sa.Column[Any]) -> tuple[tuple[type, ...], str]:
    if isinstance(column.type, sa.Float):
        if column.name in TIME_COLUMNS:
            return _NUMBER, "a time (seconds since 1970)"
        return _NUMBER, "a number"
    if isinstance(column.type, sa.Integer):  # BigInteger too
        return _INTEGER, "a whole number"
    return _TEXT, "text"


_SPECS: Final[dict[str, tuple[tuple[str, tuple[type, ...], bool, str, bool], ...]]] = {
    table.name: tuple(
        (
            column.name,
            _kind(column)[0],
            bool(column.nullable),
            _kind(column)[1],
            column.name in TIME_COLUMNS and isinstance(column.type, sa.Float),
        )
        for column in table.columns
    )
    for table in schema.metadata.sorted_tables
}
_BY_NAME: Final[dict[str, dict[str, tuple[tuple[type, ...], bool, str, bool]]]] = {
    table: {name: (allowed, nullable, what, time) for name, allowed, nullable, what, time in specs}
    for table, specs in _SPECS.items()
}
_KEYS: Final[dict[str, tuple[str, ...]]] = {
    table.name: tuple(column.name for column in table.primary_key.columns)
    for table in schema.metadata.sorted_tables
}


def shown(value: object) -> str:
    """A value as a message echoes it: quoted text or a number, at most 200 characters."""
    return shown_text(repr(value))


def where(table: str, row: Mapping[Any, Any]) -> str:
    """``table events, row 17`` (or the primary key's columns for tables without an id)."""
    keys = _KEYS.get(table, ())
    if keys == ("id",) and "id" in row:
        return f"table {table}, row {shown(row.get('id'))}"
    described = ", ".join(f"{key}={shown(row.get(key))}" for key in keys if key in row)
    return f"table {table}, row ({described})" if described else f"table {table}"


def expected(table: str, row: Mapping[Any, Any], column: str, what: str, value: object) -> RowError:
    """The error for ``column`` of ``row`` holding ``value`` where ``what`` was expected."""
    return RowError(f"{where(table, row)}: column {column}: expected {what}, found {shown(value)}")


def check(table: str, row: Row) -> Row:
    """``row`` (of ``table``) when every column it has holds a value of that column's type;
    raises ``RowError`` otherwise. Columns the row lacks (a query's selection) are skipped."""
    specs = _BY_NAME[table]
    for name, value in row.items():  # the row's own columns: a missing key costs an exception
        spec = specs.get(name)
        if spec is None:
            continue
        allowed, nullable, what, time = spec
        kind = type(value)
        if kind in allowed:
            if time and not _LATEST >= value >= _EARLIEST:
                raise expected(table, row, name, what + " between years 1 and 9999", value)
            if kind is float and not math.isfinite(value):
                raise expected(table, row, name, what, value)
            continue
        if value is None and nullable:
            continue
        raise expected(table, row, name, what if value is not None else what + ", not NULL", value)
    return row


_SQLITE_TYPES: Final[dict[tuple[type, ...], tuple[str, ...]]] = {
    _NUMBER: ("integer", "real"),
    _INTEGER: ("integer",),
    _TEXT: ("text",),
}
_VALUES: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("findings", "severity"): ("critical", "warning", "info"),
    ("node_states", "state"): ("healthy", "unhealthy", "repairing", "held", "quarantined", "gone"),
}
"""Text columns that hold one of a few words; ``scan_sqlite`` checks them too."""


def _offending(table: sa.Table) -> sa.Select[Any]:
    """The first row of ``table`` with a value ``check`` refuses, by SQLite's ``typeof`` (a
    column's type is only a preference there), or a word its column does not hold."""
    conditions: list[sa.ColumnElement[bool]] = []
    for name, allowed, nullable, _, time in _SPECS[table.name]:
        column = table.c[name]
        kinds = [*_SQLITE_TYPES.get(allowed, ("text",)), *(("null",) if nullable else ())]
        conditions.append(sa.func.typeof(column).not_in(kinds))
        if time:
            conditions.append(
                sa.and_(
                    sa.func.typeof(column).in_(["integer", "real"]),
                    sa.or_(column < _EARLIEST, column > _LATEST),
                )
            )
        words = _VALUES.get((table.name, name))
        if words:
            conditions.append(
                sa.and_(sa.func.typeof(column) == "text", sa.func.lower(column).not_in(words))
            )
    return sa.select(table).where(sa.or_(*conditions)).limit(1)


def scan_sqlite(connection: Any) -> None:
    """Read every row of every table of a SQLite archive for a value of the wrong type (or a
    word a column does not hold) and raise ``RowError`` for the first found, naming its table,
    row and column: one table scan each, about what ``PRAGMA quick_check`` costs. ``connection``
    is a SQLAlchemy connection."""
    for table in schema.metadata.sorted_tables:
        found = connection.execute(_offending(table)).mappings().first()
        if found is None:
            continue
        check(table.name, found)
        for column in table.columns:
            words = _VALUES.get((table.name, column.name))
            value = found.get(column.name)
            if words and isinstance(value, str) and value.lower() not in words:
                raise expected(table.name, found, column.name, "one of " + ", ".join(words), value)
        raise RowError(f"{where(table.name, found)}: a value of the wrong type")


def check_all(table: str, rows: Iterable[Row]) -> list[Row]:
    """Every row of ``rows`` checked (``check``), as a list."""
    return [check(table, row) for row in rows]


def check_value(table: str, column: str, value: object) -> Any:
    """A single value read from ``table.column`` (an aggregate such as ``max(last_seen)``),
    checked as ``check`` checks a row's (NULL passes: an aggregate over no rows); the error
    names the column only."""
    if value is not None:
        check(table, {column: value})
    return value
