"""The one-trip SQLite connection under SQLAlchemy, on a real database file: every kind of
result SQLAlchemy reads from a cursor, errors, transactions, and one trip per statement."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db import sqlite_driver
from agentcore.adapters.db.engine import READ_ONLY, create_engine


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'driver.db'}")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
    yield engine
    await engine.dispose()


async def test_the_engine_runs_on_the_one_trip_connection(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        assert isinstance(raw.driver_connection, sqlite_driver.OneTripConnection)


async def test_rows_rowcount_lastrowid_and_returning(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        inserted = await conn.execute(text("INSERT INTO t (name) VALUES ('a')"))
        assert inserted.rowcount == 1
        assert inserted.lastrowid == 1
        returned = await conn.execute(
            text("INSERT INTO t (name) VALUES ('b'), ('c') RETURNING id, name")
        )
        assert sorted(returned.all()) == [(2, "b"), (3, "c")]
        many = await conn.execute(
            text("INSERT INTO t (name) VALUES (:name)"), [{"name": "d"}, {"name": "e"}]
        )
        assert many.rowcount == 2
        updated = await conn.execute(text("UPDATE t SET name = name || '!' WHERE id > 3"))
        assert updated.rowcount == 2
    async with engine.connect() as conn:
        result = await conn.execute(text("SELECT id, name FROM t ORDER BY id"))
        assert result.keys() == ["id", "name"]
        assert result.fetchone() == (1, "a")
        assert result.fetchmany(2) == [(2, "b"), (3, "c")]
        assert result.fetchall() == [(4, "d!"), (5, "e!")]
        assert (await conn.execute(text("SELECT name FROM t WHERE id = 99"))).first() is None
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 5


async def test_an_error_is_the_drivers_and_the_transaction_rolls_back(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("INSERT INTO t (name) VALUES ('x')"))
        with pytest.raises(IntegrityError) as caught:
            await conn.execute(text("INSERT INTO t (name) VALUES ('x')"))
        await conn.rollback()
    assert isinstance(caught.value.orig, sqlite3.IntegrityError)
    with pytest.raises(OperationalError):
        async with engine.connect() as conn:
            await conn.execute(text("SELECT nope FROM t"))
    async with engine.connect() as conn:  # the first insert went with the rolled-back one
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
        # the connection is still usable after an error
        assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1


async def test_one_trip_to_the_thread_per_statement(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips: list[Any] = []
    original = sqlite_driver.OneTripConnection._execute

    async def counted(self: sqlite_driver.OneTripConnection, fn: Any, *args: Any) -> Any:
        trips.append(fn)
        return await original(self, fn, *args)

    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))  # the connection is open and in the pool
        monkeypatch.setattr(sqlite_driver.OneTripConnection, "_execute", counted)
        for name in ("p", "q", "r"):
            await conn.execute(text("INSERT INTO t (name) VALUES (:n)"), {"n": name})
        assert len(trips) == 3
        rows = (await conn.execute(text("SELECT name FROM t ORDER BY name"))).scalars().all()
        assert rows == ["p", "q", "r"]
        assert len(trips) == 4


async def test_writers_queue_in_order_and_never_time_out_behind_short_writes(
    engine: AsyncEngine,
) -> None:
    """Many more concurrent write transactions than pooled connections, each short: SQLite's
    busy handler alone let a waiting connection miss every release ("database is locked")."""

    async def write(n: int) -> None:
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t (name) VALUES (:n)"), {"n": f"w{n}"})

    await asyncio.gather(*(write(n) for n in range(400)))
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM t"))).scalar_one() == 400


async def test_writers_waiting_for_the_one_writing_go_first_come_first_served(
    engine: AsyncEngine,
) -> None:
    """SQLite's busy handler retries with growing sleeps, so the writer that waited longest
    was the likeliest to lose the lock to a newcomer; in the process they queue in order."""
    began: list[int] = []

    async def write(n: int) -> None:
        async with engine.begin() as conn:
            began.append(n)
            await conn.execute(text("INSERT INTO t (name) VALUES (:n)"), {"n": f"w{n}"})

    async with engine.begin() as first:
        await first.execute(text("INSERT INTO t (name) VALUES ('first')"))
        waiting = []
        for n in range(3):  # with the reader and the first: the five pooled connections
            waiting.append(asyncio.create_task(write(n)))
            await asyncio.sleep(0.15)
        async with engine.connect() as reader:  # a read-only transaction does not queue
            reader = await reader.execution_options(**{READ_ONLY: True})
            assert (await reader.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
        assert began == []
    await asyncio.gather(*waiting)
    assert began == [0, 1, 2]
