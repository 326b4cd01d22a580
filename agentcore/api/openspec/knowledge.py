"""The knowledge operations of the REST face: each is one or more JSON-RPC calls through the
same endpoint as ``/rpc`` (the same params models, key checks, rate limits, metrics and error
table), with the spec's layers mapped onto ours (``layers.py``)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from agentcore.api import errors
from agentcore.api import params as p
from agentcore.api.openspec import models as m
from agentcore.api.openspec.events import event_type
from agentcore.api.openspec.http_errors import RestError
from agentcore.api.openspec.layers import SPEC_LAYERS, SpecLayer, levels_supplied, spec_layer
from agentcore.api.openspec.layers import spec_layer_of as label
from agentcore.api.rpc import JsonRpcEndpoint, field_errors
from agentcore.api.schemas import MemoryOut
from agentcore.bootstrap import Container
from agentcore.domain.access import SCOPE_FIELDS, ApiKey
from agentcore.domain.errors import AgentCoreError, InvalidScope, MemoryNotFound, MissingIdentifier
from agentcore.domain.models import ScopeLevel

log = logging.getLogger(__name__)
T = TypeVar("T")


def invalid(field: str, message: str) -> RestError:
    return RestError(errors.invalid_params([{"field": field, "message": message}]))


class Knowledge:
    """The operations, for one caller's key at a time."""

    def __init__(
        self,
        container: Container,
        rpc: JsonRpcEndpoint,
        check: Callable[[ApiKey | None, str, Any], None],
        max_batch: int,
    ) -> None:
        self._container = container
        self._rpc = rpc
        self._check = check  # Gate.check
        self.max_batch = max_batch

    async def call(self, key: ApiKey | None, method: str, params: dict[str, Any]) -> Any:
        """One JSON-RPC call's result; its error as a ``RestError``."""
        reply = await self._rpc.call(method, params, lambda m_, p_: self._check(key, m_, p_))
        if "error" in reply:
            raise RestError(reply["error"])
        return reply["result"]

    async def create(self, key: ApiKey | None, body: dict[str, Any]) -> m.CreateResult:
        params = dict(body)
        name = params.pop("layer", None)
        layer = None if name is None else spec_layer(name)
        if layer is not None and layer.name == "Working":
            result = await self.call(key, "memory.working.append", params)
            item = result["item"]
            return m.CreateResult(id=item["id"], layer=layer.name, working_item=item)
        if layer is not None:
            params.update(_placement(layer, params))
        result = await self.call(key, "memory.add", params)
        memory = MemoryOut.model_validate(result["memory"])
        return m.CreateResult(
            id=memory.id,
            layer=label(memory.layer, memory.scope).name,
            memory=memory,
            deduplicated=result["deduplicated"],
        )

    async def update(self, key: ApiKey | None, memory_id: str, body: dict[str, Any]) -> m.Entry:
        result = await self.call(key, "memory.update", {**body, "memory_id": memory_id})
        return _entry(MemoryOut.model_validate(result))

    async def delete(
        self, key: ApiKey | None, memory_id: str, scope: dict[str, Any]
    ) -> m.DeleteResult:
        result = await self.call(key, "memory.delete", {**scope, "memory_id": memory_id})
        if not result["deleted"]:  # none, or another scope's: the same answer either way
            raise RestError.of(_not_found(memory_id))
        return m.DeleteResult(id=memory_id)

    async def metadata(
        self, key: ApiKey | None, memory_id: str, scope: dict[str, Any]
    ) -> m.Metadata:
        params = {**scope, "memory_id": memory_id}
        history = await self.call(key, "memory.history", params)  # checks key, params, scope
        ids = p.MemoryIdParams.model_validate(params).scope_ids()
        (memory,) = await self._service(self._container.memory.read([memory_id], ids))
        out = MemoryOut.of(memory)  # read without counting an access
        events = history["events"]
        kinds = Counter(event_type(e["kind"], e["actor"]) for e in events)
        return m.Metadata(
            id=out.id,
            layer=label(out.layer, out.scope).name,
            scope=out.scope,
            scope_ids={f: v for f in SCOPE_FIELDS if (v := getattr(out, f)) is not None},
            tags=out.tags,
            metadata=out.metadata,
            key=out.key,
            stage_id=out.stage_id,
            critical=out.critical,
            importance=out.importance,
            sensitive=out.sensitive,
            provenance={
                "source": out.source,
                "confidence": out.confidence,
                "promoted_from_id": out.promoted_from_id,
                "compacted_from_ids": out.compacted_from_ids,
                "created_in_session_id": out.created_in_session_id,
            },
            validity={
                "created_at": out.created_at,
                "updated_at": out.updated_at,
                "expires_at": out.expires_at,
                "valid_to": out.valid_to,
                "superseded_by": out.superseded_by,
                "fact_slot": out.fact_slot,
            },
            access={"access_count": out.access_count, "last_accessed_at": out.last_accessed_at},
            history=m.HistorySummary(
                events=len(events),
                by_type=dict(kinds),
                first_at=events[0]["at"] if events else None,
                last_at=events[-1]["at"] if events else None,
            ),
        )

    async def query(self, key: ApiKey | None, body: dict[str, Any]) -> m.QueryResult:
        params = dict(body)
        names = params.pop("layers", None)
        if names is None:
            chosen = [layer for layer in SPEC_LAYERS if layer.name != "Working"]
        elif not isinstance(names, list) or not names:
            raise invalid("layers", "a non-empty list of layer names")
        else:
            chosen = list(dict.fromkeys(spec_layer(name) for name in names))
        working = [layer for layer in chosen if layer.name == "Working"]
        searches = _searches([c for c in chosen if c.name != "Working"], params, names is None)
        if not searches and not working:
            fields = sorted({lv.id_field for c in chosen for lv in c.levels})
            raise RestError.of(
                MissingIdentifier("the layers asked need one of: " + ", ".join(fields))
            )
        found = await asyncio.gather(*(self.call(key, "memory.search", s) for s in searches))
        hits: dict[str, m.Hit] = {}
        for result in found:
            for hit in result["results"]:
                memory = MemoryOut.model_validate(hit["memory"])
                if memory.id not in hits or hits[memory.id].score < hit["score"]:
                    hits[memory.id] = m.Hit(
                        id=memory.id,
                        layer=label(memory.layer, memory.scope).name,
                        score=hit["score"],
                        similarity=hit["similarity"],
                        factors=hit["factors"],
                        memory=memory,
                        superseded_by=hit["superseded_by"],
                        current_for=hit["current_for"],
                    )
        limit = params.get("limit", 10)
        ranked = sorted(hits.values(), key=lambda h: h.score, reverse=True)[: int(limit)]
        items = None
        if working:
            session = {f: params[f] for f in SCOPE_FIELDS if f in params}
            items = (await self.call(key, "memory.working.get", session))["items"]
        return m.QueryResult(
            results=ranked,
            total_count=len(ranked),
            searched_layers=[c.name for c in chosen],
            working=items,
        )

    async def batch(self, key: ApiKey | None, body: dict[str, Any]) -> m.BatchResult:
        operations = body.get("operations")
        if set(body) != {"operations"} or not isinstance(operations, list) or not operations:
            raise invalid("operations", "a batch is {operations: [...]}, at least one")
        if len(operations) > self.max_batch:
            raise invalid("operations", f"at most {self.max_batch} operations")
        items = []
        for index, operation in enumerate(operations):
            op = operation.get("op") if isinstance(operation, dict) else None
            try:
                status, result = await self._one(key, operation, op)
                items.append(m.BatchItem(index=index, op=str(op), status=status, result=result))
            except RestError as exc:
                items.append(
                    m.BatchItem(
                        index=index, op=str(op)[:20], status=exc.status, error=exc.body()["error"]
                    )
                )
        failed = sum(1 for item in items if item.error is not None)
        return m.BatchResult(results=items, succeeded=len(items) - failed, failed=failed)

    async def _one(self, key: ApiKey | None, operation: Any, op: Any) -> tuple[int, dict[str, Any]]:
        if op not in m.OPERATIONS:
            raise invalid("op", "one of create, update, delete")
        fields = {k: v for k, v in operation.items() if k != "op"}
        if op == "create":
            return 201, (await self.create(key, fields)).model_dump(mode="json")
        memory_id = fields.pop("id", None)
        if not isinstance(memory_id, str) or not memory_id:
            raise invalid("id", f"{op} needs the id of a memory")
        if op == "update":
            return 200, (await self.update(key, memory_id, fields)).model_dump(mode="json")
        return 200, (await self.delete(key, memory_id, fields)).model_dump(mode="json")

    async def _service(self, work: Awaitable[T]) -> T:
        """A service call made beside the method table: its errors through the same table."""
        try:
            return await work
        except AgentCoreError as exc:
            raise RestError.of(exc) from None
        except Exception as exc:
            known = self._container.outage(exc)
            if known is None:
                log.exception("openspec metadata read failed unexpectedly")
                raise RestError(errors.internal_error()) from None
            raise RestError.of(known) from None


