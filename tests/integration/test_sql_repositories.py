"""The SQL repositories and unit of work against every relational backend: SQLite and Postgres.

Each backend is migrated by the real Alembic ``upgrade(url)``. Postgres gets a fresh database per
module (dropped afterwards); when it is unreachable the Postgres cases skip, or fail when CI=true.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.memory_rows import pg_memories, sqlite_memories
from agentcore.adapters.db.migrate import head_revision, upgrade
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory, ping
from agentcore.domain.errors import Conflict, MemoryNotFound
from agentcore.domain.filter_grammar import parse_filter
from agentcore.domain.filters import metadata_equals, tags_filter
from agentcore.domain.models import (
    EventKind,
    Layer,
    Memory,
    MemoryEvent,
    ScopeIds,
    ScopeLevel,
    new_id,
)
from agentcore.services.ports import Access, ListQuery

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
PLUS_TWO = timezone(timedelta(hours=2))


@pytest.fixture
def uows(engine: AsyncEngine) -> SqlUnitOfWorkFactory:
    return SqlUnitOfWorkFactory(engine)


def make_memory(**fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": new_id(),
        "content": "the user prefers dark roast",
        "layer": Layer.SEMANTIC,
        "scope_level": ScopeLevel.USER,
        "scope": ScopeIds(user_id="u1"),
        "created_at": T0,
        "updated_at": T0,
    }
    values.update(fields)
    return Memory(**values)


async def add_all(uows: SqlUnitOfWorkFactory, *memories: Memory) -> None:
    async with uows() as uow:
        for memory in memories:
            await uow.memories.add(memory)
        await uow.commit()


async def get(uows: SqlUnitOfWorkFactory, memory_id: str) -> Memory | None:
    async with uows() as uow:
        return await uow.memories.get(memory_id)


def assert_utc(*values: datetime | None) -> None:
    for value in values:
        assert value is not None
        assert value.tzinfo is not None
        assert value.utcoffset() == timedelta(0)


def full_memory() -> Memory:
    """Every field set away from its default; datetimes in a non-UTC zone."""
    return make_memory(
        content="ünïcode, 'quotes' and \"double\" — 10% of it",
        layer=Layer.EPISODIC,
        scope_level=ScopeLevel.TASK,
        scope=ScopeIds(
            task_id="t1",
            agent_id="a1",
            user_id="u1",
            session_id="s1",
            project_id="p1",
            team_id="tm1",
            org_id="o1",
            company_id="c1",
        ),
        created_at=datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=PLUS_TWO),
        updated_at=datetime(2025, 3, 4, 6, 0, tzinfo=PLUS_TWO),
        metadata={"nested": {"a": [1, 2.5, None, True]}, "k": "v"},
        tags=["alpha", "beta"],
        key="favourite-coffee",
        stage_id="stage-1",
        critical=True,
        importance=0.875,
        access_count=3,
        last_accessed_at=datetime(2025, 3, 5, tzinfo=PLUS_TWO),
        expires_at=datetime(2026, 1, 1, tzinfo=PLUS_TWO),
        source="import",
        confidence=0.66,
        promoted_from_id=new_id(),
        compacted_from_ids=[new_id(), new_id()],
        created_in_session_id="s0",
        embedding_model="minilm",
    )


async def test_every_field_round_trips_with_utc_datetimes(uows: SqlUnitOfWorkFactory) -> None:
    memory = full_memory()
    await add_all(uows, memory)

    stored = await get(uows, memory.id)

    assert stored == memory
    assert stored is not None
    assert stored.scope_key == "task:t1"
    assert_utc(stored.created_at, stored.updated_at, stored.last_accessed_at, stored.expires_at)
    assert stored.created_at.microsecond == 891011


async def test_driver_readers_read_memories_as_sqlalchemy_does(
    uows: SqlUnitOfWorkFactory, engine: AsyncEngine
) -> None:
    """The search's readers of candidate rows, straight from the driver: SQLite's, and
    PostgreSQL's in a session whose time zone is not UTC."""
    full, plain = full_memory(), make_memory()
    await add_all(uows, full, plain)
    wanted = [plain.id, full.id, plain.id, new_id()]
    async with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            read = await conn.run_sync(sqlite_memories, wanted)
        else:
            await conn.execute(text("SET LOCAL TIME ZONE 'America/New_York'"))
            read = await pg_memories(conn, wanted)
    assert sorted(read, key=lambda m: m.id) == sorted([full, plain], key=lambda m: m.id)
    assert_utc(*(m.created_at for m in read), *(m.expires_at for m in read if m.id == full.id))
    assert all(m.created_at.tzinfo is UTC for m in read)


