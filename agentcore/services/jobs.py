"""Background jobs: what runs them (the ``JobQueue`` port) and what a job is.

A job is a named handler (``kind``) applied to a JSON payload, returning a JSON result. The
container registers the handlers; a queue runs them in process (embedded mode) or on Celery
workers (production). Failures are part of the status, with a stable code, never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from agentcore.domain.errors import AgentCoreError, InvalidParams

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


class JobQueue(Protocol):
    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        """Queue a job; returns its id."""
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
