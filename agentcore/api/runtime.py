"""What a serving process runs, whichever transport it speaks (HTTP, or MCP over stdio): the
container, the method table behind JSON-RPC, the gate of API keys, and the background loops."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from agentcore import __version__
from agentcore.api.auth import Gate, KeyRing, RateSettings
from agentcore.api.methods import build_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.openrpc import openrpc_document
from agentcore.api.rpc import JsonRpcEndpoint, RpcMethod
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError
from agentcore.services.failures import log_failure

log = logging.getLogger(__name__)

WORKING_SWEEP_SECONDS = 60.0  # idle working-memory sessions move to the episodic layer
ACCESS_FLUSH_SECONDS = 1.0  # retrieval access counts are written in batches
PENDING_STAGES_SECONDS = 5.0  # stages that ended by an automatic transition get compressed
STARTUP_RETRY_SECONDS = 1.0  # start-up work that waits for a store is retried this often
SWITCH_INTERVAL_SECONDS = 0.0005
STATISTICS_SECONDS = 60.0  # PostgreSQL: how often the searched tables' changes are checked


@dataclass(frozen=True, slots=True)
class Runtime:
    container: Container
    methods: dict[str, RpcMethod]
    rpc: JsonRpcEndpoint
    gate: Gate


@contextlib.asynccontextmanager
async def running(
    settings: Settings, build: Callable[[Settings], Awaitable[Container]] = build_container
) -> AsyncIterator[Runtime]:
    """Build everything, run the background loops while the caller serves, then close."""
    settings.check_production()
    keys = _key_ring(settings)  # a bad keys file stops start-up before anything is built
    container = await build(settings)
    rate = RateSettings(settings.api_rate_limit_per_second, settings.api_rate_limit_burst)
    methods: dict[str, RpcMethod] = {}
    methods.update(build_methods(container, lambda: openrpc_document(methods, __version__)))
    runtime = Runtime(
        container,
        methods,
        JsonRpcEndpoint(
            methods,
            RpcMetrics(container.registry),
            container.outage,
            container.admission,
        ),
        Gate(
            keys,
            rate,
            container.registry,
            settings.agentcore_allowed_origins,
            container.startup.admit,
        ),
    )
    # What start-up built lives as long as the process: out of the cycle collector's sight,
    # a full collection walks only what requests allocate (at 10k memories it took ~100 ms
    # with everything imported in sight, a pause in the middle of some request).
    gc.collect()
    gc.freeze()
    # Threads that finish C work (SQLite, onnxruntime, the vector engine) wait for the GIL;
    # at the default 5 ms they waited behind the event loop's Python for most of that, at
    # 0.5 ms the mixed load served ~7% more calls/s (load benchmark, docs/benchmarks.md).
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    stop = asyncio.Event()
    loops = [
        asyncio.create_task(
            container.startup.keep_trying(STARTUP_RETRY_SECONDS, stop), name="start-up"
        )
    ]
    loops += [  # background work waits until the data may be touched (schema, embedder)
        asyncio.create_task(_once_admitting(container, step, stop), name=name)
        for name, step in _loops(settings, container, stop)
    ]
    try:
        yield runtime
    finally:
        stop.set()
        await asyncio.gather(*loops)
        await container.aclose()


def _loops(settings: Settings, container: Container, stop: asyncio.Event) -> list[tuple[str, Any]]:
    loops: list[tuple[str, Any]] = [
        (
            "vector-sync",
            container.vector_sync.run(
                settings.vector_sync_interval, settings.vector_flush_interval, stop
            ),
        ),
        ("working-memory-sweep", _every(WORKING_SWEEP_SECONDS, container.working.sweep_idle, stop)),
        (
            "stage-compression",
            _every(PENDING_STAGES_SECONDS, container.compass.compress_pending, stop),
        ),
        ("access-counts", _every(ACCESS_FLUSH_SECONDS, container.access.flush, stop)),
    ]
    if container.keep_statistics is not None:
        loops.append(
            ("table-statistics", _every(STATISTICS_SECONDS, container.keep_statistics, stop))
        )
    if not settings.periodic_jobs_on_workers:  # else Celery beat runs these
        loops.append(
            ("expiry-sweep", _every(settings.expiry_sweep_seconds, container.expiry.sweep, stop))
        )
        if settings.consolidation_interval_seconds > 0:
            loops.append(
                (
                    "consolidation",
                    _every(
                        settings.consolidation_interval_seconds, container.consolidator.run, stop
                    ),
                )
            )
    return loops


async def _once_admitting(
    container: Container, loop: Coroutine[Any, Any, None], stop: asyncio.Event
) -> None:
    admitting = asyncio.ensure_future(container.startup.admitting.wait())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait((admitting, stopping), return_when=asyncio.FIRST_COMPLETED)
    admitting.cancel()
    stopping.cancel()
    if stop.is_set():
        loop.close()  # never started
    else:
        await loop


async def _every(
    seconds: float, step: Callable[[], Awaitable[object]], stop: asyncio.Event
) -> None:
    """Run ``step`` every ``seconds`` until ``stop``; a failing step is logged, never fatal."""
    while not stop.is_set():
        try:
            await step()
        except Exception as exc:
            log_failure(log, "background step failed", exc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)


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