async def test_defaults_round_trip(uows: SqlUnitOfWorkFactory) -> None:
    memory = make_memory()
    await add_all(uows, memory)
    assert await get(uows, memory.id) == memory


async def test_update_rewrites_every_field(uows: SqlUnitOfWorkFactory) -> None:
    original = make_memory()
    await add_all(uows, original)
    changed = replace(full_memory(), id=original.id)

    async with uows() as uow:
        await uow.memories.update(changed)
        await uow.commit()

    assert await get(uows, original.id) == changed


async def test_update_of_a_missing_memory_raises_not_found(uows: SqlUnitOfWorkFactory) -> None:
    async with uows() as uow:
        with pytest.raises(MemoryNotFound):
            await uow.memories.update(make_memory())


async def test_delete_counts_deleted_rows(uows: SqlUnitOfWorkFactory) -> None:
    first, second = make_memory(), make_memory()
    await add_all(uows, first, second)

    async with uows() as uow:
        assert await uow.memories.delete([first.id, first.id, new_id()]) == 1
        assert await uow.memories.delete([]) == 0
        await uow.commit()

    assert await get(uows, first.id) is None
    assert await get(uows, second.id) == second


async def test_get_many_returns_found_memories_only(uows: SqlUnitOfWorkFactory) -> None:
    memories = [make_memory() for _ in range(3)]
    await add_all(uows, *memories)

    async with uows() as uow:
        found = await uow.memories.get_many([memories[0].id, new_id(), memories[2].id])
        none = await uow.memories.get_many([])

    assert sorted(m.id for m in found) == sorted([memories[0].id, memories[2].id])
    assert none == []


async def page_through(
    uows: SqlUnitOfWorkFactory, query: ListQuery
) -> tuple[list[Memory], list[int]]:
    seen: list[Memory] = []
    totals: list[int] = []
    after = None
    while True:
        async with uows() as uow:
            rows, total = await uow.memories.page(replace(query, after=after))
        totals.append(total)
        seen.extend(rows)
        if len(rows) < query.limit:
            return seen, totals
        after = (rows[-1].created_at, rows[-1].id)


@pytest.mark.parametrize("order_desc", [True, False])
@pytest.mark.parametrize("limit", [1, 4, 50])
async def test_pages_follow_created_at_then_id_across_equal_timestamps(
    uows: SqlUnitOfWorkFactory, order_desc: bool, limit: int
) -> None:
    # Three timestamps shared by 13 memories, so most page boundaries fall inside a tie.
    memories = [make_memory(created_at=T0 + timedelta(seconds=i % 3)) for i in range(13)]
    await add_all(uows, *memories)
    expected = sorted(memories, key=lambda m: (m.created_at, m.id), reverse=order_desc)

    query = ListQuery(scope_keys=["user:u1"], order_desc=order_desc, limit=limit)
    seen, totals = await page_through(uows, query)

    assert [m.id for m in seen] == [m.id for m in expected]
    assert set(totals) == {13}


async def test_cursor_in_another_timezone_means_the_same_instant(
    uows: SqlUnitOfWorkFactory,
) -> None:
    memories = [make_memory(created_at=T0 + timedelta(minutes=i)) for i in range(4)]
    await add_all(uows, *memories)
    cursor = (memories[1].created_at.astimezone(PLUS_TWO), memories[1].id)

    async with uows() as uow:
        rows, total = await uow.memories.page(
            ListQuery(scope_keys=["user:u1"], order_desc=False, after=cursor)
        )

    assert [m.id for m in rows] == [memories[2].id, memories[3].id]
    assert total == 4


async def ids_for(uows: SqlUnitOfWorkFactory, query: ListQuery) -> tuple[set[str], int]:
    async with uows() as uow:
        rows, total = await uow.memories.page(query)
    return {m.id for m in rows}, total


