"""SQL repositories: memories (rows ⇄ domain ``Memory``, keyset pages), history, outbox,
store settings. Each works inside the unit of work's ``AsyncSession``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    ColumnElement,
    Select,
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
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentcore.adapters.db.dialect import chunks, insert_ignoring_conflicts_of, upsert
from agentcore.adapters.db.engine import driver_rows
from agentcore.adapters.db.filter_sql import filter_sql
from agentcore.adapters.db.lexical import LexicalWriter
from agentcore.adapters.db.tables import (
    MemoryHistoryRow,
    MemoryRow,
    StoreSettingRow,
    VectorOutboxRow,
)
from agentcore.adapters.db.types import UTCDateTime, sqlite_datetime
from agentcore.domain.errors import Conflict, MemoryNotFound
from agentcore.domain.filters import Filter
from agentcore.domain.models import EventKind, Layer, Memory, MemoryEvent, ScopeIds, ScopeLevel
from agentcore.domain.records import content_hash
from agentcore.services.ports import Access, ListQuery, OutboxEntry

_TABLE = cast(Table, MemoryRow.__table__)
_HISTORY = cast(Table, MemoryHistoryRow.__table__)
_OUTBOX = cast(Table, VectorOutboxRow.__table__)
_SETTINGS = cast(Table, StoreSettingRow.__table__)
OUTBOX_OPS = frozenset({"upsert", "delete"})
_SCOPE_FIELDS = tuple(f.name for f in fields(ScopeIds))  # ScopeIds' order: built positionally
_LAYERS = {layer.value: layer for layer in Layer}
_LEVELS = {level.value: level for level in ScopeLevel}
_TEXT_LOCKS = 0x54455854  # "TEXT": the first key of the advisory locks of one text in a scope


def memory_values(memory: Memory) -> dict[str, Any]:
    """The column values of ``memory`` (table column names, not attribute names)."""
    scope = memory.scope.as_dict()
    return {
        "id": memory.id,
        "content": memory.content,
        "content_hash": content_hash(memory.content),
        "layer": memory.layer.value,
        "scope_level": memory.scope_level.value,
        "scope_key": memory.scope_key,
        **{name: scope[name] for name in _SCOPE_FIELDS},
        "metadata": dict(memory.metadata),
        "tags": list(memory.tags),
        "key": memory.key,
        "stage_id": memory.stage_id,
        "critical": memory.critical,
        "flagged": memory.flagged,
        "sensitive": memory.sensitive,
        "compacted_into_id": memory.compacted_into_id,
        "fact_slot": memory.fact_slot,
        "fact_value": memory.fact_value,
        "valid_to": memory.valid_to,
        "superseded_by": memory.superseded_by,
        "importance": memory.importance,
        "access_count": memory.access_count,
        "last_accessed_at": memory.last_accessed_at,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "expires_at": memory.expires_at,
        "source": memory.source,
        "confidence": memory.confidence,
        "promoted_from_id": memory.promoted_from_id,
        "compacted_from_ids": list(memory.compacted_from_ids),
        "created_in_session_id": memory.created_in_session_id,
        "embedding_model": memory.embedding_model,
    }


def memory_from_row(row: Mapping[str, Any]) -> Memory:
    """A memory from a row of the memories table (Core: column names, no ORM identity map)."""
    return Memory(
        id=row["id"],
        content=row["content"],
        layer=_LAYERS[row["layer"]],
        scope_level=_LEVELS[row["scope_level"]],
        scope=ScopeIds(*[row[name] for name in _SCOPE_FIELDS]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        metadata=dict(row["metadata"] or {}),
        tags=list(row["tags"] or []),
        key=row["key"],
        stage_id=row["stage_id"],
        critical=row["critical"],
        importance=row["importance"],
        access_count=row["access_count"],
        last_accessed_at=row["last_accessed_at"],
        expires_at=row["expires_at"],
        source=row["source"],
        confidence=row["confidence"],
        promoted_from_id=row["promoted_from_id"],
        compacted_from_ids=list(row["compacted_from_ids"] or []),
        created_in_session_id=row["created_in_session_id"],
        embedding_model=row["embedding_model"],
        flagged=row["flagged"],
        sensitive=row["sensitive"],
        compacted_into_id=row["compacted_into_id"],
        fact_slot=row["fact_slot"],
        fact_value=row["fact_value"],
        valid_to=row["valid_to"],
        superseded_by=row["superseded_by"],
    )


class SqlMemoryRepository:
    """``MemoryRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect
        self._lexical = LexicalWriter(session, dialect)  # the lexical index, same transaction

    async def add(self, memory: Memory) -> None:
        """Raises ``Conflict`` when the id, or the key within the scope, is already taken.

        The transaction stays usable after a conflict."""
        stmt = insert_ignoring_conflicts_of(self._dialect, _TABLE)
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
        stmt = insert_ignoring_conflicts_of(self._dialect, _TABLE)
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
        rows = (await self._session.execute(_select().where(_TABLE.c.id == memory_id))).mappings()
        row = rows.one_or_none()
        return None if row is None else memory_from_row(row)

    async def get_many(
        self, memory_ids: Sequence[str], where: Filter | None = None
    ) -> list[Memory]:
        found: list[Memory] = []
        for stmt in select_by_ids(memory_ids):
            if where is not None:
                stmt = stmt.where(filter_sql(self._dialect, _TABLE, where))
            rows = await self._session.execute(stmt)
            found.extend(memory_from_row(row) for row in rows.mappings())
        return found

    async def update(self, memory: Memory) -> None:
        """Write every field of ``memory``. Raises ``MemoryNotFound`` if it is not stored, and
        ``Conflict`` if its key is taken in its scope (the unit of work must then be dropped)."""
        values = memory_values(memory)
        del values["id"]
        stmt = update(_TABLE).where(_TABLE.c.id == memory.id).values(values)
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
            stmt = delete(_TABLE).where(_TABLE.c.id.in_(part))
            result = cast(CursorResult[Any], await self._session.execute(stmt))
            deleted += result.rowcount
        return deleted

    async def page(self, query: ListQuery) -> tuple[list[Memory], int]:
        """One page in (created_at, id) order, and the total count matching the filters.

        ``since`` is inclusive and ``until`` exclusive; ``after`` is a keyset cursor: the page
        starts strictly after that (created_at, id) in the requested order."""
        if not query.scope_keys:
            return [], 0
        conditions = self._filters(query)
        if query.after is not None:
            conditions.append(_after(query.after, query.order_desc))
        if query.order_desc:
            order = (MemoryRow.created_at.desc(), MemoryRow.id.desc())
        else:
            order = (MemoryRow.created_at.asc(), MemoryRow.id.asc())
        stmt = _select().where(*conditions).order_by(*order).limit(max(query.limit, 0))
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
            _select()
            .where(
                _TABLE.c.session_id == session_id,
                _TABLE.c.scope_level.in_([level.value for level in levels]),
                _TABLE.c.compacted_into_id.is_(None),
            )
            .order_by(_TABLE.c.created_at, _TABLE.c.id)
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
            _select()
            .where(
                _TABLE.c.scope_key.in_(sorted(set(scope_keys))),
                _TABLE.c.content_hash.in_(sorted(set(hashes))),
                _TABLE.c.compacted_into_id.is_(None),
                _TABLE.c.superseded_by.is_(None),
                _TABLE.c.key.is_(None),
                or_(_TABLE.c.expires_at.is_(None), _TABLE.c.expires_at > now),
            )
            .order_by(_TABLE.c.created_at, _TABLE.c.id)
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

    async def search_keys(
        self, scope_key: str, needle: str, now: datetime, limit: int
    ) -> list[tuple[Memory, str, str]]:
        lowered = needle.lower()
        literal_text = _like_literal(lowered)
        pattern, prefix = f"%{literal_text}%", f"{literal_text}%"
        key, content = func.lower(_TABLE.c.key), func.lower(_TABLE.c.content)
        rank = case(
            (key == lowered, 0),
            (key.like(prefix, escape="\\"), 1),
            (key.like(pattern, escape="\\"), 2),
            else_=3,
        )
        stmt = (
            _select()
            .add_columns(rank.label("rank"))
            .where(
                _TABLE.c.scope_key == scope_key,
                _TABLE.c.key.is_not(None),
                _TABLE.c.compacted_into_id.is_(None),
                or_(_TABLE.c.expires_at.is_(None), _TABLE.c.expires_at > now),
                or_(key.like(pattern, escape="\\"), content.like(pattern, escape="\\")),
            )
            .order_by("rank", _TABLE.c.key)
            .limit(limit)
        )
        found: list[tuple[Memory, str, str]] = []
        for row in (await self._session.execute(stmt)).mappings():
            field, match = _KEY_MATCHES[row["rank"]]
            found.append((memory_from_row(cast(Mapping[str, Any], row)), field, match))
        return found

    async def expired(self, now: datetime, limit: int) -> list[Memory]:
        stmt = (
            _select()
            .where(_TABLE.c.expires_at.is_not(None), _TABLE.c.expires_at <= now)
            .order_by(_TABLE.c.expires_at, _TABLE.c.id)
            .limit(limit)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def promoted_from(self, source_ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in chunks(list(dict.fromkeys(source_ids))):
            stmt = select(_TABLE.c.promoted_from_id, _TABLE.c.id).where(
                _TABLE.c.promoted_from_id.in_(part)
            )
            for source, memory in await self._session.execute(stmt):
                found[source] = memory
        return found

    async def current_in_slot(
        self, scope_keys: Sequence[str], slot: str, at: datetime | None = None
    ) -> list[Memory]:
        current: list[ColumnElement[bool]] = [_TABLE.c.superseded_by.is_(None)]
        if at is not None:
            current = [
                _TABLE.c.created_at <= at,
                or_(_TABLE.c.valid_to.is_(None), _TABLE.c.valid_to > at),
            ]
        stmt = _select().where(
            _TABLE.c.scope_key.in_(list(scope_keys)), _TABLE.c.fact_slot == slot, *current
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def after_id(self, memory_id: str, limit: int) -> list[Memory]:
        stmt = (
            _select()
            .where(_TABLE.c.id > memory_id, _TABLE.c.compacted_into_id.is_(None))
            .order_by(_TABLE.c.id)
            .limit(limit)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def count_searchable(self) -> int:
        stmt = select(func.count()).select_from(_TABLE).where(_TABLE.c.compacted_into_id.is_(None))
        return int((await self._session.execute(stmt)).scalar_one())

    async def in_stage(self, stage_id: str) -> list[Memory]:
        stmt = (
            _select()
            .where(_TABLE.c.stage_id == stage_id)
            .order_by(_TABLE.c.created_at, _TABLE.c.id)
        )
        return [memory_from_row(row) for row in (await self._session.execute(stmt)).mappings()]

    async def get_by_key(self, scope_key: str, key: str) -> Memory | None:
        stmt = _select().where(MemoryRow.scope_key == scope_key, MemoryRow.key == key)
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
                    update(_TABLE)
                    .where(_TABLE.c.id.in_(part))
                    .values(access_count=_TABLE.c.access_count + count, last_accessed_at=at)
                )
                await self._session.execute(stmt)

    async def _count(self, query: ListQuery) -> int:
        stmt = select(func.count()).select_from(_TABLE).where(*self._filters(query))
        return int((await self._session.execute(stmt)).scalar_one())

    def _filters(self, query: ListQuery) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = [
            MemoryRow.scope_key.in_(list(query.scope_keys)),
            MemoryRow.compacted_into_id.is_(None),
        ]
        if query.layer is not None:
            conditions.append(MemoryRow.layer == query.layer.value)
        if query.where is not None:
            conditions.append(filter_sql(self._dialect, _TABLE, query.where))
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


def select_by_ids(memory_ids: Sequence[str]) -> Iterator[Select[Any]]:
    """The statements that read the memories of ``memory_ids`` (any order; duplicates once)."""
    for part in chunks(list(dict.fromkeys(memory_ids))):
        yield _select().where(_TABLE.c.id.in_(part))


def sqlite_memories(conn: Connection, memory_ids: Sequence[str]) -> list[Memory]:
    """The memories of ``memory_ids`` (any order; duplicates once) read as the driver's tuples
    (``driver_rows``), for the search's candidates: only the columns whose
    type stores something else than what it returns are converted (``_SQLITE_CONVERTED``),
    several times cheaper per row than SQLAlchemy's result processing."""
    found: list[Memory] = []
    for part in chunks(list(dict.fromkeys(memory_ids))):
        marks = ", ".join("?" * len(part))
        for row in driver_rows(conn, f"{_SQLITE_SELECT} WHERE id IN ({marks})", part):
            values = dict(zip(_SQLITE_COLUMNS, row, strict=True))
            for name, read in _SQLITE_CONVERTED:
                value = values[name]
                if value is not None:
                    values[name] = read(value)
            found.append(memory_from_row(values))
    return found


def _sqlite_reader(column: Column[Any]) -> Callable[[Any], Any] | None:
    """How a column's non-null SQLite value becomes what SQLAlchemy would return; None when
    it is returned as stored."""
    if isinstance(column.type, UTCDateTime):
        return sqlite_datetime
    if isinstance(column.type, JSON):
        return _json
    if isinstance(column.type, Boolean):
        return bool
    return None


def _json(value: str) -> Any:
    """A JSON column's value; the empty list and object most rows hold without the parser."""
    if value == "[]":
        return []
    if value == "{}":
        return {}
    return json.loads(value)


_SQLITE_COLUMNS = tuple(column.name for column in _TABLE.columns)
_SQLITE_CONVERTED = [
    (column.name, read) for column in _TABLE.columns if (read := _sqlite_reader(column)) is not None
]
_SQLITE_SELECT = f"SELECT {', '.join(_SQLITE_COLUMNS)} FROM {_TABLE.name}"


def _select() -> Select[Any]:
    # Core rows, not ORM entities: no identity map to go stale and about half the cost per row.
    return select(_TABLE)


def _after(cursor: tuple[datetime, str], desc: bool) -> ColumnElement[bool]:
    """Strictly after ``cursor`` in the page order, as one row-value comparison."""
    created_at, memory_id = cursor
    row = tuple_(MemoryRow.created_at, MemoryRow.id)
    bound = tuple_(literal(created_at, UTCDateTime()), literal(memory_id, String()))
    return row < bound if desc else row > bound


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


_OUTBOX_INSERT = insert(_OUTBOX).returning(_OUTBOX.c.id, sort_by_parameter_order=True)


class SqlOutboxRepository:
    """Vector writes owed to the vector store, oldest first."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, memory_id: str, op: str) -> int:
        """Queue a write; returns the entry id."""
        return (await self.add_many([memory_id], op))[0]

    async def add_many(self, memory_ids: Sequence[str], op: str) -> list[int]:
        if op not in OUTBOX_OPS:
            raise ValueError(f"outbox op must be one of {sorted(OUTBOX_OPS)}, not {op!r}")
        if not memory_ids:
            return []
        now = datetime.now(UTC)
        params = [
            {"memory_id": memory_id, "op": op, "attempts": 0, "created_at": now}
            for memory_id in memory_ids
        ]
        result = await self._session.execute(
            _OUTBOX_INSERT, params[0] if len(params) == 1 else params
        )
        return [int(entry_id) for entry_id in result.scalars()]

    async def pending(
        self, limit: int, *, failed_only: bool = False, created_before: datetime | None = None
    ) -> list[OutboxEntry]:
        stmt = select(VectorOutboxRow)
        if failed_only:
            stmt = stmt.where(VectorOutboxRow.attempts > 0)
        if created_before is not None:
            stmt = stmt.where(VectorOutboxRow.created_at < created_before)
        stmt = (
            stmt.order_by(VectorOutboxRow.id)
            .limit(max(limit, 0))
            .execution_options(populate_existing=True)
        )
        return [
            OutboxEntry(id=row.id, memory_id=row.memory_id, op=row.op, attempts=row.attempts)
            for row in await self._session.scalars(stmt)
        ]

    async def count(self) -> int:
        """How many writes are still owed."""
        stmt = select(func.count()).select_from(_OUTBOX)
        return int((await self._session.execute(stmt)).scalar_one())

    async def remove(self, entry_ids: Sequence[int]) -> None:
        for part in chunks(list(dict.fromkeys(entry_ids))):
            await self._session.execute(delete(_OUTBOX).where(_OUTBOX.c.id.in_(part)))

    async def mark_failed(self, entry_ids: Sequence[int]) -> None:
        """Count one more failed attempt and when it happened."""
        now = datetime.now(UTC)
        for part in chunks(list(dict.fromkeys(entry_ids))):
            stmt = (
                update(_OUTBOX)
                .where(_OUTBOX.c.id.in_(part))
                .values(attempts=_OUTBOX.c.attempts + 1, last_error_at=now)
            )
            await self._session.execute(stmt)


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
