"""``agentcore worker``: the Celery tasks, and the runtime that lets them use the async services.

A worker process keeps one event loop in a background thread and one container built on it
(the composition root, as in the API process), built before it takes its first job (at its
first job with ``--beat``, whose process Celery forks off this one). Tasks hand coroutines to
that loop and wait. Once it consumes jobs, it writes its heartbeat to Redis
(adapters/jobs/presence.py), which the API reads to know that someone runs its jobs.
Without ``REDIS_URL`` (embedded mode) there is no worker: jobs run in the API process.

A worker owns nothing in ``AGENTCORE_DATA_DIR``: the embedded stores there belong to the
serving process. So it needs a database server (``DATABASE_URL``); without ``QDRANT_URL`` it
opens no vector store (its vector writes are left to the serving process), and cannot run
Celery beat, whose periodic jobs change vectors (the serving process runs them then). With
``--beat`` it keeps beat's schedule there and takes the directory's lock (one scheduler).

With ``AGENTCORE_WORKER_METRICS_PORT`` (or ``--metrics-port``) it serves its metrics (its
jobs by kind and outcome, their durations, the compressions it ran) at ``/metrics`` on that
port from its start; with ``--beat`` they are there from its first job (its container is
built then).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from celery import Celery
from celery.signals import task_prerun, worker_ready, worker_shutdown
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from agentcore.adapters.jobs.celery_app import celery_app
from agentcore.adapters.jobs.celery_queue import (
    HEARTBEAT_SECONDS,
    HEARTBEAT_TTL,
    RUN_JOB,
    heartbeat_key,
)
from agentcore.adapters.jobs.presence import WorkerHeartbeat
from agentcore.adapters.metrics_server import serve_metrics
from agentcore.bootstrap import Container, build_worker_container
from agentcore.config import Settings
from agentcore.domain.errors import AgentCoreError
from agentcore.services.jobs import failed, run_job

T = TypeVar("T")
log = logging.getLogger(__name__)


class JobMetrics:
    """What this worker ran: jobs by kind and outcome (``ok`` or the error's code), and how
    long each took."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._jobs = Counter(
            "agentcore_worker_jobs_total",
            "Jobs this worker ran, by kind and outcome (ok, or the error code)",
            ["kind", "outcome"],
            registry=registry,
        )
        self._seconds = Histogram(
            "agentcore_worker_job_seconds",
            "How long this worker's jobs took, by kind",
            ["kind"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
            registry=registry,
        )

    def observe(self, kind: str, envelope: dict[str, Any], seconds: float) -> None:
        error = envelope.get("error")
        outcome = "ok" if envelope.get("ok") else str((error or {}).get("code", "INTERNAL_ERROR"))
        self._jobs.labels(kind, outcome).inc()
        self._seconds.labels(kind).observe(seconds)


class WorkerRuntime:
    """One event loop thread and one container per worker process, built on first use; its
    metrics served on ``AGENTCORE_WORKER_METRICS_PORT`` once it is built."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._container: Container | None = None
        self._metrics: JobMetrics | None = None
        self._stop_metrics: Callable[[], None] | None = None

    def run(self, job: Callable[[Container], Awaitable[T]], timeout: float = 600) -> T:
        loop, container = self.start()
        return asyncio.run_coroutine_threadsafe(_call(job, container), loop).result(timeout)

    def run_job(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One job of the container's handlers, counted and timed."""
        started = time.perf_counter()
        envelope = self.run(lambda c: _job(c, kind, payload))
        if self._metrics is not None:
            self._metrics.observe(kind, envelope, time.perf_counter() - started)
        return envelope

    def start(self) -> tuple[asyncio.AbstractEventLoop, Container]:
        with self._lock:
            if self._loop is None or self._container is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="agentcore-loop", daemon=True
                ).start()
                build = build_worker_container(self._settings)
                try:
                    self._container = asyncio.run_coroutine_threadsafe(build, loop).result(120)
                except BaseException:
                    loop.call_soon_threadsafe(loop.stop)
                    raise
                self._loop = loop
                self._metrics = JobMetrics(self._container.registry)
            return self._loop, self._container

    def serve_metrics(self) -> None:
        """``AGENTCORE_WORKER_METRICS_PORT``'s ``/metrics``, from now on: the container's
        metrics once it is built (at start, or at the first job with ``--beat``), none before."""
        port = self._settings.agentcore_worker_metrics_port
        if port is None:
            return
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Built(self))
        token = self._settings.agentcore_metrics_token
        self._stop_metrics = serve_metrics(
            self._settings.agentcore_host,
            port,
            registry,
            None if token is None else token.get_secret_value(),
        )

    @property
    def container(self) -> Container | None:
        """The container once it is built."""
        return self._container

    def close(self) -> None:
        with self._lock:
            if self._stop_metrics is not None:
                self._stop_metrics()
                self._stop_metrics = None
            if self._loop is not None and self._container is not None:
                asyncio.run_coroutine_threadsafe(self._container.aclose(), self._loop).result(60)
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop, self._container = None, None