def _entry(memory: MemoryOut) -> m.Entry:
    return m.Entry(id=memory.id, layer=label(memory.layer, memory.scope).name, memory=memory)


def _not_found(memory_id: str) -> AgentCoreError:
    return MemoryNotFound(f"no memory {memory_id[:100]} in the given scope")


def supplied_levels(params: dict[str, Any]) -> list[ScopeLevel]:
    """The levels whose ids ``params`` supplies; ``INVALID_PARAMS`` for an id of a wrong type."""
    try:
        ids = p.ScopeParams.model_validate({f: params[f] for f in SCOPE_FIELDS if f in params})
    except ValidationError as exc:
        raise RestError(errors.invalid_params(field_errors(exc))) from None
    return list(ids.scope_ids().present())


def _placement(layer: SpecLayer, params: dict[str, Any]) -> dict[str, Any]:
    """Our layer and scope level for a create into ``layer``: its first layer, at the most
    specific of its levels the caller supplied an id for."""
    levels = levels_supplied(layer, supplied_levels(params))
    if not levels:
        fields = ", ".join(level.id_field for level in layer.levels)
        raise RestError.of(MissingIdentifier(f"layer {layer.name} needs one of: {fields}"))
    asked = params.get("scope")
    if asked is not None and asked not in [level.value for level in levels]:
        raise RestError.of(
            InvalidScope(f"layer {layer.name} is stored at {', '.join(lv.value for lv in levels)}")
        )
    return {"layer": layer.layers[0].value, "scope": asked or levels[0].value}


def _searches(
    chosen: list[SpecLayer], params: dict[str, Any], everything: bool
) -> list[dict[str, Any]]:
    """The memory.search params that cover ``chosen`` layers: one search for all of our store
    when no layer was named, else one per spec layer whose levels the caller supplied."""
    if everything:
        return [params]
    supplied = supplied_levels(params)
    asked = params.get("scopes")
    if asked is not None and not (
        isinstance(asked, list) and all(isinstance(a, str) for a in asked)
    ):
        raise invalid("scopes", "a list of scope levels")
    searches = []
    for layer in chosen:
        levels = [lv for lv in levels_supplied(layer, supplied) if asked is None or lv in asked]
        if levels:
            searches.append(
                {
                    **params,
                    "layers": [ours.value for ours in layer.layers],
                    "scopes": [level.value for level in levels],
                }
            )
    return searches
