"""Jobs on Celery workers, with Redis as broker and result backend.

Publishing and reading results are blocking calls of the Celery client (~1.6 ms to publish,
DESIGN §6), so they run in a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from celery import Celery
from celery.result import AsyncResult

from agentcore.services.jobs import JobState, JobStatus, status_of

RUN_JOB = "agentcore.jobs.run"
_POLL_SECONDS = 0.05
_STATES = {
    "PENDING": JobState.PENDING,
    "RECEIVED": JobState.PENDING,
    "STARTED": JobState.RUNNING,
    "RETRY": JobState.RUNNING,
}


class CeleryJobQueue:
    def __init__(self, app: Celery) -> None:
        self._app = app

    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        result = await asyncio.to_thread(self._app.send_task, RUN_JOB, args=[kind, payload])
        return str(result.id)

    async def status(self, job_id: str) -> JobStatus | None:
        return await asyncio.to_thread(self._read, job_id)

    async def wait(self, job_id: str, max_wait: float) -> JobStatus:
        deadline = time.monotonic() + max_wait
        while True:
            found = await self.status(job_id)
            current = found or JobStatus(job_id, JobState.PENDING)
            if current.done or time.monotonic() >= deadline:
                return current
            await asyncio.sleep(_POLL_SECONDS)

    async def close(self) -> None:
        return None

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
        # Celery cannot tell an unknown id from a queued one: both are PENDING.
        return JobStatus(job_id, _STATES.get(state, JobState.PENDING))
