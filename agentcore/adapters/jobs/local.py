"""Jobs run in this process on its event loop (the embedded mode; nothing survives a restart,
which is fine because a job's outcome is also stored where it belongs, e.g. a stage memory)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

from agentcore.services.jobs import (
    JobHandler,
    JobState,
    JobStatus,
    QueueFacts,
    run_job,
    status_of,
)


class InProcessJobQueue:
    def __init__(self, handlers: Mapping[str, JobHandler], keep: int = 1000) -> None:
        self._handlers = handlers
        self._keep = keep
        self._tasks: dict[str, asyncio.Task[dict[str, Any]]] = {}

    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        job_id = str(uuid.uuid4())
        self._tasks[job_id] = asyncio.create_task(
            run_job(self._handlers, kind, payload), name=f"job-{kind}"
        )
        self._forget_old()
        return job_id

    async def facts(self) -> QueueFacts | None:
        return None  # this process runs its jobs: no worker to wait for

    async def status(self, job_id: str) -> JobStatus | None:
        task = self._tasks.get(job_id)
        if task is None:
            return None
        if not task.done():
            return JobStatus(job_id, JobState.RUNNING)
        return status_of(job_id, task.result())

    async def wait(self, job_id: str, max_wait: float) -> JobStatus:
        task = self._tasks.get(job_id)
        if task is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), max_wait)
        found = await self.status(job_id)
        return found or JobStatus(job_id, JobState.QUEUED)

    async def close(self) -> None:
        running = [task for task in self._tasks.values() if not task.done()]
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    def _forget_old(self) -> None:
        finished = [job_id for job_id, task in self._tasks.items() if task.done()]
        for job_id in finished[: max(0, len(self._tasks) - self._keep)]:
            del self._tasks[job_id]