async def test_each_filter_narrows_the_page_and_the_total(uows: SqlUnitOfWorkFactory) -> None:
    base = make_memory(tags=["red", "it's"])
    episodic = make_memory(layer=Layer.EPISODIC, stage_id="st1", tags=["reddish"])
    other_scope = make_memory(scope_level=ScopeLevel.AGENT, scope=ScopeIds(agent_id="a1"))
    third_scope = make_memory(scope=ScopeIds(user_id="u2"), tags=["red"])
    older = make_memory(created_at=T0 - timedelta(days=2), tags=["blue", "red"])
    expired = make_memory(expires_at=T0 + timedelta(hours=1))
    alive = make_memory(expires_at=T0 + timedelta(days=1))
    await add_all(uows, base, episodic, other_scope, third_scope, older, expired, alive)
    both = ["user:u1", "agent:a1"]

    cases: list[tuple[ListQuery, set[str]]] = [
        (
            ListQuery(scope_keys=both),
            {base.id, episodic.id, other_scope.id, older.id, expired.id, alive.id},
        ),
        (ListQuery(scope_keys=["agent:a1"]), {other_scope.id}),
        (ListQuery(scope_keys=both, layer=Layer.EPISODIC), {episodic.id}),
        (ListQuery(scope_keys=both, where=parse_filter({"stage_id": "st1"})), {episodic.id}),
        (ListQuery(scope_keys=both, where=tags_filter(["red"])), {base.id, older.id}),
        (ListQuery(scope_keys=both, where=tags_filter(["it's", "blue"])), {base.id, older.id}),
        (ListQuery(scope_keys=both, where=tags_filter(["reddish", "none"])), {episodic.id}),
        (ListQuery(scope_keys=both, where=tags_filter(["re"])), set()),
        (ListQuery(scope_keys=both, since=T0 - timedelta(days=2), until=T0), {older.id}),
        (
            ListQuery(scope_keys=both, since=T0),
            {base.id, episodic.id, other_scope.id, expired.id, alive.id},
        ),
        (
            ListQuery(scope_keys=["user:u1"], alive_at=T0 + timedelta(hours=1)),
            {base.id, episodic.id, older.id, alive.id},
        ),
        (ListQuery(scope_keys=[]), set()),
    ]
    for query, expected in cases:
        assert await ids_for(uows, query) == (expected, len(expected)), query


async def test_total_ignores_the_cursor_and_the_limit(uows: SqlUnitOfWorkFactory) -> None:
    memories = [make_memory(created_at=T0 + timedelta(seconds=i)) for i in range(5)]
    await add_all(uows, *memories)
    query = ListQuery(
        scope_keys=["user:u1"], limit=2, after=(memories[3].created_at, memories[3].id)
    )

    ids, total = await ids_for(uows, query)

    assert ids == {memories[2].id, memories[1].id}
    assert total == 5


async def test_add_accesses_increments_and_stamps(uows: SqlUnitOfWorkFactory) -> None:
    memory, untouched = make_memory(access_count=2), make_memory()
    await add_all(uows, memory, untouched)
    later = datetime(2025, 6, 1, 10, tzinfo=PLUS_TWO)

    async with uows() as uow:
        await uow.memories.add_accesses({memory.id: Access(1, T0)})
        await uow.memories.add_accesses({memory.id: Access(2, later), new_id(): Access(1, later)})
        seen_inside = await uow.memories.get(memory.id)
        await uow.commit()

    stored = await get(uows, memory.id)
    assert seen_inside == stored
    assert stored is not None
    assert stored.access_count == 5
    assert stored.last_accessed_at == later
    assert_utc(stored.last_accessed_at)
    assert await get(uows, untouched.id) == untouched


async def test_ids_in_scope_is_one_layer_of_one_scope(uows: SqlUnitOfWorkFactory) -> None:
    first = make_memory()
    second = make_memory(created_at=T0 + timedelta(seconds=1))
    await add_all(
        uows,
        second,
        first,
        make_memory(layer=Layer.EPISODIC),
        make_memory(scope=ScopeIds(user_id="u2")),
    )

    async with uows() as uow:
        assert await uow.memories.ids_in_scope("user:u1", Layer.SEMANTIC) == [first.id, second.id]
        assert await uow.memories.ids_in_scope("user:u3", Layer.SEMANTIC) == []


