"""Background jobs: what runs them (the ``JobQueue`` port) and what a job is.

A job is a named handler (``kind``) applied to a JSON payload, returning a JSON result. The
container registers the handlers; a queue runs them in process (embedded mode) or on Celery
workers (production). Failures are part of the status, with a stable code, never a traceback.

A queue on workers says what it knows of them (``QueueFacts``: live workers by their
heartbeats, jobs waiting, the oldest one's age), so that nothing waits on a queue nobody
serves: a caller waiting for a job fails fast when no worker is alive (``wait_served``), and
the health report names the cause (``queue_problems``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from agentcore.domain.errors import AgentCoreError, InvalidParams, ProviderError

log = logging.getLogger(__name__)

JobHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class JobState(StrEnum):
    QUEUED = "queued"  # submitted, no worker has started it yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class JobStatus:
    job_id: str
    state: JobState
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = field(default=None)  # {"code", "message", "retryable"}

    @property
    def done(self) -> bool:
        return self.state in (JobState.SUCCEEDED, JobState.FAILED)


@dataclass(frozen=True, slots=True)
class QueueFacts:
    """A queue served by worker processes, as seen now."""

    workers_alive: int  # workers whose heartbeat is fresh
    queued: int  # jobs waiting for a worker (not yet taken by one)
    oldest_queued_seconds: float | None  # how long the oldest of them has waited


JOB_WORKER = "job_worker"  # what ``data.store`` names when no worker runs jobs
STALL_SECONDS = 60.0  # a queued job older than this, with workers alive: the queue is stalled
_WORKER_CHECK_SECONDS = 1.0  # how often a caller waiting on a queued job checks for workers


class JobQueue(Protocol):
    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        """Queue a job; returns its id."""
        ...

    async def facts(self) -> QueueFacts | None:
        """The workers and the backlog, or None when jobs run in this process (nothing
        else has to be alive for them to run)."""
        ...

    async def status(self, job_id: str) -> JobStatus | None:
        """None when the id is unknown (or its result has expired)."""
        ...

    async def wait(self, job_id: str, max_wait: float) -> JobStatus:
        """The status once the job is done, or its current status after ``max_wait`` seconds."""
        ...

    async def close(self) -> None: ...


async def run_job(
    handlers: Mapping[str, JobHandler], kind: str, payload: dict[str, Any]
) -> dict[str, Any]:
    """Run one job to a JSON envelope: ``{"ok": true, "result": ...}`` or ``{"ok": false,
    "error": {...}}``. Shared by every queue so a job fails the same way everywhere."""
    handler = handlers.get(kind)
    try:
        if handler is None:
            raise InvalidParams(f"unknown job kind {kind!r}")
        return {"ok": True, "result": await handler(payload)}
    except AgentCoreError as exc:
        return failed(exc)
    except Exception:  # a job's unexpected failure is its status, logged here
        log.exception("job %s failed unexpectedly", kind)
        error = {"code": "INTERNAL_ERROR", "message": "Internal error", "retryable": True}
        return {"ok": False, "error": error}


def failed(exc: AgentCoreError) -> dict[str, Any]:
    """The envelope of a job that failed with ``exc``."""
    error = {"code": exc.code, "message": exc.message, "retryable": exc.retryable}
    return {"ok": False, "error": error}


def status_of(job_id: str, envelope: dict[str, Any]) -> JobStatus:
    if envelope.get("ok"):
        return JobStatus(job_id, JobState.SUCCEEDED, result=envelope.get("result"))
    return JobStatus(job_id, JobState.FAILED, error=envelope.get("error"))


def no_live_worker(what: str) -> ProviderError:
    """The retryable error of a call that would wait for a job no worker is alive to run."""
    return ProviderError(
        f"no live job worker to run {what}; retry later (an operator starts `agentcore "
        "worker`), or call without waiting: a queued job runs once a worker is up",
        store=JOB_WORKER,
    )


def is_no_live_worker(exc: AgentCoreError) -> bool:
    return isinstance(exc, ProviderError) and exc.details.get("store") == JOB_WORKER


async def wait_served(queue: JobQueue, job_id: str, max_wait: float, what: str) -> JobStatus:
    """``queue.wait``, except that a job still queued while no worker is alive raises
    ``no_live_worker`` at once instead of holding the caller: the job stays queued, and runs
    when a worker comes up."""
    deadline = time.monotonic() + max_wait
    while True:
        left = deadline - time.monotonic()
        status = await queue.wait(job_id, min(max(left, 0.0), _WORKER_CHECK_SECONDS))
        if status.done or left <= _WORKER_CHECK_SECONDS:
            return status
        if status.state is JobState.QUEUED:
            facts = await queue.facts()
            if facts is not None and facts.workers_alive == 0:
                raise no_live_worker(what)


async def has_live_worker(queue: JobQueue) -> bool:
    """Whether a job submitted now would be run: in this process, or by a live worker."""
    facts = await queue.facts()
    return facts is None or facts.workers_alive > 0


def queue_problems(facts: QueueFacts, stall_seconds: float = STALL_SECONDS) -> list[str]:
    """Why the queue does not run its jobs, in words for an operator (empty: it does)."""
    waiting = ""
    if facts.queued and facts.oldest_queued_seconds is not None:
        waiting = f"; {facts.queued} queued, the oldest for {facts.oldest_queued_seconds:.0f} s"
    if facts.workers_alive == 0:
        return [f"no live job worker (no worker heartbeat){waiting}"]
    oldest = facts.oldest_queued_seconds
    if oldest is not None and oldest > stall_seconds:
        return [
            f"job queue stalled: {facts.workers_alive} worker(s) alive, but a job has waited "
            f"{oldest:.0f} s (over {stall_seconds:.0f} s){waiting}"
        ]
    return []
