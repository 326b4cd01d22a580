"""The OpenAPI 3.1 document of the REST face (``GET /openspec/v1/openapi.json``), generated
from the JSON-RPC methods' params models (the requests: the REST body is those params, with the
spec's layer names) and the face's own result models (``models.py``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from agentcore.api.openspec import models as m
from agentcore.api.openspec.http_errors import STATUS
from agentcore.api.openspec.layers import SPEC_LAYERS
from agentcore.api.rpc import RpcMethod
from agentcore.domain.access import SCOPE_FIELDS

_REF = "#/components/schemas/{model}"
_K = "/openspec/v1/knowledge"

# (HTTP method, path, summary, request schema or None, result model, success status)
ENDPOINTS: tuple[tuple[str, str, str], ...] = (
    ("GET", _K, "Discovery: layers and their mapping, scopes, filters, limits, embedding"),
    ("POST", f"{_K}/query", "Search by meaning across layers, with each score's factors"),
    ("POST", f"{_K}/create", "Store one entry in a layer (memory.add; Working: working memory)"),
    ("PUT", f"{_K}/{{id}}", "Change an entry (memory.update)"),
    ("DELETE", f"{_K}/{{id}}", "Delete an entry (memory.delete)"),
    ("GET", f"{_K}/{{id}}/metadata", "An entry's provenance, validity, accesses and history"),
    ("POST", f"{_K}/batch", "Mixed create/update/delete, each its own transaction and result"),
    ("GET", f"{_K}/stream", "Changes of the scopes named, as Server-Sent Events"),
    ("GET", "/openspec/v1/openapi.json", "This document"),
)
_RESULTS: dict[str, tuple[type[BaseModel] | None, int]] = {
    f"GET {_K}": (m.Discovery, 200),
    f"POST {_K}/query": (m.QueryResult, 200),
    f"POST {_K}/create": (m.CreateResult, 201),
    f"PUT {_K}/{{id}}": (m.Entry, 200),
    f"DELETE {_K}/{{id}}": (m.DeleteResult, 200),
    f"GET {_K}/{{id}}/metadata": (m.Metadata, 200),
    f"POST {_K}/batch": (m.BatchResult, 200),
    f"GET {_K}/stream": (None, 200),
    "GET /openspec/v1/openapi.json": (None, 200),
}
_REQUESTS = {
    f"POST {_K}/query": "QueryRequest",
    f"POST {_K}/create": "CreateRequest",
    f"PUT {_K}/{{id}}": "UpdateRequest",
    f"POST {_K}/batch": "BatchRequest",
}
_LAYER_NAMES = {"type": "string", "enum": [layer.name for layer in SPEC_LAYERS]}
_RESPONSES = (m.Discovery, m.QueryResult, m.CreateResult, m.Entry, m.DeleteResult)
_MORE = (m.Metadata, m.BatchResult, m.ErrorResponse, m.StreamEvent)


def openapi_document(methods: Mapping[str, RpcMethod], version: str) -> dict[str, Any]:
    params = {
        name: methods[name].params for name in ("memory.add", "memory.update", "memory.search")
    }
    models: list[type[BaseModel]] = [*params.values(), *_RESPONSES, *_MORE]
    refs, top = models_json_schema([(model, "validation") for model in models], ref_template=_REF)
    schemas: dict[str, Any] = top.get("$defs", {})
    schemas.update(_requests(schemas, params, max_batch_note="MEMORY_MAX_BATCH_SIZE"))
    paths: dict[str, Any] = {}
    for http_method, path, summary in ENDPOINTS:
        route = f"{http_method} {path}"
        paths.setdefault(path, {})[http_method.lower()] = _operation(route, summary, refs)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "AgentCore Memory: OpenSpec v1.0.0 Knowledge Provider",
            "version": version,
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
    }


def _requests(
    schemas: dict[str, Any], params: Mapping[str, type[BaseModel]], max_batch_note: str
) -> dict[str, Any]:
    create = copy.deepcopy(schemas[params["memory.add"].__name__])
    create["properties"]["layer"] = {
        **_LAYER_NAMES,
        "description": "a spec layer (case ignored); Working takes memory.working.append's "
        "params (session_id, content, kind, role)",
    }
    update = copy.deepcopy(schemas[params["memory.update"].__name__])
    update["properties"].pop("memory_id")
    update["required"] = [r for r in update.get("required", []) if r != "memory_id"]
    query = copy.deepcopy(schemas[params["memory.search"].__name__])
    query["properties"]["layers"] = {"type": "array", "items": _LAYER_NAMES, "minItems": 1}
    batch = {
        "type": "object",
        "properties": {
            "operations": {
                "type": "array",
                "minItems": 1,
                "description": f"at most {max_batch_note} (discovery: max_batch)",
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"enum": list(m.OPERATIONS)},
                        "id": {"type": "string", "description": "update and delete"},
                    },
                    "required": ["op"],
                    "description": "op, id and the fields of create or update (scope ids too)",
                },
            }
        },
        "required": ["operations"],
        "additionalProperties": False,
    }
    return {
        "CreateRequest": create,
        "UpdateRequest": update,
        "QueryRequest": query,
        "BatchRequest": batch,
    }


def _operation(route: str, summary: str, refs: Mapping[Any, Any]) -> dict[str, Any]:
    result, status = _RESULTS[route]
    op: dict[str, Any] = {"summary": summary, "operationId": _operation_id(route)}
    if result is None:
        media = "text/event-stream" if route.endswith("/stream") else "application/json"
        ok: dict[str, Any] = {"description": "OK", "content": {media: {"schema": {}}}}
    else:
        schema = refs[(result, "validation")]
        ok = {"description": "OK", "content": {"application/json": {"schema": schema}}}
    error = {"$ref": _REF.format(model="ErrorResponse")}
    statuses = sorted(set(STATUS.values()))
    op["responses"] = {
        str(status): ok,
        **{
            str(s): {"description": "error", "content": {"application/json": {"schema": error}}}
            for s in statuses
        },
    }
    if route in _REQUESTS:
        ref = {"$ref": _REF.format(model=_REQUESTS[route])}
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": ref}}}
    parameters = []
    if "{id}" in route:
        parameters.append(
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
        )
    if route.startswith(("GET", "DELETE", "PUT")) and ("{id}" in route or "stream" in route):
        parameters += [
            {"name": f, "in": "query", "required": False, "schema": {"type": "string"}}
            for f in SCOPE_FIELDS
        ]
    if route.endswith("/stream"):
        parameters += [
            {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
            {"name": "last_event_id", "in": "query", "schema": {"type": "string"}},
        ]
    if parameters:
        op["parameters"] = parameters
    return op


def _operation_id(route: str) -> str:
    method, path = route.split(" ", 1)
    words = [w.strip("{}") for w in path.split("/") if w and w not in ("openspec", "v1")]
    return method.lower() + "_" + "_".join(words).replace(".", "_")
