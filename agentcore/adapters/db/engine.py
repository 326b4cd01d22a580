"""Building the async engine: SQLite (embedded) or Postgres (production). Nothing at import."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy import event
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry

from agentcore.adapters.db import sqlite_driver

SQLITE_BUSY_TIMEOUT_MS = 5000
_AIOSQLITE = SQLiteDialect_aiosqlite()
READ_ONLY = "agentcore_read_only"  # execution option of read-only units of work
T = TypeVar("T")

# journal_mode=WAL lets readers run beside the writer; synchronous=FULL fsyncs the WAL on every
# commit so an acknowledged write survives an OS crash or power loss (NORMAL only survives a
# process crash).
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}",
)


# Every statement planned for the tables as they are when it runs. psycopg prepares a statement
# on the server after a few runs, and PostgreSQL then keeps one generic plan for it, made for
# the tables as they were then: a connection that prepared the neighbour lookup of a lexical
# document or a read of rows by id while a scope was new kept scanning the whole scope or
# table by it as the scope grew (bulk loading fell from 180 to under 100 memories/s between
# 40,000 and 70,000), until an ANALYZE happened to replace the plan; with autovacuum off,
# never. A plan per run costs PostgreSQL a planning (tens of microseconds for these).
_PG_OPTIONS = "-c plan_cache_mode=force_custom_plan"


def create_engine(
    url: str,
    timeout: float = 5.0,
    *,
    pool_size: int = 20,
    max_overflow: int = 10,
    pool_wait: Callable[[float], None] | None = None,
) -> AsyncEngine:
    """The async engine for ``url`` (``sqlite+aiosqlite:///...`` or ``postgresql+psycopg://...``).

    Postgres: connecting, and waiting for a pooled connection, each give up after
    ``timeout`` seconds (an unreachable server fails the call instead of holding it); the
    pool keeps ``pool_size`` connections and opens up to ``max_overflow`` more for a burst
    (each of those a new server process, closed when returned); ``pool_wait`` is told the
    seconds of each checkout (waiting for a free connection included)."""
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    pool: dict[str, Any] = {}
    if pool_wait is not None:
        pool["poolclass"] = type("TimedPool", (_TimedPool,), {"observe": staticmethod(pool_wait)})
    return create_async_engine(
        url,
        **pool,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_pre_ping=True,
        pool_recycle=1800,
        pool_timeout=timeout,
        connect_args={"connect_timeout": max(1, math.ceil(timeout)), "options": _PG_OPTIONS},
    )


class _TimedPool(AsyncAdaptedQueuePool):
    """The async queue pool, timing each checkout (SQLAlchemy has no event before one: its
    ``checkout`` event comes after the wait). ``observe`` is set by ``create_engine``."""

    observe: Callable[[float], None]

    def _do_get(self) -> ConnectionPoolEntry:
        started = time.perf_counter()
        try:
            return super()._do_get()
        finally:
            self.observe(time.perf_counter() - started)


def for_reads(engine: AsyncEngine) -> AsyncEngine:
    """``engine`` for units of work that only read. PostgreSQL runs their statements in
    autocommit: at READ COMMITTED each statement reads its own snapshot inside a transaction
    too, so BEGIN and the ROLLBACK that returns the connection were two round trips that bought
    nothing (two of a search's ~11). SQLite begins them DEFERRED (``_on_begin``)."""
    if engine.dialect.name == "postgresql":
        return engine.execution_options(**{READ_ONLY: True}, isolation_level="AUTOCOMMIT")
    return engine.execution_options(**{READ_ONLY: True})


def _sqlite_engine(url: str) -> AsyncEngine:
    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    args, kwargs = _AIOSQLITE.create_connect_args(make_url(url))
    kwargs["timeout"] = SQLITE_BUSY_TIMEOUT_MS / 1000
    engine = create_async_engine(
        url,
        async_creator=partial(sqlite_driver.connect, *args, writers=asyncio.Lock(), **kwargs),
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
            connection.exec_driver_sql(sqlite_driver.BEGIN_WRITE)

    return engine


class ThreadedReader:
    """Read-only statements on a synchronous SQLite engine, each call run whole on a worker
    thread: one thread hop per call, where aiosqlite makes several per statement (begin,
    execute, fetch, rollback), each waiting on the event loop. sqlite3 releases the GIL while
    a statement runs, so the calls run beside the loop and beside each other."""

    def __init__(self, url: str | URL, threads: int = 2) -> None:
        url = make_url(url)
        if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
            raise ValueError("ThreadedReader needs an SQLite database file")
        self._engine = sa_create_engine(
            url.set(drivername="sqlite"),
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            pool_size=threads,
            max_overflow=1,  # ``connect``'s long reads
        )
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sql-read")

        @event.listens_for(self._engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            dbapi_connection.execute("PRAGMA query_only=ON")

    async def run(self, work: Callable[[Connection], T]) -> T:
        """``work`` on a pooled connection, on a worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, work)

    def connect(self) -> Connection:
        """A read-only connection for a long read on a thread of the caller's own."""
        return self._engine.connect()

    def _call(self, work: Callable[[Connection], T]) -> T:
        with self._engine.connect() as conn:
            return work(conn)

    async def close(self) -> None:
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        self._engine.dispose()


async def pg_driver_rows(
    conn: AsyncConnection, sql: str, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    """The rows of one PostgreSQL statement (psycopg's ``%(name)s`` placeholders) on ``conn``'s
    connection, as tuples straight from psycopg: for the search's hot statements, where
    SQLAlchemy's statement and result handling took more of the event loop than PostgreSQL's
    work (with the BM25 statement built once, a search at 3,000 memories went from 22.6 to
    16.4 ms of CPU). The statement's text is the same
    for every call (arrays as parameters, never a list of placeholders), so psycopg converts it
    once and prepares it on the server."""
    raw = await conn.get_raw_connection()
    async with raw.driver_connection.cursor() as cursor:  # type: ignore[union-attr]
        await cursor.execute(sql, params)
        return list(await cursor.fetchall())


def driver_rows(conn: Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """The rows of one read-only SQLite statement (``?`` placeholders), as tuples straight from
    the driver's cursor: for the search's hot reads, where SQLAlchemy's statement and result
    handling cost more than SQLite's work."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, tuple(params))  # DB-API style: adapters' execute returns None
        return list(cursor.fetchall())
    finally:
        cursor.close()
