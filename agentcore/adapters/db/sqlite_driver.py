"""An aiosqlite connection that runs each statement in one trip to its thread.

aiosqlite keeps a ``sqlite3`` connection on a thread of its own and sends it every call: to
make a cursor, to execute, to fetch, to close the cursor. Through SQLAlchemy a statement is
therefore three or four trips between the event loop and that thread, each a wake-up of both;
a ``memory.add`` (nine statements and a commit) spent most of its time in those trips, not in
SQLite. Here a cursor is made, executed, read to the end and closed in one trip, and the rows
are handed to SQLAlchemy from memory. Statements are still run one at a time on the
connection's own thread, so the event loop never waits on SQLite (a commit's fsync included).

Writers queue in the process. SQLite lets one transaction write at a time; a connection that
finds the lock taken sleeps in SQLite's busy handler (1, 2, 5 ... 100 ms) and tries again, so
under a stream of short writes a waiting connection can miss every release until its busy
timeout ends in "database is locked" (seen with 10,000 calls in one JSON-RPC batch). Here a
write transaction (``BEGIN IMMEDIATE``) first takes the engine's ``writers`` lock, first come
first served, and gives it back once it commits or rolls back; the busy handler is left to
arbitrate with other processes. Waiting longer than the busy timeout fails as SQLite would.

Every statement's rows are read whole, as SQLAlchemy's aiosqlite adapter already does for a
client-side cursor (a streamed result is read whole too).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import aiosqlite

BEGIN_WRITE = "BEGIN IMMEDIATE"  # how the engine starts a write transaction (engine._on_begin)
_Outcome = tuple[Any, list[Any], int, int | None]  # description, rows, rowcount, lastrowid


class OneTripCursor:
    """The part of ``aiosqlite.Cursor`` SQLAlchemy's adapter uses, one trip per statement."""

    arraysize = 1

    def __init__(self, connection: OneTripConnection) -> None:
        self._connection = connection
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None
        self._rows: list[Any] = []

    async def __aenter__(self) -> OneTripCursor:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def execute(self, sql: str, parameters: Any = ()) -> OneTripCursor:
        writes = sql.startswith(BEGIN_WRITE)
        if writes:
            await self._connection.begin_writing()
        run = partial(_execute, self._connection.sqlite, sql, parameters)
        try:
            self._take(await self._connection.run(run))
        except BaseException:
            if writes:
                self._connection.done_writing()
            raise
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> OneTripCursor:
        run = partial(_execute_many, self._connection.sqlite, sql, parameters)
        self._take(await self._connection.run(run))
        return self

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        count = self.arraysize if size is None else size
        rows, self._rows = self._rows[:count], self._rows[count:]
        return rows

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def close(self) -> None:
        self._rows = []

    def _take(self, outcome: _Outcome) -> None:
        self.description, self._rows, self.rowcount, self.lastrowid = outcome


class _Enter:
    """What ``OneTripConnection.cursor()`` returns: awaitable and an async context manager,
    like aiosqlite's, without a trip (the ``sqlite3`` cursor is made with the statement)."""

    def __init__(self, cursor: OneTripCursor) -> None:
        self._cursor = cursor

    def __await__(self) -> Any:
        return self._cursor.__aenter__().__await__()

    async def __aenter__(self) -> OneTripCursor:
        return self._cursor

    async def __aexit__(self, *_: object) -> None:
        await self._cursor.close()


class OneTripConnection(aiosqlite.Connection):
    def __init__(
        self,
        connector: Callable[[], sqlite3.Connection],
        writers: asyncio.Lock,
        wait_seconds: float,
    ) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._writers = writers
        self._wait_seconds = wait_seconds
        self._writing = False

    async def begin_writing(self) -> None:
        """Take the writers' lock for a write transaction (once, until it ends)."""
        if self._writing:
            return
        try:
            async with asyncio.timeout(self._wait_seconds):
                await self._writers.acquire()
        except TimeoutError:
            raise sqlite3.OperationalError("database is locked") from None
        self._writing = True

    def done_writing(self) -> None:
        if self._writing:
            self._writing = False
            self._writers.release()

    async def commit(self) -> None:
        try:
            await super().commit()
        finally:
            self.done_writing()

    async def rollback(self) -> None:
        try:
            await super().rollback()
        finally:
            self.done_writing()

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            self.done_writing()

    def stop(self) -> asyncio.Future[Any] | None:
        self.done_writing()
        return super().stop()

    @property
    def sqlite(self) -> sqlite3.Connection:
        return self._conn

    async def run(self, work: partial[_Outcome]) -> _Outcome:
        return await self._execute(work)  # type: ignore[no-any-return,no-untyped-call]

    def cursor(self) -> _Enter:  # type: ignore[override]
        return _Enter(OneTripCursor(self))


def _execute(connection: sqlite3.Connection, sql: str, parameters: Any) -> _Outcome:
    cursor = connection.execute(sql, parameters)
    try:
        return _outcome(cursor)
    finally:
        cursor.close()


def _execute_many(
    connection: sqlite3.Connection, sql: str, parameters: Iterable[Sequence[Any]]
) -> _Outcome:
    cursor = connection.executemany(sql, parameters)
    try:
        return _outcome(cursor)
    finally:
        cursor.close()


def _outcome(cursor: sqlite3.Cursor) -> _Outcome:
    description = cursor.description
    rows = cursor.fetchall() if description else []
    return description, rows, cursor.rowcount, cursor.lastrowid


def connect(database: str, *, writers: asyncio.Lock, **kwargs: Any) -> OneTripConnection:
    """Like ``aiosqlite.connect``: await the result to open the connection. ``writers`` is
    shared by the connections of one engine; ``kwargs`` go to ``sqlite3.connect`` (its
    ``timeout`` is also the longest wait for the writers' lock)."""

    def connector() -> sqlite3.Connection:
        connection: sqlite3.Connection = sqlite3.connect(database, **kwargs)
        return connection

    one_trip = OneTripConnection(connector, writers, float(kwargs.get("timeout", 5.0)))
    one_trip._thread.daemon = True  # as SQLAlchemy sets it for aiosqlite's own
    return one_trip