async def test_history_is_oldest_first_and_outlives_the_memory(
    uows: SqlUnitOfWorkFactory,
) -> None:
    memory = make_memory()
    events = [
        MemoryEvent(new_id(), memory.id, "user:u1", EventKind.ADD, T0, None, {"content": "x"}),
        # Same instant as the add: kept in the order written.
        MemoryEvent(new_id(), memory.id, "user:u1", EventKind.UPDATE, T0, {"a": 1}, {"a": 2}),
        MemoryEvent(
            new_id(), memory.id, "user:u1", EventKind.DELETE, T0 + timedelta(1), actor="api"
        ),
    ]
    async with uows() as uow:
        await uow.memories.add(memory)
        await uow.history.add(events[0])
        await uow.history.add(events[1])
        await uow.history.add(
            MemoryEvent(new_id(), new_id(), "user:u9", EventKind.ADD, T0 - timedelta(1))
        )
        await uow.commit()
    async with uows() as uow:
        await uow.memories.delete([memory.id])
        await uow.history.add(events[2])
        await uow.commit()

    async with uows() as uow:
        stored = await uow.history.for_memory(memory.id)
        missing = await uow.history.for_memory(new_id())

    assert stored == events
    assert_utc(*(event.at for event in stored))
    assert missing == []


async def test_outbox_queue(uows: SqlUnitOfWorkFactory) -> None:
    async with uows() as uow:
        ids = [
            await uow.outbox.add("m1", "upsert"),
            await uow.outbox.add("m2", "delete"),
            await uow.outbox.add("m3", "upsert"),
        ]
        with pytest.raises(ValueError, match="outbox op"):
            await uow.outbox.add("m4", "merge")
        await uow.commit()
    assert ids == sorted(ids)
    assert len(set(ids)) == 3

    async with uows() as uow:
        first_two = await uow.outbox.pending(2)
        await uow.outbox.mark_failed([ids[0]])
        await uow.outbox.mark_failed([ids[0], ids[2]])
        await uow.outbox.remove([ids[1]])
        await uow.commit()

    async with uows() as uow:
        left = await uow.outbox.pending(10)
        count = await uow.outbox.count()

    assert [(e.id, e.memory_id, e.op, e.attempts) for e in first_two] == [
        (ids[0], "m1", "upsert", 0),
        (ids[1], "m2", "delete", 0),
    ]
    assert [(e.id, e.memory_id, e.attempts) for e in left] == [(ids[0], "m1", 2), (ids[2], "m3", 1)]
    assert count == 2


async def test_outbox_failure_is_stamped(uows: SqlUnitOfWorkFactory, engine: AsyncEngine) -> None:
    async with uows() as uow:
        entry = await uow.outbox.add("m1", "upsert")
        await uow.outbox.mark_failed([entry])
        await uow.commit()
    async with engine.connect() as conn:
        row = (await conn.execute(text("SELECT last_error_at FROM vector_outbox"))).one()
    assert row[0] is not None


async def test_store_settings_get_and_upsert(uows: SqlUnitOfWorkFactory) -> None:
    async with uows() as uow:
        assert await uow.store_settings.get("embedder") is None
        await uow.store_settings.put("embedder", "minilm:384")
        await uow.commit()
    async with uows() as uow:
        await uow.store_settings.put("embedder", "openai:1536")
        await uow.store_settings.put("other", "x")
        await uow.commit()
    async with uows() as uow:
        assert await uow.store_settings.get("embedder") == "openai:1536"
        assert await uow.store_settings.get("other") == "x"


async def fail_inside_a_unit_of_work(uows: SqlUnitOfWorkFactory, memory: Memory) -> None:
    try:
        async with uows() as uow:
            await uow.memories.add(memory)
            raise RuntimeError("boom")
    except RuntimeError:
        return
    raise AssertionError("the error was swallowed")


async def test_nothing_is_kept_without_commit(uows: SqlUnitOfWorkFactory) -> None:
    memory = make_memory()
    async with uows() as uow:
        await uow.memories.add(memory)
        await uow.history.add(MemoryEvent(new_id(), memory.id, "user:u1", EventKind.ADD, T0))
        await uow.outbox.add(memory.id, "upsert")
        await uow.store_settings.put("embedder", "x")
    await fail_inside_a_unit_of_work(uows, make_memory())

    async with uows() as uow:
        rows, total = await uow.memories.page(ListQuery(scope_keys=["user:u1"]))
        assert (rows, total) == ([], 0)
        assert await uow.history.for_memory(memory.id) == []
        assert await uow.outbox.count() == 0
        assert await uow.store_settings.get("embedder") is None


