"""``AgentCoreStore``: LangGraph's long-term memory store (``BaseStore``) kept by a running
AgentCore Memory service, so ``StateGraph.compile(store=...)``, ``get_store()`` in nodes and
LangMem's memory tools keep what they learn there.

    store = AgentCoreStore("http://127.0.0.1:8080", api_key=..., user_label=1)
    store.put(("memories", "alice"), "k1", {"content": "Alice moved to Porto"})
    store.search(("memories", "alice"), query="where does Alice live?")

Where items live (the service's scopes, so its keys and its other methods reach them): with
``user_label=i``, a namespace with a label at position ``i`` belongs to the user that label
names (``("memories", "alice")`` with ``user_label=1``: user ``alice``), where
``memory.search`` and ``memory.context`` of that user see it; every other namespace belongs to
``scope`` (default ``{"project_id": "langgraph"}``). A search or a listing whose prefix does not
name the user reaches every scope's items and needs an admin key. Items are the service's
memories: search ranks them by its retrieval (``SearchItem.score``, and ``ScoredItem.factors``
says what the score was made of), a put can supersede what it replaces, TTLs expire in the
service. ``index`` chooses the fields whose text search matches (default: the whole value);
the service embeds with its own model, so an index config's ``dims`` and ``embed`` are not used.

Concurrent async calls made in the same turn of the event loop go to the service in one
request (``memory.store.batch``), as LangGraph's own async stores group them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agentcore.client import AsyncMemoryClient, MemoryClient
from agentcore.client.protocol import DEFAULT_URL
from agentcore.integrations import missing_extra

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        validate_op_namespace,
    )
    from langgraph.store.base.embed import get_text_at_path, tokenize_path
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise missing_extra("langgraph", "langgraph") from exc

Json = dict[str, Any]
MAX_OPS = 100  # the service's limit per memory.store.batch
DEFAULT_SCOPE = {"project_id": "langgraph"}
WHOLE_VALUE = "$"
WILDCARD = "*"


class ScoredItem(SearchItem):
    """A search result with what the service adds: the memory's id, its scope and the score's
    factors (similarity, recency, frequency, …; ``memory.search``'s)."""

    __slots__ = ("expires_at", "factors", "memory_id", "scope", "scope_id")

    def __init__(self, found: Json) -> None:
        super().__init__(
            namespace=tuple(found["namespace"]),
            key=found["key"],
            value=found["value"],
            created_at=_time(found["created_at"]),
            updated_at=_time(found["updated_at"]),
            score=found.get("score"),
        )
        self.memory_id: str = found["memory_id"]
        self.scope: str = found["scope"]
        self.scope_id: str = found["scope_id"]
        self.factors: dict[str, float] | None = found.get("factors")
        expires = found.get("expires_at")
        self.expires_at: datetime | None = None if expires is None else _time(expires)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _item(found: Json | None) -> Item | None:
    if found is None:
        return None
    return Item(
        value=found["value"],
        key=found["key"],
        namespace=tuple(found["namespace"]),
        created_at=_time(found["created_at"]),
        updated_at=_time(found["updated_at"]),
    )


def readable(value: Any) -> str:
    """The text of a whole value that search matches: a lone string field is its text; other
    values are ``field: text`` lines (nested fields dotted, lists one line per element)."""
    if isinstance(value, Mapping) and len(value) == 1:
        only = next(iter(value.values()))
        if isinstance(only, str):
            return only
    lines: list[str] = []

    def walk(at: str, v: Any) -> None:
        if isinstance(v, Mapping):
            for k, inner in v.items():
                walk(f"{at}.{k}" if at else str(k), inner)
        elif isinstance(v, list | tuple):
            for inner in v:
                walk(at, inner)
        elif v is not None:
            lines.append(f"{at}: {v}" if at else str(v))

    walk("", value)
    return "\n".join(lines)


class AgentCoreStore(BaseStore):
    """LangGraph's ``BaseStore`` over the service (module doc)."""

    supports_ttl = True

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        user_label: int | None = None,
        scope: Mapping[str, str] | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.25,
    ) -> None:
        if user_label is not None and user_label < 0:
            raise ValueError("user_label is a position in the namespace: 0 or more")
        self._client_args: Json = {
            "api_key": api_key,
            "timeout": timeout,
            "retries": retries,
            "backoff": backoff,
        }
        self._url = url
        self._sync = MemoryClient(url, **self._client_args)
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Group] = (
            weakref.WeakKeyDictionary()
        )
        self._user_label = user_label
        self._scope = dict(scope if scope is not None else DEFAULT_SCOPE)
        fields = (index or {}).get("fields") or [WHOLE_VALUE]
        self._fields = [(f, tokenize_path(f)) for f in fields]
        self.ttl_config = ttl

    # BaseStore's two abstract methods; get, put, search, … are built on them.
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        wire = self._wire(ops)
        results: list[Any] = []
        for start in range(0, len(wire), MAX_OPS):
            part = wire[start : start + MAX_OPS]
            results += self._sync.store_batch([op for op, _ in part])["results"]
        return [convert(found) for (_, convert), found in zip(wire, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        wire = self._wire(ops)
        loop = asyncio.get_running_loop()
        group = self._async.get(loop)
        if group is None:
            group = self._async[loop] = _Group(AsyncMemoryClient(self._url, **self._client_args))
        results = await group.send([op for op, _ in wire])
        return [convert(found) for (_, convert), found in zip(wire, results, strict=True)]

    def close(self) -> None:
        self._sync.close()

    async def aclose(self) -> None:
        group = self._async.pop(asyncio.get_running_loop(), None)
        if group is not None:
            await group.client.aclose()

    def __enter__(self) -> AgentCoreStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # Ops as memory.store.batch ops, each with the conversion of its result.
    def _wire(self, ops: Iterable[Op]) -> list[tuple[Json, Any]]:
        wire: list[tuple[Json, Any]] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                wire.append((self._get(op), _item))
            elif isinstance(op, PutOp):
                wire.append((self._put(op), _none))
            elif isinstance(op, SearchOp):
                wire.append((self._search(op), _scored))
            elif isinstance(op, ListNamespacesOp):
                wire.append((self._list(op), _namespaces))
            else:
                raise ValueError(f"unknown store operation: {type(op).__name__}")
        return wire

    def _get(self, op: GetOp) -> Json:
        return {
            "op": "get",
            **self._owner(op.namespace),
            "namespace": list(op.namespace),
            "key": op.key,
            "refresh_ttl": op.refresh_ttl,
        }

    def _put(self, op: PutOp) -> Json:
        wire: Json = {
            "op": "put",
            **self._owner(op.namespace),
            "namespace": list(op.namespace),
            "key": op.key,
            "value": None if op.value is None else dict(op.value),
        }
        if op.value is None:
            return wire
        text = "" if op.index is False else self._text(op.value, op.index)
        wire.update(text=text or None, index=bool(text), ttl=op.ttl)
        return wire

    def _search(self, op: SearchOp) -> Json:
        return {
            "op": "search",
            **self._reach(op.namespace_prefix),
            "namespace_prefix": list(op.namespace_prefix),
            "query": op.query,
            "filter": None if op.filter is None else dict(op.filter),
            "limit": op.limit,
            "offset": op.offset,
            "refresh_ttl": op.refresh_ttl,
        }

    def _list(self, op: ListNamespacesOp) -> Json:
        wire: Json = {"op": "list_namespaces", "limit": op.limit, "offset": op.offset}
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            wire[condition.match_type] = list(condition.path)
            if condition.match_type == "prefix":
                prefix = tuple(condition.path)
        if op.max_depth is not None:
            wire["max_depth"] = op.max_depth
        return {**wire, **self._reach(prefix)}

    def _text(self, value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
        chosen = self._fields if fields is None else [(f, tokenize_path(f)) for f in fields]
        texts: list[str] = []
        for name, tokens in chosen:
            if name == WHOLE_VALUE:
                texts.append(readable(value))
            else:
                texts += get_text_at_path(value, tokens)
        return "\n".join(t for t in texts if t)

    def _owner(self, namespace: tuple[str, ...]) -> Json:
        """The scope ids of the scope a namespace's items live in (module doc)."""
        at = self._user_label
        if at is not None and len(namespace) > at:
            return {"user_id": namespace[at]}
        return dict(self._scope)

    def _reach(self, prefix: tuple[str, ...]) -> Json:
        """The scope ids a search or listing under ``prefix`` reaches: one scope when the
        prefix says which, none (every scope) when a user's namespaces may match."""
        at = self._user_label
        if at is None:
            return dict(self._scope)
        if len(prefix) > at and prefix[at] != WILDCARD:
            return {"user_id": prefix[at]}
        return {}


def _none(_: Any) -> None:
    return None


def _scored(found: list[Json]) -> list[SearchItem]:
    return [ScoredItem(f) for f in found]


def _namespaces(found: list[list[str]]) -> list[tuple[str, ...]]:
    return [tuple(ns) for ns in found]


class _Group:
    """The async calls of one event loop: the ops of calls made in the same turn of the loop
    go to the service together (at most ``MAX_OPS`` a request, requests concurrent)."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self.client = client
        self._waiting: list[tuple[list[Json], asyncio.Future[list[Any]]]] = []
        self._flush: asyncio.Task[None] | None = None

    async def send(self, ops: list[Json]) -> list[Any]:
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append((ops, future))
        if self._flush is None:
            self._flush = asyncio.get_running_loop().create_task(self._send_waiting())
        return await future

    async def _send_waiting(self) -> None:
        await asyncio.sleep(0)  # the calls made in this turn join
        waiting, self._waiting, self._flush = self._waiting, [], None
        ops = [op for part, _ in waiting for op in part]
        try:
            replies = await asyncio.gather(
                *(
                    self.client.store_batch(ops[start : start + MAX_OPS])
                    for start in range(0, len(ops), MAX_OPS)
                )
            )
        except Exception as exc:
            for _, future in waiting:
                if not future.done():
                    future.set_exception(exc)
            return
        results = [found for reply in replies for found in reply["results"]]
        start = 0
        for part, future in waiting:
            if not future.done():
                future.set_result(results[start : start + len(part)])
            start += len(part)
