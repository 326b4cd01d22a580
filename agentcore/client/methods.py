"""Every JSON-RPC method of the service, written once for both clients.

``Methods[R]`` holds one Python method per RPC method; each builds the params and hands them to
``_call``, which the sync client answers with the result and the async one with an awaitable
of it. A method's name is the RPC name without ``memory.`` (or ``rpc.``), dots turned into
underscores (``memory.stage.start`` → ``stage_start``, ``rpc.discover`` → ``discover``,
``memory.import`` → ``import_``). Required params are named arguments; the optional ones
(scope ids, filters, options) go as keywords, exactly as ``rpc.discover`` names them.
"""

from __future__ import annotations

import keyword
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

R = TypeVar("R")

Json = dict[str, Any]


def method_name(rpc_method: str) -> str:
    """The client's attribute for an RPC method, e.g. ``stage_start`` for ``memory.stage.start``."""
    name = rpc_method.removeprefix("memory.").removeprefix("rpc.").replace(".", "_")
    return name + "_" if keyword.iskeyword(name) else name


class Methods(ABC, Generic[R]):
    """The service's methods; ``R`` is what a call returns (a result, or an awaitable of one)."""

    @abstractmethod
    def _call(self, method: str, params: Json) -> R: ...

    # Memories.
    def add(self, content: str | Sequence[Mapping[str, Any]] | None = None, **params: Any) -> R:
        """Store a memory: ``content`` is its text, or mem0-style messages (a list of
        ``{"role": ..., "content": ...}``, one memory per message); ``messages=`` works too."""
        if content is None:
            given: Json = {}
        elif isinstance(content, str):
            given = {"content": content}
        else:
            given = {"messages": [dict(message) for message in content]}
        return self._call("memory.add", {**given, **params})

    def add_batch(self, items: Sequence[Mapping[str, Any]], *, wait_indexed: bool = False) -> R:
        """Store several memories (each item the params of ``add``), all or none;
        ``wait_indexed``: answer once their vectors are written too."""
        params: Json = {"items": [dict(item) for item in items]}
        if wait_indexed:
            params["wait_indexed"] = True
        return self._call("memory.add_batch", params)

    def get(self, memory_id: str, **params: Any) -> R:
        return self._call("memory.get", {"memory_id": memory_id, **params})

    def update(self, memory_id: str, **params: Any) -> R:
        return self._call("memory.update", {"memory_id": memory_id, **params})

    def delete(self, memory_id: str, **params: Any) -> R:
        return self._call("memory.delete", {"memory_id": memory_id, **params})

    def list(self, **params: Any) -> R:
        return self._call("memory.list", params)

    def search(self, query: str, **params: Any) -> R:
        return self._call("memory.search", {"query": query, **params})

    def clear(self, layer: str, **params: Any) -> R:
        return self._call("memory.clear", {"layer": layer, **params})

    def history(self, memory_id: str, **params: Any) -> R:
        return self._call("memory.history", {"memory_id": memory_id, **params})

    # Values by key.
    def put(self, key: str, value: Any, **params: Any) -> R:
        return self._call("memory.put", {"key": key, "value": value, **params})

    def get_value(self, key: str, **params: Any) -> R:
        return self._call("memory.get_value", {"key": key, **params})

    def list_keys(self, **params: Any) -> R:
        return self._call("memory.list_keys", params)

    def search_keys(self, query: str, **params: Any) -> R:
        return self._call("memory.search_keys", {"query": query, **params})

    def delete_key(self, key: str, **params: Any) -> R:
        return self._call("memory.delete_key", {"key": key, **params})

    # Namespaced items (LangGraph's store: ``agentcore.integrations.langgraph``).
    def store_batch(self, ops: Sequence[Json], **params: Any) -> R:
        return self._call("memory.store.batch", {"ops": ops, **params})

    # Layers: working, episodic, semantic, procedural.
    def working_append(self, session_id: str, content: str, **params: Any) -> R:
        return self._call(
            "memory.working.append", {"session_id": session_id, "content": content, **params}
        )

    def working_get(self, session_id: str, **params: Any) -> R:
        return self._call("memory.working.get", {"session_id": session_id, **params})

    def working_clear(self, session_id: str, **params: Any) -> R:
        return self._call("memory.working.clear", {"session_id": session_id, **params})

    def working_flush(self, session_id: str, **params: Any) -> R:
        return self._call("memory.working.flush", {"session_id": session_id, **params})

    def episodes_list(self, **params: Any) -> R:
        return self._call("memory.episodes.list", params)

    def episodes_get(self, episode_id: str, **params: Any) -> R:
        return self._call("memory.episodes.get", {"episode_id": episode_id, **params})

    def episodes_search(self, query: str, **params: Any) -> R:
        return self._call("memory.episodes.search", {"query": query, **params})

    def facts_extract(self, memory_ids: Sequence[str], **params: Any) -> R:
        return self._call("memory.facts.extract", {"memory_ids": [*memory_ids], **params})

    def procedure_record(
        self, action: str, context: str, outcome: str, success: bool, **params: Any
    ) -> R:
        values = {"action": action, "context": context, "outcome": outcome, "success": success}
        return self._call("memory.procedure.record", {**values, **params})

    def procedure_search(self, context: str, **params: Any) -> R:
        return self._call("memory.procedure.search", {"context": context, **params})

    # COMPASS stages and tasks.
    def stage_start(self, task_id: str, stage_type: str, **params: Any) -> R:
        return self._call(
            "memory.stage.start", {"task_id": task_id, "stage_type": stage_type, **params}
        )

    def stage_current(self, task_id: str, **params: Any) -> R:
        return self._call("memory.stage.current", {"task_id": task_id, **params})

    def stage_get(self, stage_id: str, **params: Any) -> R:
        return self._call("memory.stage.get", {"stage_id": stage_id, **params})

    def stage_complete(self, task_id: str, stage_id: str, **params: Any) -> R:
        return self._call(
            "memory.stage.complete", {"task_id": task_id, "stage_id": stage_id, **params}
        )

    def task_progress(self, task_id: str, **params: Any) -> R:
        return self._call("memory.task.progress", {"task_id": task_id, **params})

    def task_context(self, task_id: str, **params: Any) -> R:
        return self._call("memory.task.context", {"task_id": task_id, **params})

    def job_get(self, job_id: str) -> R:
        return self._call("memory.job.get", {"job_id": job_id})

    # Errors, ACE, costs.
    def error_record(
        self, task_id: str, error_type: str, description: str, severity: float, **params: Any
    ) -> R:
        values = {
            "task_id": task_id,
            "error_type": error_type,
            "description": description,
            "severity": severity,
        }
        return self._call("memory.error.record", {**values, **params})

    def error_history(self, **params: Any) -> R:
        return self._call("memory.error.history", params)

    def error_patterns(self, **params: Any) -> R:
        return self._call("memory.error.patterns", params)

    def ace_strategic_context(self, task_id: str, **params: Any) -> R:
        return self._call("memory.ace.strategic_context", {"task_id": task_id, **params})

    def ace_record_intervention(
        self, task_id: str, intervention_type: str, outcome: str, **params: Any
    ) -> R:
        values = {"task_id": task_id, "intervention_type": intervention_type, "outcome": outcome}
        return self._call("memory.ace.record_intervention", {**values, **params})

    def ace_interventions(self, task_id: str, **params: Any) -> R:
        return self._call("memory.ace.interventions", {"task_id": task_id, **params})

    def cost_report(self, **params: Any) -> R:
        return self._call("memory.cost.report", params)

    # Lifecycle, routing, artifacts, transfer.
    def session_close(self, session_id: str, **params: Any) -> R:
        return self._call("memory.session.close", {"session_id": session_id, **params})

    def promote(self, memory_id: str, target_scope: str, **params: Any) -> R:
        values = {"memory_id": memory_id, "target_scope": target_scope}
        return self._call("memory.promote", {**values, **params})

    def compact(self, memory_ids: Sequence[str], **params: Any) -> R:
        return self._call("memory.compact", {"memory_ids": [*memory_ids], **params})

    def context(self, max_tokens: int, **params: Any) -> R:
        """One prompt-ready block within ``max_tokens`` (``query=``, scope ids, ...)."""
        return self._call("memory.context", {"max_tokens": max_tokens, **params})

    def route_context(self, session_id: str, content: str, **params: Any) -> R:
        return self._call(
            "memory.route_context", {"session_id": session_id, "content": content, **params}
        )

    def artifact_add(self, task_id: str, session_id: str, name: str, **params: Any) -> R:
        values = {"task_id": task_id, "session_id": session_id, "name": name}
        return self._call("memory.artifact.add", {**values, **params})

    def artifact_list(self, task_id: str, **params: Any) -> R:
        return self._call("memory.artifact.list", {"task_id": task_id, **params})

    def export(self, **params: Any) -> R:
        """One page of a scope's records (``cursor`` for the next)."""
        return self._call("memory.export", params)

    def import_(self, records: Sequence[Mapping[str, Any]], **params: Any) -> R:
        """Records of ``export`` into the caller's scope (idempotent)."""
        return self._call("memory.import", {"records": [dict(r) for r in records], **params})

    # The service.
    def health(self) -> R:
        return self._call("memory.health", {})

    def discover(self) -> R:
        """The OpenRPC document: every method with its params and result schema."""
        return self._call("rpc.discover", {})