async def test_a_key_is_unique_within_its_scope(uows: SqlUnitOfWorkFactory) -> None:
    first = make_memory(key="k")
    keyless = [make_memory(), make_memory()]  # any number of memories without a key
    await add_all(uows, first, *keyless)

    async with uows() as uow:
        with pytest.raises(Conflict):
            await uow.memories.add(make_memory(key="k"))
        with pytest.raises(Conflict):
            await uow.memories.add(replace(first, key="another"))  # same id
        # The conflict leaves the unit of work usable.
        other_scope = make_memory(key="k", scope=ScopeIds(user_id="u2"))
        await uow.memories.add(other_scope)
        await uow.commit()

    assert await get(uows, other_scope.id) == other_scope
    async with uows() as uow:
        _, total = await uow.memories.page(ListQuery(scope_keys=["user:u1"]))
    assert total == 3


async def test_updating_onto_a_taken_key_conflicts(uows: SqlUnitOfWorkFactory) -> None:
    first, second = make_memory(key="k1"), make_memory(key="k2")
    await add_all(uows, first, second)

    async with uows() as uow:
        with pytest.raises(Conflict):
            await uow.memories.update(replace(second, key="k1"))

    assert await get(uows, second.id) == second


async def test_concurrent_read_then_write_units_of_work_all_succeed(
    uows: SqlUnitOfWorkFactory,
) -> None:
    counter = make_memory()
    await add_all(uows, counter)

    async def bump(i: int) -> None:
        async with uows() as uow:
            await uow.memories.get(counter.id)
            await uow.memories.add_accesses({counter.id: Access(1, T0)})
            await uow.memories.add(make_memory(content=f"m{i}"))
            await uow.commit()

    await asyncio.gather(*(bump(i) for i in range(40)))

    stored = await get(uows, counter.id)
    assert stored is not None
    assert stored.access_count == 40


async def test_upgrade_twice_is_a_no_op(uows: SqlUnitOfWorkFactory, database_url: str) -> None:
    memory = make_memory()
    await add_all(uows, memory)

    await asyncio.to_thread(upgrade, database_url)
    await asyncio.to_thread(upgrade, database_url)

    assert await get(uows, memory.id) == memory
    engine = create_engine(database_url)
    try:
        await ping(engine)
        async with engine.connect() as conn:
            versions = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
    finally:
        await engine.dispose()
    assert [row[0] for row in versions] == [head_revision()]


async def test_metadata_filter_matches_value_and_type(uows: SqlUnitOfWorkFactory) -> None:
    key = ScopeIds(user_id="u1")
    rows = [
        make_memory(scope=key, metadata={"action": "deploy", "n": 3, "ok": True}),
        make_memory(scope=key, metadata={"action": "deploy", "n": "3", "ok": False}),
        make_memory(scope=key, metadata={"action": "rollback"}),
    ]
    await add_all(uows, *rows)

    async def ids(**metadata: str | int | bool) -> set[str]:
        async with uows(read_only=True) as uow:
            found, total = await uow.memories.page(
                ListQuery(scope_keys=["user:u1"], where=metadata_equals(metadata), limit=10)
            )
        assert total == len(found)
        return {m.id for m in found}

    assert await ids(action="deploy") == {rows[0].id, rows[1].id}
    assert await ids(action="deploy", n=3) == {rows[0].id}
    assert await ids(n="3") == {rows[1].id}
    assert await ids(ok=True) == {rows[0].id}
    assert await ids(ok=False) == {rows[1].id}
    assert await ids(action="missing") == set()


async def test_get_by_key_and_keyed_only(uows: SqlUnitOfWorkFactory) -> None:
    keyed = make_memory(key="favourite_colour", content='"green"')
    await add_all(uows, keyed, make_memory())
    async with uows(read_only=True) as uow:
        assert await uow.memories.get_by_key("user:u1", "favourite_colour") == keyed
        assert await uow.memories.get_by_key("user:u2", "favourite_colour") is None
        found, total = await uow.memories.page(
            ListQuery(scope_keys=["user:u1"], keyed_only=True, limit=10)
        )
    assert [m.id for m in found] == [keyed.id]
    assert total == 1


async def test_in_stage_lists_a_stage_oldest_first(uows: SqlUnitOfWorkFactory) -> None:
    later = make_memory(stage_id="st-1", created_at=T0 + timedelta(seconds=5))
    first = make_memory(stage_id="st-1", scope=ScopeIds(task_id="t1"), scope_level=ScopeLevel.TASK)
    await add_all(uows, later, first, make_memory(stage_id="st-2"))
    async with uows(read_only=True) as uow:
        found = await uow.memories.in_stage("st-1")
    assert [m.id for m in found] == [first.id, later.id]
