"""``memory.store.batch``: LangGraph's store operations (get, put, search, list_namespaces) on
namespaced items (``agentcore.services.namespaced``), each checked before any runs (a bad op
changes nothing), then run in order, one result each.

Each operation names the scope its items live in, as every scoped call does; a search or a
namespace listing that names none reaches every scope's items and needs an admin key
(``agentcore.domain.access``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints

from agentcore.api.params import Params, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.domain.errors import AgentCoreError, InvalidParams, InvalidScope, MissingIdentifier
from agentcore.domain.namespaces import (
    MAX_DEPTH,
    Match,
    check_labels,
    check_ttl,
    stored_key,
    value_filter,
)
from agentcore.services.namespaced import Item, ItemScope, NamespacedItems, Put, Search

Label = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Labels = Annotated[list[Label], Field(max_length=MAX_DEPTH)]
ItemKey = Annotated[str, StringConstraints(min_length=1, max_length=255)]
MAX_OPS = 100


class _Op(ScopeParams):
    scope: str | None = Field(None, description="scope level; default: most specific id given")

    def item_scope(self) -> ItemScope:
        return ItemScope(self.scope_ids(), self.scope)


class GetOp(_Op):
    op: Literal["get"]
    namespace: Annotated[Labels, Field(min_length=1)]
    key: ItemKey
    refresh_ttl: bool = True


class PutOp(_Op):
    op: Literal["put"]
    namespace: Annotated[Labels, Field(min_length=1)]
    key: ItemKey
    value: dict[str, JsonValue] | None = Field(description="the object; null deletes the item")
    text: str | None = Field(
        None, description="what search matches (the indexed fields' text); default the JSON"
    )
    index: bool = Field(True, description="false: ranked by no query (found without one)")
    ttl: float | None = Field(None, description="minutes until it expires, refreshed by reads")


class SearchOp(_Op):
    op: Literal["search"]
    namespace_prefix: Labels = Field(default_factory=list)
    query: Annotated[str, StringConstraints(max_length=10_000)] | None = None
    filter: dict[str, JsonValue] | None = Field(
        None, description="on the value: {field: value}, nested objects, $eq $ne $gt $gte $lt $lte"
    )
    limit: Annotated[int, Field(ge=1, le=1000)] = 10
    offset: Annotated[int, Field(ge=0, le=100_000)] = 0
    refresh_ttl: bool = True
    explain: bool = False


class ListNamespacesOp(_Op):
    op: Literal["list_namespaces"]
    prefix: Labels | None = Field(None, description='leading labels; "*" matches any one')
    suffix: Labels | None = Field(None, description='trailing labels; "*" matches any one')
    max_depth: Annotated[int, Field(ge=1)] | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    offset: Annotated[int, Field(ge=0)] = 0


StoreOp = Annotated[GetOp | PutOp | SearchOp | ListNamespacesOp, Field(discriminator="op")]


class BatchParams(Params):
    ops: Annotated[list[StoreOp], Field(min_length=1, max_length=MAX_OPS)]


class ItemOut(BaseModel):
    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    memory_id: str
    scope: str
    scope_id: str
    score: float | None = None  # a search with a query: the retrieval score
    factors: dict[str, float] | None = None  # and what it was made of
    relevance_signals: dict[str, float] | None = None  # with explain

    @classmethod
    def of(cls, item: Item) -> ItemOut:
        m, s = item.memory, item.scored
        return cls(
            namespace=list(item.namespace),
            key=item.key,
            value=item.value,
            created_at=m.created_at,
            updated_at=m.updated_at,
            expires_at=m.expires_at,
            memory_id=m.id,
            scope=m.scope_level.value,
            scope_id=m.scope_key.split(":", 1)[1],
            score=None if s is None else round(s.score, 6),
            factors=None if s is None else {k: round(v, 6) for k, v in s.factors.items()},
            relevance_signals=None
            if s is None or s.signals is None
            else {k: round(v, 6) for k, v in s.signals.items()},
        )


OpResult = ItemOut | list[ItemOut] | list[list[str]] | None


class BatchResult(BaseModel):
    results: list[OpResult] = Field(
        description="one per op: get an item or null, put null, search a list of items, "
        "list_namespaces a list of namespaces"
    )


Run = Callable[[], Awaitable[OpResult]]


def store_methods(items: NamespacedItems) -> list[RpcMethod]:
    def prepare(op: GetOp | PutOp | SearchOp | ListNamespacesOp) -> Run:
        """The op, checked whole (labels, key length, filter, TTL, scope), ready to run."""
        scope = op.item_scope()
        if isinstance(op, GetOp):
            ns = check_labels(op.namespace, "namespace")
            stored_key(ns, op.key)
            scope.key()

            async def get() -> OpResult:
                found = await items.get(scope, ns, op.key, op.refresh_ttl)
                return None if found is None else ItemOut.of(found)

            return get
        if isinstance(op, PutOp):
            put = Put(
                namespace=check_labels(op.namespace, "namespace"),
                key=op.key,
                value=op.value,
                text=op.text,
                indexed=op.index,
                ttl=check_ttl(op.ttl),
            )
            stored_key(put.namespace, put.key)
            scope.key()

            async def write() -> OpResult:
                await items.put(scope, put)
                return None

            return write
        if isinstance(op, SearchOp):
            search = Search(
                prefix=check_labels(op.namespace_prefix, "namespace_prefix"),
                query=op.query,
                where=value_filter(op.filter),
                limit=op.limit,
                offset=op.offset,
                refresh_ttl=op.refresh_ttl,
                explain=op.explain,
            )
            scope.keys()

            async def find() -> OpResult:
                return [ItemOut.of(found) for found in await items.search(scope, search)]

            return find
        matches = []
        if op.prefix:
            matches.append(Match("prefix", check_labels(op.prefix, "prefix", wildcards=True)))
        if op.suffix:
            matches.append(Match("suffix", check_labels(op.suffix, "suffix", wildcards=True)))
        scope.keys()

        async def listing() -> OpResult:
            found = await items.namespaces(scope, matches, op.max_depth, op.limit, op.offset)
            return [list(ns) for ns in found]

        return listing

    async def batch(a: BatchParams) -> BatchResult:
        # Every op is checked before any runs: a bad one changes nothing.
        runs = []
        for n, op in enumerate(a.ops):
            try:
                runs.append(prepare(op))
            except (InvalidParams, InvalidScope, MissingIdentifier) as exc:
                raise _in_op(exc, n) from None
        return BatchResult(results=[await run() for run in runs])

    return [
        RpcMethod(
            "memory.store.batch",
            BatchParams,
            BatchResult,
            batch,
            "LangGraph store operations on namespaced items (get, put, search, "
            "list_namespaces), in order.",
        )
    ]


def _in_op(exc: AgentCoreError, n: int) -> AgentCoreError:
    """``exc`` saying which op it is about (its fields as ``ops.<n>.<field>``)."""
    details = dict(exc.details)
    if isinstance(details.get("errors"), list):
        details["errors"] = [
            {**e, "field": f"ops.{n}.{e.get('field', '')}"} for e in details["errors"]
        ]
    return type(exc)(f"ops.{n}: {exc.message}", **details)
