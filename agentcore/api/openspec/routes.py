"""The routes of the REST face under ``/openspec/v1`` and the HTTP edge of each: the API key
(the same gate as ``/rpc``), the body, the answer or the error (``http_errors.py``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agentcore import __version__
from agentcore.api import errors
from agentcore.api import params as p
from agentcore.api.auth import Gate, refusal
from agentcore.api.openspec import models as m
from agentcore.api.openspec.events import EVENT_TYPES
from agentcore.api.openspec.http_errors import RestError, error_response, json_response
from agentcore.api.openspec.knowledge import Knowledge, invalid, supplied_levels
from agentcore.api.openspec.layers import SPEC_LAYERS
from agentcore.api.openspec.openapi import ENDPOINTS, openapi_document
from agentcore.api.openspec.stream import ChangeStream
from agentcore.api.rpc import JsonRpcEndpoint, RpcMethod
from agentcore.api.runtime import Runtime
from agentcore.bootstrap import Container
from agentcore.domain.access import SCOPE_FIELDS, ApiKey
from agentcore.domain.errors import AgentCoreError, Forbidden, Unauthorized
from agentcore.domain.models import ScopeIds, ScopeLevel
from agentcore.domain.scopes import visible_scope_keys

log = logging.getLogger(__name__)

PREFIX = "/openspec/v1"
MAX_BODY_BYTES = 16 * 1024 * 1024
LAST_EVENT_ID = "last_event_id"  # the query parameter for clients that cannot set the header


class OpenSpecFace:
    """What the routes need from the running service; built by the app's lifespan."""

    def __init__(
        self,
        container: Container,
        rpc: JsonRpcEndpoint,
        methods: dict[str, RpcMethod],
        gate: Gate,
        stream: ChangeStream,
    ) -> None:
        self.gate = gate
        self.stream = stream
        self.container = container
        self.knowledge = Knowledge(
            container, rpc, gate.check, container.settings.memory_max_batch_size
        )
        self.openapi = openapi_document(methods, __version__)

    @classmethod
    def of(cls, runtime: Runtime) -> OpenSpecFace:
        stream = ChangeStream(runtime.container.feed)
        return cls(runtime.container, runtime.rpc, runtime.methods, runtime.gate, stream)

    def discovery(self) -> m.Discovery:
        embedder = self.container.embedder
        return m.Discovery(
            provider={"name": "agentcore-memory", "version": __version__},
            layers=[
                m.LayerOut(
                    name=layer.name,
                    agentcore_layers=[ours.value for ours in layer.layers],
                    scope_levels=[level.value for level in layer.levels],
                    description=layer.description,
                )
                for layer in SPEC_LAYERS
            ],
            scopes=[{"level": lv.value, "id_field": lv.id_field} for lv in ScopeLevel],
            filters={"grammar": p.FILTER_GRAMMAR, "as_in": "memory.search"},
            max_batch=self.knowledge.max_batch,
            embedding={"model": embedder.model_name, "dimension": embedder.dimension},
            endpoints=[{"method": e[0], "path": e[1], "summary": e[2]} for e in ENDPOINTS],
            stream={
                "event_types": list(EVENT_TYPES),
                "resume": "Last-Event-ID header (or last_event_id query parameter)",
                "scope": "scope ids as query parameters, as a key allows them",
            },
        )


Handler = Callable[[OpenSpecFace, ApiKey | None, Request], Awaitable[Response]]


def _endpoint(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """The key admitted, the handler run, any error answered from the one table."""

    async def endpoint(request: Request) -> Response:
        face: OpenSpecFace = request.app.state.openspec
        try:
            key = face.gate.admit(
                request.headers.get("authorization"), request.headers.get("origin")
            )
        except (Unauthorized, Forbidden) as exc:
            _, headers = refusal(exc)
            return error_response(RestError.of(exc), headers)
        try:
            return await handler(face, key, request)
        except RestError as exc:
            return error_response(exc)
        except AgentCoreError as exc:
            return error_response(RestError.of(exc))
        except Exception:
            log.exception("%s %s failed unexpectedly", request.method, request.url.path)
            return error_response(RestError(errors.internal_error()))

    return endpoint


async def _body(request: Request) -> dict[str, Any]:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise RestError(errors.invalid_request("body too large"))
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise RestError(errors.parse_error()) from None
    if not isinstance(body, dict):
        raise RestError(errors.invalid_request("the body must be a JSON object"))
    return body


def _query(request: Request, *, allowed: tuple[str, ...] = SCOPE_FIELDS) -> dict[str, str]:
    """The query parameters, each at most once and among ``allowed``."""
    found: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            raise invalid(name[:100], "not a parameter of this endpoint")
        if name in found:
            raise invalid(name, "given more than once")
        found[name] = value
    return found


def _ok(model: BaseModel, status: int = 200) -> Response:
    return json_response(model.model_dump(mode="json"), status)


async def _discovery(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    face.gate.check(key, "rpc.discover", {})
    return _ok(face.discovery())


async def _openapi(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    face.gate.check(key, "rpc.discover", {})
    return json_response(face.openapi)


async def _query_route(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    return _ok(await face.knowledge.query(key, await _body(request)))


async def _create(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    return _ok(await face.knowledge.create(key, await _body(request)), 201)


async def _update(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    body = {**_query(request), **await _body(request)}
    return _ok(await face.knowledge.update(key, request.path_params["id"], body))


async def _delete(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    return _ok(await face.knowledge.delete(key, request.path_params["id"], _query(request)))


async def _metadata(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    return _ok(await face.knowledge.metadata(key, request.path_params["id"], _query(request)))


async def _batch(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    return _ok(await face.knowledge.batch(key, await _body(request)))


async def _stream(face: OpenSpecFace, key: ApiKey | None, request: Request) -> Response:
    scope = _query(request, allowed=(*SCOPE_FIELDS, LAST_EVENT_ID))
    resume = scope.pop(LAST_EVENT_ID, None) or request.headers.get("last-event-id")
    if resume is not None and not (resume.isascii() and resume.isdigit() and len(resume) < 19):
        raise invalid("Last-Event-ID", "the id of an event received (a position)")
    supplied_levels(scope)  # ids of the right type
    face.gate.check(key, "memory.history", scope)  # reading the scopes' changes
    keys = visible_scope_keys(ScopeIds(**scope))
    after = int(resume) if resume is not None else await face.stream.head()
    return StreamingResponse(
        face.stream.frames(keys, after),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def openspec_routes() -> list[Route]:
    base = f"{PREFIX}/knowledge"
    return [
        Route(f"{PREFIX}/openapi.json", _endpoint(_openapi), methods=["GET"]),
        Route(base, _endpoint(_discovery), methods=["GET"]),
        Route(f"{base}/query", _endpoint(_query_route), methods=["POST"]),
        Route(f"{base}/create", _endpoint(_create), methods=["POST"]),
        Route(f"{base}/batch", _endpoint(_batch), methods=["POST"]),
        Route(f"{base}/stream", _endpoint(_stream), methods=["GET"]),
        Route(f"{base}/{{id}}", _endpoint(_update), methods=["PUT"]),
        Route(f"{base}/{{id}}", _endpoint(_delete), methods=["DELETE"]),
        Route(f"{base}/{{id}}/metadata", _endpoint(_metadata), methods=["GET"]),
    ]
