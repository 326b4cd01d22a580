"""JSON-RPC methods of key-value memories: memory.put, get_value, list_keys, delete_key."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints

from agentcore.api import cursor
from agentcore.api.params import ScopeParams, Tags
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import MemoryOut
from agentcore.services.key_value import MAX_KEY_LENGTH, KeyValueService
from agentcore.services.memory_manager import ListRequest

Key = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY_LENGTH)]


class KeyParams(ScopeParams):
    key: Key
    scope: str | None = Field(None, description="scope level; default: most specific id given")


class PutParams(KeyParams):
    value: JsonValue
    layer: str | None = Field(None, description="semantic (default), episodic or procedural")
    tags: Tags = Field(default_factory=list)


class ListKeysParams(ScopeParams):
    scope: str | None = None
    cursor: Annotated[str, StringConstraints(max_length=512)] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 50
    order: Literal["desc", "asc"] = "asc"


class PutResult(BaseModel):
    key: str
    memory_id: str
    created: bool
    memory: MemoryOut


class ValueResult(BaseModel):
    key: str
    value: JsonValue
    memory_id: str
    updated_at: datetime


class KeyEntry(BaseModel):
    key: str
    memory_id: str
    updated_at: datetime


class ListKeysResult(BaseModel):
    keys: list[KeyEntry]
    next_cursor: str | None
    total_count: int


class DeleteKeyResult(BaseModel):
    deleted: bool


class SearchKeysParams(ScopeParams):
    query: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    scope: str | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20


class KeyHit(BaseModel):
    key: str
    value: JsonValue
    memory_id: str
    matched_field: Literal["key", "value"]
    match: Literal["exact", "prefix", "substring"]


class SearchKeysResult(BaseModel):
    results: list[KeyHit] = Field(description="exact > prefix > substring on the key, then value")


def key_value_methods(service: KeyValueService) -> list[RpcMethod]:
    async def put(a: PutParams) -> PutResult:
        stored, created = await service.put(
            a.key, a.value, a.scope_ids(), a.scope, a.layer, tuple(a.tags)
        )
        m = stored.memory
        return PutResult(key=a.key, memory_id=m.id, created=created, memory=MemoryOut.of(m))

    async def get_value(a: KeyParams) -> ValueResult:
        found = await service.get(a.key, a.scope_ids(), a.scope)
        m = found.memory
        return ValueResult(key=a.key, value=found.value, memory_id=m.id, updated_at=m.updated_at)

    async def list_keys(a: ListKeysParams) -> ListKeysResult:
        page = await service.keys(
            ListRequest(
                scope=a.scope_ids(),
                scope_level=a.scope,
                after=None if a.cursor is None else cursor.decode(a.cursor, a.order),
                limit=a.limit,
                order_desc=a.order == "desc",
            )
        )
        return ListKeysResult(
            keys=[
                KeyEntry(key=m.key or "", memory_id=m.id, updated_at=m.updated_at)
                for m in page.memories
            ],
            next_cursor=None
            if page.next_after is None
            else cursor.encode(page.next_after, a.order),
            total_count=page.total_count,
        )

    async def delete_key(a: KeyParams) -> DeleteKeyResult:
        return DeleteKeyResult(deleted=await service.delete(a.key, a.scope_ids(), a.scope))

    async def search_keys(a: SearchKeysParams) -> SearchKeysResult:
        found = await service.search(a.query, a.scope_ids(), a.scope, a.limit)
        return SearchKeysResult(
            results=[
                KeyHit(
                    key=hit.found.key,
                    value=hit.found.value,
                    memory_id=hit.found.memory.id,
                    matched_field=hit.matched_field,
                    match=hit.match,
                )
                for hit in found
            ]
        )

    return [
        RpcMethod("memory.put", PutParams, PutResult, put, "Store a JSON value by key (upsert)."),
        RpcMethod(
            "memory.search_keys",
            SearchKeysParams,
            SearchKeysResult,
            search_keys,
            "Find keys by text in the key or the value, ranked exact > prefix > substring.",
        ),
        RpcMethod("memory.get_value", KeyParams, ValueResult, get_value, "Read a value by key."),
        RpcMethod("memory.list_keys", ListKeysParams, ListKeysResult, list_keys, "List keys."),
        RpcMethod("memory.delete_key", KeyParams, DeleteKeyResult, delete_key, "Delete a key."),
    ]
