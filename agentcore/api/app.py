"""The HTTP application: POST /rpc (JSON-RPC 2.0), GET /health, GET /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agentcore import __version__
from agentcore.api import errors
from agentcore.api.auth import Gate, KeyRing, RateSettings, token_matches
from agentcore.api.methods import build_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.openrpc import openrpc_document
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.api.schemas import HealthResult
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError, Unauthorized

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024
WORKING_SWEEP_SECONDS = 60.0  # idle working-memory sessions move to the episodic layer
ACCESS_FLUSH_SECONDS = 1.0  # retrieval access counts are written in batches
PENDING_STAGES_SECONDS = 5.0  # stages that ended by an automatic transition get compressed


async def _every(
    seconds: float, step: Callable[[], Awaitable[object]], stop: asyncio.Event
) -> None:
    """Run ``step`` every ``seconds`` until ``stop``; a failing step is logged, never fatal."""
    while not stop.is_set():
        try:
            await step()
        except Exception:
            log.exception("background step failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)


def _dumps(payload: Any) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def _key_ring(settings: Settings) -> KeyRing | None:
    """The API keys (None: open). An open service says so; production refuses to be open
    unless ``AGENTCORE_ALLOW_OPEN`` is set."""
    path = settings.agentcore_api_keys_file
    if path is not None:
        return KeyRing(path)
    if settings.agentcore_mode == "production" and not settings.agentcore_allow_open:
        raise ConfigurationError(
            "AGENTCORE_MODE=production needs AGENTCORE_API_KEYS_FILE (or AGENTCORE_ALLOW_OPEN="
            "true to serve without keys)"
        )
    log.warning("no AGENTCORE_API_KEYS_FILE: the service is open to any caller that reaches it")
    return None


def create_app(
    settings: Settings,
    build: Callable[[Settings], Awaitable[Container]] = build_container,
) -> Starlette:
    """The app; its lifespan builds the container (the composition root) and closes it."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        keys = _key_ring(settings)  # a bad keys file stops start-up before anything is built
        container = await build(settings)
        rate = RateSettings(settings.api_rate_limit_per_second, settings.api_rate_limit_burst)
        app.state.gate = Gate(keys, rate, container.registry)
        methods: dict[str, Any] = {}
        methods.update(build_methods(container, lambda: openrpc_document(methods, __version__)))
        app.state.container = container
        app.state.rpc = JsonRpcEndpoint(methods, RpcMetrics(container.registry))
        # What start-up built lives as long as the process: out of the cycle collector's sight,
        # a full collection walks only what requests allocate (at 10k memories it took ~100 ms
        # with everything imported in sight, a pause in the middle of some request).
        gc.collect()
        gc.freeze()
        stop = asyncio.Event()
        loops = [
            asyncio.create_task(
                container.vector_sync.run(
                    settings.vector_sync_interval, settings.vector_flush_interval, stop
                ),
                name="vector-sync",
            ),
            asyncio.create_task(
                _every(WORKING_SWEEP_SECONDS, container.working.sweep_idle, stop),
                name="working-memory-sweep",
            ),
            asyncio.create_task(
                _every(PENDING_STAGES_SECONDS, container.compass.compress_pending, stop),
                name="stage-compression",
            ),
            asyncio.create_task(
                _every(ACCESS_FLUSH_SECONDS, container.access.flush, stop),
                name="access-counts",
            ),
        ]
        if settings.redis_url is None:  # in production Celery beat runs these
            loops.append(
                asyncio.create_task(
                    _every(settings.expiry_sweep_seconds, container.expiry.sweep, stop),
                    name="expiry-sweep",
                )
            )
            if settings.consolidation_interval_seconds > 0:
                loops.append(
                    asyncio.create_task(
                        _every(
                            settings.consolidation_interval_seconds,
                            container.consolidator.run,
                            stop,
                        ),
                        name="consolidation",
                    )
                )
        try:
            yield
        finally:
            stop.set()
            await asyncio.gather(*loops)
            await container.aclose()

    async def rpc(request: Request) -> Response:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            body = {"jsonrpc": "2.0", "error": errors.invalid_request("body too large"), "id": None}
            return Response(_dumps(body), status_code=413, media_type="application/json")
        gate: Gate = request.app.state.gate
        try:
            key = gate.authenticate(request.headers.get("authorization"))
        except Unauthorized as exc:
            body = {"jsonrpc": "2.0", "error": errors.from_exception(exc), "id": None}
            headers = {"www-authenticate": "Bearer"}
            return Response(_dumps(body), 401, headers, media_type="application/json")
        reply = await request.app.state.rpc.handle(
            await request.body(), lambda method, params: gate.check(key, method, params)
        )
        if reply is None:
            return Response(status_code=204)
        return Response(_dumps(reply), media_type="application/json")

    async def health(request: Request) -> Response:
        report = await request.app.state.container.health.check()
        body = HealthResult.of(report).model_dump(mode="json")
        return JSONResponse(body, status_code=200 if report.ok else 503)

    async def metrics(request: Request) -> Response:
        token = settings.agentcore_metrics_token
        if token is not None and not token_matches(
            request.headers.get("authorization"), token.get_secret_value()
        ):
            return Response("a metrics token is needed\n", 401, {"www-authenticate": "Bearer"})
        data = generate_latest(request.app.state.container.registry)
        return Response(data, media_type=CONTENT_TYPE_LATEST)

    routes = [
        Route("/rpc", rpc, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