class _Built(Collector):
    """The metrics of the runtime's container once it is built (none before)."""

    def __init__(self, runtime: WorkerRuntime) -> None:
        self._runtime = runtime

    def collect(self) -> Iterable[Metric]:
        container = self._runtime.container
        return () if container is None else container.exposition.collect()


async def _call(job: Callable[[Container], Awaitable[T]], container: Container) -> T:
    return await job(container)


async def _job(container: Container, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """One job, once the worker's start-up work is done: a worker that started while a store
    was away tries that work again first (services/startup.py); until the embedder check
    passes, a job fails as retryable."""
    startup = container.startup
    try:
        if not startup.done:
            await startup.run()
        startup.admit()
    except AgentCoreError as exc:
        return failed(exc)
    return await run_job(container.job_handlers, kind, payload)


def register_tasks(app: Celery, runtime: WorkerRuntime) -> None:
    @app.task(name=RUN_JOB, bind=True)  # type: ignore[untyped-decorator]
    def run(task: Any, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One job of the container's handlers; always returns a JSON envelope."""
        with _Heartbeat(app, str(task.request.id)):
            return runtime.run_job(kind, payload)

    def first_beat(task_id: str, task: Any, **_: Any) -> None:
        # Before Celery marks the job STARTED, so a started job always has a heartbeat.
        if getattr(task, "name", None) == RUN_JOB:
            app.backend.client.set(heartbeat_key(task_id), 1, ex=HEARTBEAT_TTL)

    task_prerun.connect(first_beat, weak=False)


class _Heartbeat:
    """Refreshes a job's heartbeat key from a thread while the job runs (the queue reads a
    started job without one as lost). When the job ends the key is left to expire: Celery
    stores the result only after the task returns, and a key deleted before that would make
    the still-``STARTED`` job read as lost in between."""

    def __init__(self, app: Celery, job_id: str) -> None:
        self._client = app.backend.client
        self._key = heartbeat_key(job_id)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="job-heartbeat", daemon=True)

    def __enter__(self) -> None:
        self._client.set(self._key, 1, ex=HEARTBEAT_TTL)
        self._thread.start()

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._client.set(self._key, 1, ex=HEARTBEAT_TTL)  # covers the result's write

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                self._client.set(self._key, 1, ex=HEARTBEAT_TTL)
            except Exception:  # Redis away for a moment: the next beat tries again
                log.warning("job heartbeat failed", exc_info=True)


def announce_while_consuming(app: Celery) -> None:
    """The worker's heartbeat, from when it consumes jobs until it shuts down."""
    heartbeat = WorkerHeartbeat(app.backend.client)

    def started(**_: Any) -> None:
        heartbeat.start()

    def stopping(**_: Any) -> None:
        heartbeat.stop()

    worker_ready.connect(started, weak=False)
    worker_shutdown.connect(stopping, weak=False)


def run_worker(settings: Settings, loglevel: str = "INFO", *, beat: bool = False) -> None:
    """A worker; with ``beat``, also the scheduler of periodic jobs (run exactly one)."""
    settings.check_worker(beat=beat)
    app = celery_app(settings)
    runtime = WorkerRuntime(settings)
    runtime.serve_metrics()  # before beat's fork: the child inherits the socket, not the thread
    if not beat:
        # A store or model it cannot use stops it here, before its heartbeat says it runs
        # jobs. Not with beat: Celery forks beat's process, and a fork must not copy the
        # container's threads; that worker builds it at its first job.
        runtime.start()
    register_tasks(app, runtime)
    announce_while_consuming(app)
    # No mingle: it only waits a second at start for revoked ids, and none are revoked.
    argv = [
        "worker",
        "--pool=solo",
        f"--loglevel={loglevel}",
        "--without-gossip",
        "--without-mingle",
    ]
    if beat:  # every store is a server then: the directory holds only beat's schedule
        settings.agentcore_data_dir.mkdir(parents=True, exist_ok=True)
        argv += ["--beat", f"--schedule={settings.agentcore_data_dir / 'celerybeat-schedule'}"]
    try:
        app.worker_main(argv)
    finally:
        runtime.close()
