"""Key-value memories: JSON values by key within a scope, upserted, read exactly, also searchable.

A value is stored as a memory whose ``key`` is the key (unique per scope) and whose
``metadata["value"]`` holds the JSON value; its content, ``"<key>: <value as JSON>"`` cut to the
content limit, is what search matches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentcore.domain.clock import Clock
from agentcore.domain.errors import ContentTooLong, InvalidParams, MemoryNotFound
from agentcore.domain.models import Memory, ScopeIds
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.scopes import owning_level, visible_scope_keys
from agentcore.services.memory_manager import ListRequest, MemoryManager, Page
from agentcore.services.ports import UnitOfWorkFactory

MAX_KEY_LENGTH = 256
MAX_VALUE_BYTES = 1_000_000
DEFAULT_LAYER = "semantic"


@dataclass(frozen=True, slots=True)
class KeyedValue:
    key: str
    value: Any
    memory: Memory


@dataclass(frozen=True, slots=True)
class KeyMatch:
    found: KeyedValue
    matched_field: str  # "key" or "value"
    match: str  # "exact", "prefix" or "substring"


def _encode(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidParams(
            "value must be JSON", errors=[{"field": "value", "message": "not JSON"}]
        ) from None
    if len(text.encode()) > MAX_VALUE_BYTES:
        raise ContentTooLong(f"value is larger than {MAX_VALUE_BYTES} bytes as JSON")
    return text


class KeyValueService:
    def __init__(
        self,
        memory: MemoryManager,
        uow_factory: UnitOfWorkFactory,
        clock: Clock,
        max_content_length: int,
    ) -> None:
        self._memory = memory
        self._uow_factory = uow_factory
        self._clock = clock
        self._max_content = max_content_length

    async def put(
        self,
        key: str,
        value: Any,
        scope: ScopeIds,
        scope_level: str | None = None,
        layer: str | None = None,
        tags: tuple[str, ...] = (),
    ) -> tuple[KeyedValue, bool]:
        """Store ``value`` under ``key``; returns it and whether the key was new."""
        text = _encode(value)
        content = f"{key}: {text}"[: self._max_content]
        new = NewMemory(
            content=content,
            scope=scope,
            layer=layer or DEFAULT_LAYER,
            scope_level=scope_level,
            metadata={"value": value},
            tags=tags,
            key=key,
            source="kv",
        )
        changes = MemoryChanges(content=content, metadata={"value": value}, tags=tags)
        memory, created = await self._memory.put_keyed(new, changes)
        return KeyedValue(key, value, memory), created

    async def get(self, key: str, scope: ScopeIds, scope_level: str | None = None) -> KeyedValue:
        memory = await self._find(key, scope, scope_level)
        if memory is None:
            raise MemoryNotFound(f"no value for key {key!r} in the given scope")
        return KeyedValue(key, memory.metadata.get("value"), memory)

    async def delete(self, key: str, scope: ScopeIds, scope_level: str | None = None) -> bool:
        memory = await self._find(key, scope, scope_level)
        if memory is None:
            return False
        return await self._memory.delete(memory.id, scope)

    async def search(
        self, needle: str, scope: ScopeIds, scope_level: str | None = None, limit: int = 20
    ) -> list[KeyMatch]:
        """Keys of the scope whose key or value holds ``needle`` (case ignored), ranked exact >
        prefix > substring on the key, then matches in the value (key-value spec)."""
        level = owning_level(scope, scope_level)
        scope_key = visible_scope_keys(scope, [level.value])[0]
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.memories.search_keys(scope_key, needle, self._clock(), limit)
        return [
            KeyMatch(KeyedValue(m.key or "", m.metadata.get("value"), m), field, match)
            for m, field, match in found
        ]

    async def keys(self, request: ListRequest) -> Page:
        return await self._memory.list_page(
            ListRequest(
                scope=request.scope,
                scope_level=request.scope_level,
                after=request.after,
                limit=request.limit,
                order_desc=request.order_desc,
                keyed_only=True,
            )
        )

    async def _find(self, key: str, scope: ScopeIds, scope_level: str | None) -> Memory | None:
        level = owning_level(scope, scope_level)
        scope_key = visible_scope_keys(scope, [level.value])[0]
        async with self._uow_factory(read_only=True) as uow:
            memory = await uow.memories.get_by_key(scope_key, key)
        return None if memory is None or memory.is_expired(self._clock()) else memory
