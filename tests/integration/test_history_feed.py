"""The history read as a feed (``adapters/db/history_feed.py``): positions in commit order on
each backend, so a reader that tails by position misses nothing while writers overlap."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.history_feed import SAFE_MARK_REUSE_SECONDS, SqlHistoryFeed
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.domain.models import EventKind, MemoryEvent, new_id
from tests.conftest import PG_HOST, _postgres_role


def _event(scope_key: str) -> MemoryEvent:
    return MemoryEvent(
        id=new_id(),
        memory_id=new_id(),
        scope_key=scope_key,
        kind=EventKind.ADD,
        at=datetime.now(UTC),
        after={"content": "x"},
    )


async def _write(factory: SqlUnitOfWorkFactory, scope_key: str, hold: float) -> str:
    """One event in a transaction that stays open ``hold`` seconds after its insert: a
    position drawn early may commit after later ones."""
    event = _event(scope_key)
    async with factory() as uow:
        await uow.history.add(event)
        await asyncio.sleep(hold)
        await uow.commit()
    return event.memory_id


async def _tail(
    feed: SqlHistoryFeed, keys: list[str], until: int, seen: list[tuple[int, str]]
) -> None:
    position = 0
    while len(seen) < until:
        events = await feed.after(position, keys, 50)
        for e in events:
            seen.append((e.position, e.memory_id))
            position = e.position
        if not events:
            await asyncio.sleep(0.002)


async def test_a_tailing_reader_gets_every_event_once_in_order(engine: AsyncEngine) -> None:
    factory = SqlUnitOfWorkFactory(engine)
    feed = SqlHistoryFeed(engine)
    rng = random.Random(7)
    count = 300
    seen: list[tuple[int, str]] = []
    reader = asyncio.create_task(_tail(feed, ["user:a"], count, seen))
    written = await asyncio.gather(
        *(_write(factory, "user:a", rng.choice((0, 0, 0.001, 0.02))) for _ in range(count))
    )
    await asyncio.wait_for(reader, 30)

    positions = [p for p, _ in seen]
    assert positions == sorted(set(positions))  # increasing, no repeats
    assert sorted(m for _, m in seen) == sorted(written)  # none missing
    assert await feed.head() == positions[-1]


async def test_a_reader_sees_only_the_scopes_it_names(engine: AsyncEngine) -> None:
    factory = SqlUnitOfWorkFactory(engine)
    feed = SqlHistoryFeed(engine)
    start = await feed.head()
    mine = [await _write(factory, "user:a", 0) for _ in range(3)]
    await _write(factory, "user:b", 0)

    events = await feed.after(start, ["user:a"], 10)

    assert [e.memory_id for e in events] == mine
    assert [e.kind for e in events] == ["add"] * 3
    assert await feed.after(events[-1].position, ["user:a"], 10) == []


async def test_a_position_drawn_by_a_transaction_still_open_holds_later_ones_back(
    engine: AsyncEngine,
) -> None:
    """PostgreSQL: the open transaction drew first; what committed after it is not delivered
    until it ends (on SQLite the second writer waits for the first instead)."""
    factory = SqlUnitOfWorkFactory(engine)
    feed = SqlHistoryFeed(engine)
    start = await feed.head()
    slow = asyncio.create_task(_write(factory, "user:a", 0.5))
    await asyncio.sleep(0.1)
    fast = asyncio.create_task(_write(factory, "user:a", 0))
    await asyncio.sleep(0.1)
    early = [e.memory_id for e in await feed.after(start, ["user:a"], 10)]
    assert early == []
    ids = [await slow, await fast]

    for _ in range(100):  # the mark moves on the reads after the slow one ended
        found = [e.memory_id for e in await feed.after(start, ["user:a"], 10)]
        if len(found) == 2:
            break
        await asyncio.sleep(0.01)
    assert found == ids


async def test_a_long_transaction_in_another_database_does_not_hold_the_feed_back(
    engine: AsyncEngine,
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only: SQLite's positions are final when written")
    factory = SqlUnitOfWorkFactory(engine)
    feed = SqlHistoryFeed(engine)
    other = psycopg.connect(f"postgresql://{_postgres_role()}@{PG_HOST}/test")
    try:
        other.execute("SELECT txid_current()")  # a write transaction of another database, open
        written = await _write(factory, "user:a", 0)
        events = []
        for _ in range(500):  # 5 s at most
            if events := await feed.after(0, ["user:a"], 10):
                break
            await asyncio.sleep(0.01)
        assert [e.memory_id for e in events] == [written]
    finally:
        other.rollback()
        other.close()


# A writer's draw: its transaction takes an id first, as the history's insert does.
_DRAW = "SELECT txid_current(), nextval('memory_history_position_seq')"


def _connect(engine: AsyncEngine) -> psycopg.Connection[Any]:
    return psycopg.connect(engine.url.render_as_string(hide_password=False).replace("+psycopg", ""))


async def _head_after_reuse(feed: SqlHistoryFeed) -> int:
    await asyncio.sleep(SAFE_MARK_REUSE_SECONDS * 2)
    return await feed.head()


async def test_a_writer_of_a_later_id_that_drew_first_holds_the_mark_back(
    engine: AsyncEngine,
) -> None:
    """Two writers: the one with the lower transaction id draws the later position and ends
    first. The other's id is then at or above its snapshot's ``xmax`` (the last ended id plus
    one), which the mark used to take for ended: its position was passed before it committed,
    and its event never sent (the change stream's rare stall under concurrent writes)."""
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only: SQLite's positions are final when written")
    feed = SqlHistoryFeed(engine)
    earlier, later = _connect(engine), _connect(engine)
    try:
        earlier.execute("SELECT txid_current()")  # the lower id
        held = int(later.execute(_DRAW).fetchone()[1])  # type: ignore[index]
        ended = int(earlier.execute(_DRAW).fetchone()[1])  # type: ignore[index]
        earlier.commit()
        assert await _head_after_reuse(feed) < held
        later.commit()
        assert await _head_after_reuse(feed) == ended
    finally:
        earlier.close()
        later.close()
