"""SQL repositories of memories (keyset pages, filters, exact duplicates, key lookups), their
history and the store's settings; each works inside the unit of work's ``AsyncSession``.
Rows ⇄ ``Memory`` is ``memory_rows``'; the vector outbox is ``outbox``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Float,
    String,
    Table,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.dialect import chunks, insert_ignoring_conflicts_of, upsert
from agentcore.adapters.db.filter_sql import filter_sql, metadata_text
from agentcore.adapters.db.lexical.writer import LexicalWriter
from agentcore.adapters.db.memory_rows import (
    MEMORIES,
    memory_from_row,
    memory_values,
    pg_memories,
    select_by_ids,
    select_memories,
)
from agentcore.adapters.db.tables import (
    MemoryHistoryRow,
    MemoryRow,
    StoreSettingRow,
)
from agentcore.adapters.db.types import UTCDateTime
from agentcore.domain.errors import Conflict, MemoryNotFound
from agentcore.domain.filters import Filter
from agentcore.domain.models import EventKind, Layer, Memory, MemoryEvent, ScopeLevel
from agentcore.services.ports import Access, ItemQuery, ListQuery, ScopeLayerCount

_HISTORY = cast(Table, MemoryHistoryRow.__table__)
_SETTINGS = cast(Table, StoreSettingRow.__table__)
_TEXT_LOCKS = 0x54455854  # "TEXT": the first key of the advisory locks of one text in a scope


class SqlMemoryRepository:
    """``MemoryRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect
        self._lexical = LexicalWriter(session, dialect)  # the lexical index, same transaction

    async def add(self, memory: Memory) -> None:
        """Raises ``Conflict`` when the id, or the key within the scope, is already taken.

        The transaction stays usable after a conflict."""
        stmt = insert_ignoring_conflicts_of(self._dialect, MEMORIES)
        result = cast(CursorResult[Any], await self._session.execute(stmt, memory_values(memory)))
        if result.rowcount == 0:
            raise Conflict(
                "a memory with this id, or this key in this scope, already exists",
                memory_id=memory.id,
                key=memory.key,
            )
        await self._lexical.index(memory, new=True)

    async def add_many(self, memories: Sequence[Memory]) -> None:
        """One statement for the rows, a few for the lexical documents (``index_new``)."""
        if len(memories) == 1:
            return await self.add(memories[0])
        stmt = insert_ignoring_conflicts_of(self._dialect, MEMORIES)
        values = [memory_values(memory) for memory in memories]
        result = cast(CursorResult[Any], await self._session.execute(stmt, values))
        if result.rowcount != len(memories):
            raise Conflict(
                "a memory with one of these ids, or one of these keys in its scope, already exists",
                memory_ids=[memory.id for memory in memories],
            )
        await self._lexical.index_new(memories)
        return None

    async def get(self, memory_id: str) -> Memory | None:
        rows = (
            await self._session.execute(select_memories().where(MEMORIES.c.id == memory_id))
        ).mappings()
        row = rows.one_or_none()
        return None if row is None else memory_from_row(row)

    async def get_many(
        self, memory_ids: Sequence[str], where: Filter | None = None
    ) -> list[Memory]:
        if where is None and self._dialect == "postgresql":
            return await pg_memories(await self._session.connection(), memory_ids)
        found: list[Memory] = []
        for stmt in select_by_ids(memory_ids):
            if where is not None:
                stmt = stmt.where(filter_sql(self._dialect, MEMORIES, where))
            rows = await self._session.execute(stmt)
            found.extend(memory_from_row(row) for row in rows.mappings())
        return found

    async def update(self, memory: Memory) -> None:
        """Write every field of ``memory``. Raises ``MemoryNotFound`` if it is not stored, and
        ``Conflict`` if its key is taken in its scope (the unit of work must then be dropped)."""
        values = memory_values(memory)
        del values["id"]
        stmt = update(MEMORIES).where(MEMORIES.c.id == memory.id).values(values)
        try:
            result = cast(CursorResult[Any], await self._session.execute(stmt))
        except IntegrityError as exc:
            raise Conflict(
                "another memory has this key in this scope", memory_id=memory.id, key=memory.key
            ) from exc
        if result.rowcount == 0:
            raise MemoryNotFound("memory not found", memory_id=memory.id)
        if memory.compacted_into_id is None:
            await self._lexical.index(memory)
        else:  # compacted into another memory: out of search
            await self._lexical.remove([memory.id])

    async def delete(self, memory_ids: Sequence[str]) -> int:
        deleted = 0
        for part in chunks(list(dict.fromkeys(memory_ids))):
            await self._lexical.remove(part)
            stmt = delete(MEMORIES).where(MEMORIES.c.id.in_(part))
            result = cast(CursorResult[Any], await self._session.execute(stmt))
            deleted += result.rowcount
        return deleted

    async def page(self, query: ListQuery) -> tuple[list[Memory], int]:
        """One page in (created_at, id) order (or (importance, created_at, id)), and the total
        count matching the filters.

        ``since`` is inclusive and ``until`` exclusive; ``after`` is a keyset cursor: the page
        starts strictly after that (created_at, id) in the requested order."""
        if not query.scope_keys:
            return [], 0
        conditions = self._filters(query)
        columns: list[Any] = [MemoryRow.created_at, MemoryRow.id]
        bound: list[Any] = []
        if query.after is not None:
            bound = [literal(query.after[0], UTCDateTime()), literal(query.after[1], String())]
        if query.by_importance:
            columns.insert(0, MemoryRow.importance)
            if bound:
                bound.insert(0, literal(query.after_importance or 0.0, Float()))
        if bound:
            row, limit = tuple_(*columns), tuple_(*bound)
            conditions.append(row < limit if query.order_desc else row > limit)
        order = [c.desc() if query.order_desc else c.asc() for c in columns]
        stmt = select_memories().where(*conditions).order_by(*order).limit(max(query.limit, 0))
        rows = await self._session.execute(stmt)
        memories = [memory_from_row(row) for row in rows.mappings()]
        return memories, await self._count(query)

    async def ids_in_scope(self, scope_key: str, layer: Layer) -> list[str]:
        stmt = (
            select(MemoryRow.id)
            .where(MemoryRow.scope_key == scope_key, MemoryRow.layer == layer.value)
            .order_by(MemoryRow.created_at, MemoryRow.id)
        )
        return list(await self._session.scalars(stmt))

    async def in_session(self, session_id: str, levels: Sequence[ScopeLevel]) -> list[Memory]:
        stmt = (
            select_memories()
            .where(
                MEMORIES.c.session_id == session_id,
                MEMORIES.c.scope_level.in_([level.value for level in levels]),
                MEMORIES.c.compacted_into_id.is_(None),
            )
            .order_by(MEMORIES.c.created_at, MEMORIES.c.id)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def lock_texts(self, keys: Sequence[str]) -> None:
        """Postgres: transaction-scoped advisory locks on ``keys`` (scope key and content hash),
        taken in one order, so that concurrent writers of one text in one scope take turns.
        SQLite: nothing to do, its write transactions already hold the database lock."""
        if self._dialect == "postgresql" and keys:
            await self._session.execute(
                text(
                    "SELECT pg_advisory_xact_lock(:space, hashtext(k)) "
                    "FROM unnest(CAST(:keys AS text[])) AS k ORDER BY k"
                ),
                {"space": _TEXT_LOCKS, "keys": sorted(set(keys))},
            )

    async def same_texts(
        self, scope_keys: Sequence[str], hashes: Sequence[str], now: datetime
    ) -> list[Memory]:
        """The live memories (current, not compacted, not expired, not keyed) of ``scope_keys``
        whose content hash is one of ``hashes``, oldest first."""
        stmt = (
            select_memories()
            .where(
                MEMORIES.c.scope_key.in_(sorted(set(scope_keys))),
                MEMORIES.c.content_hash.in_(sorted(set(hashes))),
                MEMORIES.c.compacted_into_id.is_(None),
                MEMORIES.c.superseded_by.is_(None),
                MEMORIES.c.key.is_(None),
                or_(MEMORIES.c.expires_at.is_(None), MEMORIES.c.expires_at > now),
            )
            .order_by(MEMORIES.c.created_at, MEMORIES.c.id)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def session_writers(self, session_id: str) -> list[tuple[str, str | None]]:
        stmt = (
            select(MemoryRow.scope_key, MemoryRow.agent_id)
            .where(MemoryRow.session_id == session_id, MemoryRow.compacted_into_id.is_(None))
            .distinct()
            .order_by(MemoryRow.scope_key, MemoryRow.agent_id)
        )
        return [(key, agent) for key, agent in (await self._session.execute(stmt)).all()]

    async def items(self, query: ItemQuery) -> list[Memory]:
        stmt = (
            select_memories()
            .where(*self._item_filters(query))
            .order_by(MEMORIES.c.updated_at.desc(), MEMORIES.c.id.desc())
            .offset(max(query.offset, 0))
            .limit(max(query.limit, 0))
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def scope_layers(self) -> list[ScopeLayerCount]:
        stmt = (
            select(
                MemoryRow.scope_key,
                MemoryRow.layer,
                func.count(),
                func.max(MemoryRow.updated_at),
            )
            .where(MemoryRow.compacted_into_id.is_(None))
            .group_by(MemoryRow.scope_key, MemoryRow.layer)
        )
        rows = (await self._session.execute(stmt)).all()
        return [
            ScopeLayerCount(key, layer, int(count), latest) for key, layer, count, latest in rows
        ]

    async def superseded_by(self, scope_key: str, memory_id: str) -> list[Memory]:
        stmt = (
            select_memories()
            .where(MEMORIES.c.superseded_by == memory_id, MEMORIES.c.scope_key == scope_key)
            .order_by(MEMORIES.c.created_at, MEMORIES.c.id)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def item_namespaces(self, query: ItemQuery) -> list[tuple[str, str]]:
        namespace = metadata_text(self._dialect, MEMORIES, "namespace")
        stmt = select(MEMORIES.c.scope_key, namespace).where(*self._item_filters(query)).distinct()
        return [(str(key), str(ns)) for key, ns in await self._session.execute(stmt)]

    def _item_filters(self, query: ItemQuery) -> list[ColumnElement[bool]]:
        conditions = [
            MEMORIES.c.key.is_not(None),
            MEMORIES.c.compacted_into_id.is_(None),
            or_(MEMORIES.c.expires_at.is_(None), MEMORIES.c.expires_at > query.alive_at),
            filter_sql(self._dialect, MEMORIES, query.where),
        ]
        if query.scope_keys is not None:
            conditions.append(MEMORIES.c.scope_key.in_(list(query.scope_keys)))
        return conditions

    async def search_keys(
        self, scope_key: str, needle: str, now: datetime, limit: int
    ) -> list[tuple[Memory, str, str]]:
        lowered = needle.lower()
        literal_text = _like_literal(lowered)
        pattern, prefix = f"%{literal_text}%", f"{literal_text}%"
        key, content = func.lower(MEMORIES.c.key), func.lower(MEMORIES.c.content)
        rank = case(
            (key == lowered, 0),
            (key.like(prefix, escape="\\"), 1),
            (key.like(pattern, escape="\\"), 2),
            else_=3,
        )
        stmt = (
            select_memories()
            .add_columns(rank.label("rank"))
            .where(
                MEMORIES.c.scope_key == scope_key,
                MEMORIES.c.key.is_not(None),
                MEMORIES.c.compacted_into_id.is_(None),
                or_(MEMORIES.c.expires_at.is_(None), MEMORIES.c.expires_at > now),
                or_(key.like(pattern, escape="\\"), content.like(pattern, escape="\\")),
            )
            .order_by("rank", MEMORIES.c.key)
            .limit(limit)
        )
        found: list[tuple[Memory, str, str]] = []
        for row in (await self._session.execute(stmt)).mappings():
            field, match = _KEY_MATCHES[row["rank"]]
            found.append((memory_from_row(cast(Mapping[str, Any], row)), field, match))
        return found

    async def expired(self, now: datetime, limit: int) -> list[Memory]:
        stmt = (
            select_memories()
            .where(MEMORIES.c.expires_at.is_not(None), MEMORIES.c.expires_at <= now)
            .order_by(MEMORIES.c.expires_at, MEMORIES.c.id)
            .limit(limit)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def promoted_from(self, source_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in chunks(list(dict.fromkeys(source_ids))):
            stmt = select(MEMORIES.c.promoted_from_id, MEMORIES.c.id).where(
                MEMORIES.c.promoted_from_id.in_(part)
            )
            for source, memory in await self._session.execute(stmt):
                found[source] = memory
        return found

    async def current_in_slot(
        self, scope_keys: Sequence[str], slot: str, at: datetime | None = None
    ) -> list[Memory]:
        current: list[ColumnElement[bool]] = [MEMORIES.c.superseded_by.is_(None)]
        if at is not None:
            current = [
                MEMORIES.c.created_at <= at,
                or_(MEMORIES.c.valid_to.is_(None), MEMORIES.c.valid_to > at),
            ]
        stmt = select_memories().where(
            MEMORIES.c.scope_key.in_(list(scope_keys)), MEMORIES.c.fact_slot == slot, *current
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def after_id(self, memory_id: str, limit: int) -> list[Memory]:
        stmt = (
            select_memories()
            .where(MEMORIES.c.id > memory_id, MEMORIES.c.compacted_into_id.is_(None))
            .order_by(MEMORIES.c.id)
            .limit(limit)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def count_searchable(self) -> int:
        stmt = (
            select(func.count()).select_from(MEMORIES).where(MEMORIES.c.compacted_into_id.is_(None))
        )
        return int((await self._session.execute(stmt)).scalar_one())

    async def in_stage(self, stage_id: str) -> list[Memory]:
        stmt = (
            select_memories()
            .where(MEMORIES.c.stage_id == stage_id)
            .order_by(MEMORIES.c.created_at, MEMORIES.c.id)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def get_by_key(self, scope_key: str, key: str) -> Memory | None:
        stmt = select_memories().where(MemoryRow.scope_key == scope_key, MemoryRow.key == key)
        row = (await self._session.execute(stmt)).mappings().first()
        return None if row is None else memory_from_row(row)

    async def add_accesses(self, accesses: Mapping[str, Access]) -> None:
        """One UPDATE (no read) per group of memories with the same count and time."""
        groups: dict[tuple[int, datetime], list[str]] = {}
        for memory_id, access in accesses.items():
            groups.setdefault((access.count, access.at), []).append(memory_id)
        for (count, at), ids in groups.items():
            for part in chunks(ids):
                stmt = (
                    update(MEMORIES)
                    .where(MEMORIES.c.id.in_(part))
                    .values(access_count=MEMORIES.c.access_count + count, last_accessed_at=at)
                )
                await self._session.execute(stmt)

    async def _count(self, query: ListQuery) -> int:
        stmt = select(func.count()).select_from(MEMORIES).where(*self._filters(query))
        return int((await self._session.execute(stmt)).scalar_one())

    def _filters(self, query: ListQuery) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = [
            MemoryRow.scope_key.in_(list(query.scope_keys)),
            MemoryRow.compacted_into_id.is_(None),
        ]
        if query.layer is not None:
            conditions.append(MemoryRow.layer == query.layer.value)
        if query.where is not None:
            conditions.append(filter_sql(self._dialect, MEMORIES, query.where))
        if query.since is not None:
            conditions.append(MemoryRow.created_at >= query.since)
        if query.until is not None:
            conditions.append(MemoryRow.created_at < query.until)
        if query.alive_at is not None:
            conditions.append(
                or_(MemoryRow.expires_at.is_(None), MemoryRow.expires_at > query.alive_at)
            )
        if query.keyed_only:
            conditions.append(MemoryRow.key.is_not(None))
        if query.superseded == "exclude":
            conditions.append(MemoryRow.superseded_by.is_(None))
        elif query.superseded == "only":
            conditions.append(MemoryRow.superseded_by.is_not(None))
        return conditions


_KEY_MATCHES = {
    0: ("key", "exact"),
    1: ("key", "prefix"),
    2: ("key", "substring"),
    3: ("value", "substring"),
}


def _like_literal(text: str) -> str:
    """``text`` matched literally by LIKE ... ESCAPE '\\' (its wildcards escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# Built once (see ``dialect.insert_ignoring_conflicts_of``). An event's ``seq`` numbers the
# memory's events in the order they were added; its ``position`` numbers all events (0014):
# on SQLite the next after the highest (one writer at a time, so positions commit in order),
# on PostgreSQL a trigger draws it from a sequence.
_HISTORY_INSERT = insert(_HISTORY).values(
    seq=select(func.coalesce(func.max(_HISTORY.c.seq), 0) + 1)
    .where(_HISTORY.c.memory_id == bindparam("of_memory"))
    .scalar_subquery()
)
_SQLITE_HISTORY_INSERT = _HISTORY_INSERT.values(
    position=select(func.coalesce(func.max(_HISTORY.c.position), 0) + 1).scalar_subquery()
)


class SqlHistoryRepository:
    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._insert = _SQLITE_HISTORY_INSERT if dialect == "sqlite" else _HISTORY_INSERT

    async def add(self, event: MemoryEvent) -> None:
        await self._session.execute(self._insert, _event_values(event))

    async def add_many(self, events: Sequence[MemoryEvent]) -> None:
        values = [_event_values(e) for e in events]
        if values:  # one row: a plain execute (an executemany costs more for one)
            await self._session.execute(self._insert, values[0] if len(values) == 1 else values)

    async def for_memory(self, memory_id: str) -> list[MemoryEvent]:
        """Oldest first; events that share a timestamp in the order they were added."""
        stmt = (
            select(MemoryHistoryRow)
            .where(MemoryHistoryRow.memory_id == memory_id)
            .order_by(MemoryHistoryRow.at, MemoryHistoryRow.seq, MemoryHistoryRow.id)
        )
        return [
            MemoryEvent(
                id=row.id,
                memory_id=row.memory_id,
                scope_key=row.scope_key,
                kind=EventKind(row.kind),
                at=row.at,
                before=row.before,
                after=row.after,
                actor=row.actor,
            )
            for row in await self._session.scalars(stmt)
        ]


def _event_values(event: MemoryEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "memory_id": event.memory_id,
        "of_memory": event.memory_id,
        "scope_key": event.scope_key,
        "kind": event.kind.value,
        "at": event.at,
        "before": event.before,
        "after": event.after,
        "actor": event.actor,
    }


class SqlSettingsRepository:
    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def get(self, name: str) -> str | None:
        stmt = select(StoreSettingRow.value).where(StoreSettingRow.name == name)
        value: str | None = (await self._session.execute(stmt)).scalar_one_or_none()
        return value

    async def put(self, name: str, value: str) -> None:
        stmt = upsert(self._dialect, _SETTINGS, {"name": name, "value": value}, key="name")
        await self._session.execute(stmt)
