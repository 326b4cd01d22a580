"""The method table: each JSON-RPC method parses params, calls one service, returns a model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentcore.api import cursor, schemas
from agentcore.api import params as p
from agentcore.api.handlers.ace import ace_methods
from agentcore.api.handlers.compass import compass_methods
from agentcore.api.handlers.context import context_methods
from agentcore.api.handlers.costs import cost_methods
from agentcore.api.handlers.episodic import episodic_methods
from agentcore.api.handlers.error_memory import error_memory_methods
from agentcore.api.handlers.jobs import job_methods
from agentcore.api.handlers.key_value import key_value_methods
from agentcore.api.handlers.lifecycle import lifecycle_methods
from agentcore.api.handlers.procedural import procedural_methods
from agentcore.api.handlers.routing import routing_methods
from agentcore.api.handlers.semantic import semantic_methods
from agentcore.api.handlers.stages import stage_methods
from agentcore.api.handlers.store import store_methods
from agentcore.api.handlers.transfer import transfer_methods
from agentcore.api.handlers.working import working_methods
from agentcore.api.rpc import RpcMethod
from agentcore.domain.errors import AgentCoreError
from agentcore.domain.filter_grammar import parse_filter
from agentcore.domain.models import new_id
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.services.memory_manager import ListRequest
from agentcore.services.retrieval import SearchQuery

if TYPE_CHECKING:
    from agentcore.bootstrap import Container

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


def _new_memory(
    a: p.AddItemParams,
    content: str | None = None,
    metadata: dict[str, Any] | None = None,
    *,
    unique: bool = True,
) -> NewMemory:
    """A text added by a caller is stored once per scope, layer and stage (an exact repeat
    answers with the stored memory); the messages of a conversation are each a turn."""
    return NewMemory(
        content=a.content if content is None else content,
        scope=a.scope_ids(),
        layer=a.layer,
        scope_level=a.scope,
        metadata=dict(a.metadata) if metadata is None else metadata,
        tags=tuple(a.tags),
        critical=a.critical,
        stage_id=a.stage_id,
        expires_at=a.expires_at,
        ttl_seconds=a.ttl_seconds,
        key=a.key,
        importance=a.importance,
        sensitive=a.sensitive,
        unique=unique and a.key is None,
    )


def _conversation(a: p.AddParams, messages: list[p.Message]) -> list[NewMemory]:
    """One memory per message, its role (and name) in the metadata, the messages of one call
    tied by a ``conversation_id`` and ordered by ``turn``."""
    conversation = new_id()
    return [
        _new_memory(
            a,
            message.content,
            {
                **a.metadata,
                "role": message.role,
                **({} if message.name is None else {"name": message.name}),
                "conversation_id": conversation,
                "turn": turn,
            },
            unique=False,
        )
        for turn, message in enumerate(messages)
    ]


def build_methods(c: Container, discover: Callable[[], dict[str, Any]]) -> dict[str, RpcMethod]:
    memory = c.memory

    async def add(a: p.AddParams) -> schemas.AddResult:
        if isinstance(a.messages, list):
            stored = await memory.store(_conversation(a, a.messages))
        else:
            stored = await memory.store([_new_memory(a, a.content or a.messages)])
        fresh = [s.memory for s in stored if not s.deduplicated]
        last = stored[-1]
        facts = None
        if a.infer:
            try:
                facts = [schemas.MemoryOut.of(f) for f in await c.semantic.extract_from(fresh)]
            except AgentCoreError as exc:  # stored; the caller can retry memory.facts.extract
                exc.details.setdefault("memory_ids", [m.id for m in fresh])
                raise
        return schemas.AddResult(
            memory_id=last.memory.id,
            memory=schemas.MemoryOut.of(last.memory),
            memory_ids=[s.memory.id for s in stored],
            stage_id=last.memory.stage_id,
            deduplicated=last.deduplicated,
            facts=facts,
        )

    async def add_batch(a: p.AddBatchParams) -> schemas.AddBatchResult:
        stored = await memory.store([_new_memory(item) for item in a.items])
        inferred = [
            s.memory
            for s, item in zip(stored, a.items, strict=True)
            if item.infer and not s.deduplicated
        ]
        if inferred:
            await c.semantic.extract_from(inferred)
        indexed = None
        if a.wait_indexed:
            indexed = await memory.vectors_written([s.memory for s in stored])
        return schemas.AddBatchResult(
            memory_ids=[s.memory.id for s in stored],
            deduplicated=[s.memory.id for s in stored if s.deduplicated],
            indexed=indexed,
        )

    async def get(a: p.MemoryIdParams) -> schemas.MemoryOut:
        return schemas.MemoryOut.of(await memory.get(a.memory_id, a.scope_ids()))

    async def update(a: p.UpdateParams) -> schemas.MemoryOut:
        changes = MemoryChanges(
            content=a.content,
            metadata=None if a.metadata is None else dict(a.metadata),
            tags=None if a.tags is None else tuple(a.tags),
            critical=a.critical,
            expires_at=a.expires_at,
            ttl_seconds=a.ttl_seconds,
            clear_expiry=a.clears_expiry,
            importance=a.importance,
            sensitive=a.sensitive,
        )
        return schemas.MemoryOut.of(await memory.update(a.memory_id, a.scope_ids(), changes))

    async def delete(a: p.MemoryIdParams) -> schemas.DeleteResult:
        return schemas.DeleteResult(deleted=await memory.delete(a.memory_id, a.scope_ids()))

    async def list_(a: p.ListParams) -> schemas.ListResult:
        ranked = a.sort == "importance"
        after, after_importance = None, None
        if a.cursor is not None and ranked:
            after_importance, after = cursor.decode_ranked(a.cursor, a.order)
        elif a.cursor is not None:
            after = cursor.decode(a.cursor, a.order)
        request = ListRequest(
            scope=a.scope_ids(),
            layer=a.layer,
            scope_level=a.scope,
            stage_id=a.stage_id,
            tags=a.tags,
            tags_match=a.tags_match,
            since=a.since,
            until=a.until,
            where=parse_filter(a.filter),
            after=after,
            limit=a.limit,
            order_desc=a.order == "desc",
            by_importance=ranked,
            after_importance=after_importance,
            include_expired=a.include_expired,
            superseded=a.superseded,
        )
        page = await memory.list_page(request)
        next_cursor = None
        if page.next_after is not None and ranked:  # the last row's importance leads the keyset
            last = page.memories[-1].importance
            next_cursor = cursor.encode_ranked(last, page.next_after, a.order)
        elif page.next_after is not None:
            next_cursor = cursor.encode(page.next_after, a.order)
        return schemas.ListResult(
            memories=[schemas.MemoryOut.of(m) for m in page.memories],
            next_cursor=next_cursor,
            total_count=page.total_count,
        )

    async def search(a: p.SearchParams) -> schemas.SearchResult:
        outcome = await memory.search(
            SearchQuery(
                query=a.query,
                scope=a.scope_ids(),
                layers=a.layers,
                scopes=a.scopes,
                limit=a.limit,
                threshold=a.threshold,
                tags=a.tags,
                tags_match=a.tags_match,
                where=parse_filter(a.filter),
                stage_id=a.stage_id,
                current_stage=a.current_stage,
                scoring_weights=a.scoring_weights,
                order_by=a.order_by,
                as_of=a.as_of,
                since=a.since,
                until=a.until,
                explain=a.explain,
            )
        )
        return schemas.SearchResult(
            results=[schemas.SearchHit.of(s) for s in outcome.results],
            total_count=len(outcome.results),
            searched_layers=[layer.value for layer in outcome.searched_layers],
            searched_scopes=outcome.searched_scopes,
            weights=outcome.weights,
            ranker=outcome.ranker,
        )

    async def clear(a: p.ClearParams) -> schemas.ClearResult:
        count = await memory.clear(a.layer, a.scope_ids(), a.scope)
        return schemas.ClearResult(deleted_count=count)

    async def history(a: p.MemoryIdParams) -> schemas.HistoryResult:
        events = await memory.history(a.memory_id, a.scope_ids())
        return schemas.HistoryResult(
            memory_id=a.memory_id, events=[schemas.HistoryEvent.of(e) for e in events]
        )

    async def health(_: p.NoParams) -> schemas.HealthResult:
        return schemas.HealthResult.of(await c.health.check())

    async def rpc_discover(_: p.NoParams) -> schemas.DiscoverResult:
        return schemas.DiscoverResult.model_validate(discover())

    table = [
        _m(
            "memory.add",
            p.AddParams,
            schemas.AddResult,
            add,
            "Store one memory, or a conversation: mem0-style messages, one memory per message.",
        ),
        _m(
            "memory.add_batch",
            p.AddBatchParams,
            schemas.AddBatchResult,
            add_batch,
            "Store several memories, all or none.",
        ),
        _m(
            "memory.get",
            p.MemoryIdParams,
            schemas.MemoryOut,
            get,
            "Read one memory by id (counts an access).",
        ),
        _m(
            "memory.update",
            p.UpdateParams,
            schemas.MemoryOut,
            update,
            "Change content, metadata (shallow merge), tags, criticality or expiry.",
        ),
        _m("memory.delete", p.MemoryIdParams, schemas.DeleteResult, delete, "Delete one memory."),
        _m(
            "memory.list",
            p.ListParams,
            schemas.ListResult,
            list_,
            "Page through memories of a scope, newest first by default.",
        ),
        _m(
            "memory.search",
            p.SearchParams,
            schemas.SearchResult,
            search,
            "Find the memories most relevant to a query within the caller's scopes.",
        ),
        _m(
            "memory.clear",
            p.ClearParams,
            schemas.ClearResult,
            clear,
            "Delete one layer of one scope (no cascades).",
        ),
        _m(
            "memory.history",
            p.MemoryIdParams,
            schemas.HistoryResult,
            history,
            "The change events of one memory, oldest first.",
        ),
        _m(
            "memory.health",
            p.NoParams,
            schemas.HealthResult,
            health,
            "Status and latency of every component.",
        ),
        _m(
            "rpc.discover",
            p.NoParams,
            schemas.DiscoverResult,
            rpc_discover,
            "This API as an OpenRPC document.",
        ),
    ]
    table += key_value_methods(c.key_values)
    table += store_methods(c.items)
    table += procedural_methods(c.procedural)
    table += episodic_methods(c.episodic)
    table += working_methods(c.working)
    table += semantic_methods(c.semantic)
    table += job_methods(c.jobs)
    table += cost_methods(c.costs)
    table += stage_methods(c.stages)
    table += compass_methods(c.compass)
    table += error_memory_methods(c.errors)
    table += ace_methods(c.ace)
    table += lifecycle_methods(c.promotion, c.compaction)
    table += routing_methods(c.routing, c.artifacts)
    table += context_methods(c.context)
    table += transfer_methods(c.transfer)
    return {method.name: method for method in table}


def _m(
    name: str,
    params: type[P],
    result: type[R],
    handler: Callable[[P], Awaitable[R]],
    summary: str,
) -> RpcMethod:
    return RpcMethod(name, params, result, handler, summary)
