"""Memories as rows of the memories table and back: the column values of a memory, a memory
from a row (SQLAlchemy Core, no ORM identity map), and the search's fast paths that read
candidate rows through the SQLite or PostgreSQL driver directly."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any, cast

from sqlalchemy import JSON, Boolean, Column, Select, Table, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcore.adapters.db.dialect import chunks
from agentcore.adapters.db.engine import driver_rows, pg_driver_rows
from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.types import UTCDateTime, as_utc, sqlite_datetime
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel
from agentcore.domain.records import content_hash

MEMORIES = cast(Table, MemoryRow.__table__)
_SCOPE_FIELDS = tuple(f.name for f in fields(ScopeIds))  # ScopeIds' order: built positionally
_LAYERS = {layer.value: layer for layer in Layer}
_LEVELS = {level.value: level for level in ScopeLevel}


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


def select_by_ids(memory_ids: Sequence[str]) -> Iterator[Select[Any]]:
    """The statements that read the memories of ``memory_ids`` (any order; duplicates once)."""
    for part in chunks(list(dict.fromkeys(memory_ids))):
        yield select_memories().where(MEMORIES.c.id.in_(part))


def sqlite_memories(conn: Connection, memory_ids: Sequence[str]) -> list[Memory]:
    """The memories of ``memory_ids`` (any order; duplicates once) read as the driver's tuples
    (``driver_rows``), for the search's candidates: only the columns whose
    type stores something else than what it returns are converted (``_SQLITE_CONVERTED``),
    several times cheaper per row than SQLAlchemy's result processing."""
    found: list[Memory] = []
    for part in chunks(list(dict.fromkeys(memory_ids))):
        marks = ", ".join("?" * len(part))
        for row in driver_rows(conn, f"{_SQLITE_SELECT} WHERE id IN ({marks})", part):
            values = dict(zip(_COLUMNS, row, strict=True))
            for name, read in _SQLITE_CONVERTED:
                value = values[name]
                if value is not None:
                    values[name] = read(value)
            found.append(memory_from_row(values))
    return found


async def pg_memories(conn: AsyncConnection, memory_ids: Sequence[str]) -> list[Memory]:
    """The memories of ``memory_ids`` (any order; duplicates once) read as psycopg's tuples
    (``pg_driver_rows``): psycopg decodes JSON, booleans and times itself; times are given in
    UTC as ``UTCDateTime`` gives them."""
    found: list[Memory] = []
    ids = list(dict.fromkeys(memory_ids))
    for row in await pg_driver_rows(conn, _PG_SELECT, {"ids": ids}):
        values = dict(zip(_COLUMNS, row, strict=True))
        for name in _PG_TIMES:
            value = values[name]
            if value is not None:
                values[name] = as_utc(value)
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


_COLUMNS = tuple(column.name for column in MEMORIES.columns)
_SQLITE_CONVERTED = [
    (column.name, read)
    for column in MEMORIES.columns
    if (read := _sqlite_reader(column)) is not None
]
_SQLITE_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM {MEMORIES.name}"
_PG_TIMES = [column.name for column in MEMORIES.columns if isinstance(column.type, UTCDateTime)]
_PG_SELECT = (
    f"SELECT {', '.join(f'{MEMORIES.name}.{name}' for name in _COLUMNS)} FROM {MEMORIES.name} "
    "WHERE id = ANY(%(ids)s::text[])"
)


def select_memories() -> Select[Any]:
    # Core rows, not ORM entities: no identity map to go stale and about half the cost per row.
    return select(MEMORIES)
