"""Building the async engine: SQLite (embedded) or Postgres (production). Nothing at import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

SQLITE_BUSY_TIMEOUT_MS = 5000
READ_ONLY = "agentcore_read_only"  # execution option of read-only units of work

# journal_mode=WAL lets readers run beside the writer; synchronous=FULL fsyncs the WAL on every
# commit so an acknowledged write survives an OS crash or power loss (NORMAL only survives a
# process crash).
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
)


def create_engine(url: str) -> AsyncEngine:
    """The async engine for ``url`` (``sqlite+aiosqlite:///...`` or ``postgresql+psycopg://...``)."""
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    return create_async_engine(
        url, pool_size=10, max_overflow=20, pool_pre_ping=True, pool_recycle=1800
    )


def _sqlite_engine(url: str) -> AsyncEngine:
    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(
        url,
        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        pool_size=5,
        max_overflow=0,
        pool_timeout=30,
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Leave transaction control to SQLAlchemy (the driver's implicit BEGIN breaks
        # SAVEPOINT and transactional DDL); ``_on_begin`` starts each transaction instead.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            for pragma in _SQLITE_PRAGMAS:
                cursor.execute(pragma)
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # IMMEDIATE takes the write lock up front: a unit of work that reads and then writes
        # waits (busy_timeout) for a concurrent writer instead of failing with SQLITE_BUSY.
        # Read-only units of work take no lock: in WAL mode they read beside the writer.
        if connection.get_execution_options().get(READ_ONLY):
            connection.exec_driver_sql("BEGIN DEFERRED")
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
