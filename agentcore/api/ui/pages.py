"""What each page of the memory browser shows, read with the methods and key checks of ``/rpc``
(``JsonRpcEndpoint.call`` with the gate as guard): a page can show nothing a caller of ``/rpc``
with the same key could not read. A scope, memory or task the key may not read is
``NotVisible``, exactly as one that does not exist."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentcore.api import errors
from agentcore.api.auth import Gate
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.api.schemas import MemoryOut
from agentcore.domain.access import Access, ApiKey, authorize
from agentcore.domain.errors import Forbidden, MemoryNotFound
from agentcore.domain.models import Layer, ScopeIds, ScopeLevel
from agentcore.domain.promotion import goes_upward
from agentcore.services.memory_manager import MemoryManager

PAGE_SIZE = 50
SEARCH_LIMIT = 20
LAYERS = tuple(layer.value for layer in Layer)
EDITABLE = ("content", "tags", "critical", "importance")  # what a memory's page may change
HIDDEN = frozenset({"FORBIDDEN", "MEMORY_NOT_FOUND", "TASK_NOT_FOUND", "STAGE_NOT_FOUND"})
# What the scope page's filters may hold; anything else in the query string is ignored.
FILTERS = ("layer", "tag", "since", "until", "stage", "critical", "superseded", "expired",
           "sort", "order", "cursor")  # fmt: skip


class NotVisible(Exception):
    """No such scope, memory or task for this key (or none at all: the caller cannot tell)."""


class PageError(Exception):
    """A call the page made was refused or failed: its JSON-RPC error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["data"]["code"])
        self.error = error


@dataclass(frozen=True, slots=True)
class Scope:
    """One scope: a level and its id, as in a memory's ``scope_key`` (``user:alice``)."""

    level: ScopeLevel
    id: str

    @classmethod
    def parse(cls, text: str | None) -> Scope:
        level, sep, identifier = (text or "").partition(":")
        if not sep or not identifier or len(identifier) > 255:
            raise NotVisible
        try:
            return cls(ScopeLevel(level), identifier)
        except ValueError:
            raise NotVisible from None

    @property
    def key(self) -> str:
        return f"{self.level.value}:{self.id}"

    @property
    def ids(self) -> dict[str, str]:
        return {self.level.id_field: self.id}


@dataclass(frozen=True, slots=True)
class Viewer:
    """The caller of one request: its key (None when the service is open)."""

    key: ApiKey | None

    @property
    def may_write(self) -> bool:
        return self.key is None or self.key.access >= Access.WRITE

    def may_read(self, scope: Scope) -> bool:
        if self.key is None:
            return True
        try:
            authorize(self.key, "memory.list", scope.ids)
        except Forbidden:
            return False
        return True


