"""Jobs on Celery workers, with Redis as broker and result backend.

Publishing and reading results are blocking calls of the Celery client (~1.6 ms to publish,
DESIGN §6), so they run in a thread, never on the event loop.

Celery alone cannot tell an unknown job from a queued one (both are ``PENDING``), nor a job
whose worker died from a running one (``STARTED`` stays until the message is redelivered, an
hour later by default). So the queue records every job it submits (``agentcore:job:<id>``,
kept as long as results), and a worker running a job refreshes a heartbeat key
(``agentcore:job:<id>:alive``, ``HEARTBEAT_TTL`` seconds) until it ends. A started job without a
heartbeat has lost its worker: it reads as failed and retryable, never running forever.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from typing import Any

from celery import Celery
from celery.result import AsyncResult

from agentcore.adapters.jobs.presence import read_facts
from agentcore.adapters.outages import BROKER, names_outages
from agentcore.services.jobs import JobState, JobStatus, QueueFacts, status_of

RUN_JOB = "agentcore.jobs.run"
HEARTBEAT_SECONDS = 2.0  # how often a worker refreshes the heartbeat of the job it runs
HEARTBEAT_TTL = 10  # seconds without a refresh after which the job's worker is taken as lost
_POLL_SECONDS = 0.05
_STATES = {
    "PENDING": JobState.QUEUED,
    "RECEIVED": JobState.QUEUED,
    "STARTED": JobState.RUNNING,
    "RETRY": JobState.RUNNING,
}
_LOST = {
    "code": "INTERNAL_ERROR",
    "message": "the worker running this job stopped before it finished; submit it again",
    "retryable": True,
}


def job_key(job_id: str) -> str:
    return f"agentcore:job:{job_id}"


def heartbeat_key(job_id: str) -> str:
    return f"agentcore:job:{job_id}:alive"


class CeleryJobQueue:
    def __init__(self, app: Celery) -> None:
        self._app = app

    @names_outages(BROKER)
    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        return await asyncio.to_thread(self._submit, kind, payload)

    @names_outages(BROKER)
    async def status(self, job_id: str) -> JobStatus | None:
        return await asyncio.to_thread(self._read, job_id)

    @names_outages(BROKER)
    async def facts(self) -> QueueFacts | None:
        client = self._app.backend.client
        return await asyncio.to_thread(read_facts, client, self._app.conf.task_default_queue)

    async def wait(self, job_id: str, max_wait: float) -> JobStatus:
        deadline = time.monotonic() + max_wait
        while True:
            found = await self.status(job_id)
            current = found or JobStatus(job_id, JobState.QUEUED)
            if current.done or time.monotonic() >= deadline:
                return current
            await asyncio.sleep(_POLL_SECONDS)

    async def close(self) -> None:
        return None

    def _submit(self, kind: str, payload: dict[str, Any]) -> str:
        result = self._app.send_task(RUN_JOB, args=[kind, payload])
        job_id = str(result.id)
        record = json.dumps({"kind": kind, "submitted_at": time.time()})
        self._app.backend.client.set(job_key(job_id), record, ex=_seconds(self._app))
        return job_id

    def _read(self, job_id: str) -> JobStatus | None:
        result = AsyncResult(job_id, app=self._app)
        state = result.state
        if state == "SUCCESS":
            envelope = result.result
            if isinstance(envelope, dict):
                return status_of(job_id, envelope)
        if state in ("FAILURE", "REVOKED", "SUCCESS"):  # a task that died before its envelope
            error = {"code": "INTERNAL_ERROR", "message": "the job failed", "retryable": True}
            return JobStatus(job_id, JobState.FAILED, error=error)
        client = self._app.backend.client
        if state == "PENDING" and not client.exists(job_key(job_id)):
            return None  # never submitted here, or forgotten
        if state in ("STARTED", "RETRY") and not client.exists(heartbeat_key(job_id)):
            return JobStatus(job_id, JobState.FAILED, error=dict(_LOST))
        return JobStatus(job_id, _STATES.get(state, JobState.QUEUED))


def _seconds(app: Celery) -> int:
    """How long results (and so job records) are kept."""
    expires = app.conf.result_expires
    return int(expires.total_seconds() if isinstance(expires, timedelta) else expires)
