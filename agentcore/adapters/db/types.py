"""Column types that behave the same on Postgres and SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Dialect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator, TypeEngine


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on both backends.

    Values are converted to UTC on the way in (naive ones are taken as UTC already), and
    SQLite's naive results come back tagged as UTC, so comparisons and ordering agree on both.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC) if dialect.name != "sqlite" else value
        utc = value.astimezone(UTC)
        # SQLite stores the wall time and drops the offset: give it the UTC wall time.
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def as_utc(value: datetime) -> datetime:
    """A stored time as ``UTCDateTime`` returns it: naive ones taken as UTC, others converted."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def sqlite_datetime(value: str) -> datetime:
    """A ``UTCDateTime`` as SQLite stores it (UTC wall time, ISO text), read without SQLAlchemy."""
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


def json_type(*, none_as_null: bool = False) -> TypeEngine[Any]:
    """JSON everywhere, JSONB on Postgres (indexable, supports ``?|``)."""
    return JSON(none_as_null=none_as_null).with_variant(
        JSONB(none_as_null=none_as_null), "postgresql"
    )