@dataclass(slots=True)
class ScopeRow:
    scope: Scope
    counts: dict[str, int] = field(default_factory=dict)
    latest: datetime | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class Pages:
    def __init__(self, rpc: JsonRpcEndpoint, gate: Gate, memory: MemoryManager) -> None:
        self._rpc = rpc
        self._gate = gate
        self._memory = memory

    async def call(
        self, viewer: Viewer, method: str, params: dict[str, Any], *, reading: bool = True
    ) -> Any:
        """One method's result, as ``/rpc`` would answer this key. A read the key may not make
        is ``NotVisible``; a write it may not make, its ``FORBIDDEN``."""
        reply = await self._rpc.call(
            method, params, lambda name, args: self._gate.check(viewer.key, name, args)
        )
        error = reply.get("error")
        if error is None:
            return reply["result"]
        code = error["data"]["code"]
        if code in HIDDEN and (reading or code != "FORBIDDEN"):
            raise NotVisible
        raise PageError(error)

    async def scopes(self, viewer: Viewer, limit: int = 500) -> list[ScopeRow]:
        """The scopes this key may read that hold memories, latest activity first."""
        self._gate.check(viewer.key, "memory.list", {})  # a read key at least, under its rate
        rows: dict[str, ScopeRow] = {}
        for count in await self._memory.scope_layers():
            row = rows.get(count.scope_key)
            if row is None:
                try:
                    scope = Scope.parse(count.scope_key)
                except NotVisible:
                    continue
                if not viewer.may_read(scope):
                    continue
                row = rows[count.scope_key] = ScopeRow(scope)
            row.counts[count.layer] = count.count
            row.latest = count.latest if row.latest is None else max(row.latest, count.latest)
        ordered = sorted(rows.values(), key=lambda r: (r.latest is not None, r.latest))
        return ordered[::-1][:limit]

    async def memories(self, viewer: Viewer, scope: Scope, query: Mapping[str, str]) -> Any:
        """One page of the scope's memories under the page's filters."""
        params: dict[str, Any] = {**scope.ids, "scope": scope.level.value, "limit": PAGE_SIZE}
        if query.get("layer") in LAYERS:
            params["layer"] = query["layer"]
        if query.get("tag"):
            params["tags"] = [query["tag"]]
        for name in ("since", "until"):
            if query.get(name):
                params[name] = query[name]
        if query.get("stage"):
            params["stage_id"] = query["stage"]
        if query.get("critical") == "yes":
            params["filter"] = {"critical": True}
        if query.get("superseded") in ("exclude", "only"):
            params["superseded"] = query["superseded"]
        if query.get("expired") == "show":
            params["include_expired"] = True
        if query.get("sort") == "importance":
            params["sort"] = "importance"
        if query.get("order") == "asc":
            params["order"] = "asc"
        if query.get("cursor"):
            params["cursor"] = query["cursor"]
        page = await self.call(viewer, "memory.list", params)
        filtered = any(query.get(name) for name in FILTERS if name not in ("sort", "order"))
        if not page["memories"] and not filtered:
            raise NotVisible  # a scope with no memories is one that does not exist
        return page

    async def search(self, viewer: Viewer, scope: Scope, text: str) -> Any:
        params = {**scope.ids, "scopes": [scope.level.value], "query": text}
        return await self.call(viewer, "memory.search", {**params, "limit": SEARCH_LIMIT})

    async def memory(self, viewer: Viewer, scope: Scope, memory_id: str) -> dict[str, Any]:
        """A memory, its history, the memories it superseded and the one that superseded it."""
        ids = {**scope.ids, "memory_id": memory_id}
        found = await self._look(viewer, scope, memory_id)
        if found["scope"] != scope.level.value:
            raise NotVisible  # visible from this scope's ids, but another scope's memory
        history = await self.call(viewer, "memory.history", ids)
        older = await self._memory.superseded_by(scope.key, memory_id)
        newer = None
        if found.get("superseded_by"):
            try:
                newer = await self._look(viewer, scope, found["superseded_by"])
            except NotVisible:
                newer = None  # deleted since
        return {
            "memory": found,
            "events": history["events"],
            "older": [
                {"id": m.id, "content": m.content, "created_at": m.created_at} for m in older
            ],
            "newer": newer,
            "promote_to": promotion_targets(scope.level, found),
        }

    async def change(self, viewer: Viewer, scope: Scope, form: Mapping[str, Any]) -> bool:
        """An edit, delete or promotion from a memory's page, as ``/rpc``'s method with this
        key; a refusal is the method's error (403), not a 404: the key may read the memory.
        True when the memory is still there."""
        ids = {**scope.ids, "memory_id": str(form.get("id", ""))}
        action = form.get("action")
        if action == "update":
            params = {**ids, **{name: form[name] for name in EDITABLE if name in form}}
        elif action == "promote":
            params = {**ids, "target_scope": form.get("target_scope")}
        elif action == "delete":
            params = ids
        else:
            raise PageError(errors.invalid_params([{"field": "action", "message": "unknown"}]))
        await self.call(viewer, f"memory.{action}", params, reading=False)
        return bool(action != "delete")

    async def _look(self, viewer: Viewer, scope: Scope, memory_id: str) -> dict[str, Any]:
        """``memory.get`` as this key may call it, but a person looking counts no access (it
        would move the memory's frequency factor in agents' searches)."""
        self._gate.check(viewer.key, "memory.get", {**scope.ids, "memory_id": memory_id})
        try:
            [memory] = await self._memory.read([memory_id], ScopeIds(**scope.ids))
        except MemoryNotFound:
            raise NotVisible from None
        return MemoryOut.of(memory).model_dump(mode="json")

    async def task(self, viewer: Viewer, scope: Scope) -> dict[str, Any]:
        """A COMPASS task: its stages with their summaries, its cost, errors and patterns."""
        if scope.level is not ScopeLevel.TASK:
            raise NotVisible
        task = {"task_id": scope.id}
        progress = await self.call(viewer, "memory.task.progress", task)
        stage_ids = list(progress["completed_stages"])
        if progress["current_stage_id"] and progress["current_stage_id"] not in stage_ids:
            stage_ids.append(progress["current_stage_id"])
        stages = [
            await self.call(viewer, "memory.stage.get", {**task, "stage_id": stage_id})
            for stage_id in stage_ids
        ]
        stages.sort(key=lambda s: s["stage"]["started_at"])
        return {
            "progress": progress,
            "stages": stages,
            "cost": await self.call(viewer, "memory.cost.report", task),
            "errors": await self.call(viewer, "memory.error.history", {**task, "limit": 50}),
            "patterns": await self.call(viewer, "memory.error.patterns", task),
        }


def promotion_targets(level: ScopeLevel, memory: Mapping[str, Any]) -> list[str]:
    """The levels this memory may be promoted to with the ids it carries."""
    return [
        target.value
        for target in ScopeLevel
        if goes_upward(level, target) and memory.get(target.id_field)
    ]
