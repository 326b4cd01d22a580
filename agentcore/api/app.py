"""The HTTP application: POST /rpc (JSON-RPC 2.0), /mcp (MCP, streamable HTTP), GET /health,
GET /metrics, the OpenSpec REST face and the memory browser (/ui)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentcore.api import errors
from agentcore.api.auth import Gate, refusal
from agentcore.api.mcp import McpHttp, McpTools
from agentcore.api.metrics import SCRAPE_HEALTH_MAX_AGE_SECONDS, HealthCollector
from agentcore.api.openspec.routes import OpenSpecFace, openspec_routes
from agentcore.api.request_ids import RequestIds
from agentcore.api.runtime import running
from agentcore.api.schemas import HealthResult
from agentcore.api.ui.pages import Pages
from agentcore.api.ui.routes import UiFace, ui_routes
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.access import token_matches
from agentcore.domain.errors import AgentCoreError, Forbidden, Unauthorized

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024


def _dumps(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


async def _body(request: Request) -> bytes | None:
    """The request body, or None past ``MAX_BODY_BYTES`` (declared, or counted as it arrives
    when the body is chunked)."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class _Mcp:
    """``/mcp``, handed to the MCP transport that the lifespan built."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope["app"].state.mcp(scope, receive, send)


def create_app(
    settings: Settings,
    build: Callable[[Settings], Awaitable[Container]] = build_container,
) -> Starlette:
    """The app; its lifespan builds the container (the composition root) and closes it."""

    refused: list[str] = []  # why start-up was refused, when the operator must fix it

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with running(settings, build) as runtime:
                mcp_http = McpHttp(McpTools(runtime), runtime.gate)
                app.state.container = runtime.container
                app.state.rpc = runtime.rpc
                app.state.gate = runtime.gate
                app.state.mcp = mcp_http
                app.state.openspec = OpenSpecFace.of(runtime)
                pages = Pages(runtime.rpc, runtime.gate, runtime.container.memory)
                app.state.ui = UiFace(pages, runtime.gate, app.state.openspec.stream)
                runtime.container.exposition.register(HealthCollector(runtime.container.health))
                async with mcp_http.running():
                    yield
                await app.state.openspec.stream.close()
        except AgentCoreError as exc:
            refused.append(exc.message)
            raise

    async def rpc(request: Request) -> Response:
        content = await _body(request)
        if content is None:
            body = {"jsonrpc": "2.0", "error": errors.invalid_request("body too large"), "id": None}
            return Response(_dumps(body), status_code=413, media_type="application/json")
        gate: Gate = request.app.state.gate
        try:
            key = gate.admit(request.headers.get("authorization"), request.headers.get("origin"))
        except (Unauthorized, Forbidden) as exc:
            status, headers = refusal(exc)
            body = {"jsonrpc": "2.0", "error": errors.from_exception(exc), "id": None}
            return Response(_dumps(body), status, headers, media_type="application/json")
        reply = await request.app.state.rpc.handle(
            content, lambda method, params: gate.check(key, method, params)
        )
        if reply is None:
            return Response(status_code=204)
        return Response(_dumps(reply), media_type="application/json")

    async def health(request: Request) -> Response:
        report = await request.app.state.container.health.check()
        body = HealthResult.of(report).model_dump(mode="json")
        return JSONResponse(body, status_code=200 if report.ok else 503)

    async def livez(request: Request) -> Response:
        """The process serves requests: no store is asked (an orchestrator restarts a process
        that fails this, and a store's outage must not restart every replica)."""
        return JSONResponse({"status": "alive"})

    async def readyz(request: Request) -> Response:
        """Every store answers and start-up is done: a load balancer may send calls here.
        A job queue without a live worker leaves the process ready (it serves every call but
        a wait for a job, which fails fast) and is named under ``degraded``: taking every
        replica out of the load balancer for it would stop every call."""
        container = request.app.state.container
        report = await container.health.check()
        startup = container.startup
        waiting = [] if startup.failure else startup.waiting_for
        failed = None if startup.failure is None else startup.failure.message
        ready = report.ok and startup.done and failed is None
        down = sorted(name for name, status in report.components.items() if not status.up)
        status = "degraded" if report.degraded else "ready"
        body = {
            "ready": ready,
            "status": status if ready else "unready",
            "unavailable": down,
            "starting": waiting,
            "failed": failed,
            "degraded": report.degraded,
        }
        return JSONResponse(body, status_code=200 if ready else 503)

    async def metrics(request: Request) -> Response:
        token = settings.agentcore_metrics_token
        if token is not None and not token_matches(
            request.headers.get("authorization"), token.get_secret_value()
        ):
            return Response("a metrics token is needed\n", 401, {"www-authenticate": "Bearer"})
        container = request.app.state.container
        await container.health.recent(SCRAPE_HEALTH_MAX_AGE_SECONDS)  # the stores' gauges
        return Response(generate_latest(container.exposition), media_type=CONTENT_TYPE_LATEST)

    routes = [
        Route("/rpc", rpc, methods=["POST"]),
        Route("/mcp", _Mcp()),  # an ASGI app: every HTTP method goes to the MCP transport
        Route("/health", health, methods=["GET"]),
        Route("/livez", livez, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        *openspec_routes(),  # the OpenSpec Knowledge Provider face (REST, SSE)
        *ui_routes(),  # the memory browser
    ]
    middleware = [Middleware(_OneLineRefusal, refused=refused), Middleware(RequestIds)]
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


class _OneLineRefusal:
    """A start-up refused for a reason the operator must fix (another embedder, a schema this
    release does not know, a bad setting) is reported by the server as its message on one
    line, instead of the traceback Starlette reports for any failure (a defect keeps it)."""

    def __init__(self, app: ASGIApp, refused: list[str]) -> None:
        self._app = app
        self._refused = refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self._app(scope, receive, send)
            return

        async def reporting(message: Message) -> None:
            if message["type"] == "lifespan.startup.failed" and self._refused:
                message = {**message, "message": f"start-up refused: {self._refused[0]}"}
            await send(message)

        await self._app(scope, receive, reporting)
