"""The few statements that differ between Postgres and SQLite, each written once per dialect."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Table, exists, func, literal, select, type_coerce
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.types import Text

from agentcore.domain.errors import ConfigurationError

T = TypeVar("T")

# Well below SQLite's bound-parameter limit, and a sane statement size on Postgres.
CHUNK = 500


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def insert_ignoring_conflicts(dialect: str, table: Table, values: dict[str, Any]) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING``: a duplicate leaves the transaction usable and
    shows up as ``rowcount == 0`` instead of an exception."""
    return insert_ignoring_conflicts_of(dialect, table).values(values)


@functools.cache
def insert_ignoring_conflicts_of(dialect: str, table: Table) -> Any:
    """The same statement without values, built once: executed with the row as parameters
    (building and cache-keying an insert per write cost more than running it)."""
    stmt: Any
    if dialect == "postgresql":
        stmt = postgresql.insert(table).on_conflict_do_nothing()
    elif dialect == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()
    else:
        raise _unsupported(dialect)
    # SQLAlchemy reports an INSERT's rowcount only when asked to.
    return stmt.execution_options(preserve_rowcount=True)


def upsert(dialect: str, table: Table, values: dict[str, Any], key: str) -> Any:
    """Insert, or update every other column of the row with the same ``key``."""
    stmt: Any
    if dialect == "postgresql":
        stmt = postgresql.insert(table).values(values)
    elif dialect == "sqlite":
        stmt = sqlite.insert(table).values(values)
    else:
        raise _unsupported(dialect)
    updates = {name: stmt.excluded[name] for name in values if name != key}
    return stmt.on_conflict_do_update(index_elements=[key], set_=updates)


def json_array_contains_any(
    dialect: str, column: ColumnElement[Any], values: Sequence[str]
) -> ColumnElement[bool]:
    """True where the JSON array in ``column`` holds at least one of ``values``."""
    if dialect == "postgresql":
        contains: ColumnElement[bool] = type_coerce(column, JSONB).has_any(
            literal(list(values), ARRAY(Text))
        )
        return contains
    if dialect == "sqlite":
        element = func.json_each(column).table_valued("value")
        return exists(select(1).select_from(element).where(element.c.value.in_(list(values))))
    raise _unsupported(dialect)


def json_array_contains_all(
    dialect: str, column: ColumnElement[Any], values: Sequence[str]
) -> ColumnElement[bool]:
    """True where the JSON array in ``column`` holds every one of ``values``."""
    if dialect == "postgresql":
        contains: ColumnElement[bool] = type_coerce(column, JSONB).has_all(
            literal(list(values), ARRAY(Text))
        )
        return contains
    if dialect == "sqlite":
        wanted = sorted(set(values))
        element = func.json_each(column).table_valued("value")
        held = select(func.count(func.distinct(element.c.value))).where(element.c.value.in_(wanted))
        return held.scalar_subquery() == len(wanted)
    raise _unsupported(dialect)


def _unsupported(dialect: str) -> ConfigurationError:
    return ConfigurationError(
        f"unsupported database {dialect!r}: DATABASE_URL must be PostgreSQL (or unset for SQLite)"
    )
