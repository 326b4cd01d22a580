"""A queue nobody serves: the causes health names, and a caller waiting for a queued job whose
workers are gone is told at once instead of held."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from agentcore.api.metrics import HealthCollector
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError, ProviderError
from agentcore.services.health import HealthService
from agentcore.services.jobs import (
    JOB_WORKER,
    JobState,
    JobStatus,
    QueueFacts,
    has_live_worker,
    is_no_live_worker,
    queue_problems,
    wait_served,
)


class FakeWorkerQueue:
    """Jobs stay queued; ``workers_alive`` says what the heartbeats would."""

    def __init__(self, workers_alive: int, queued: int = 0, oldest: float | None = None) -> None:
        self.workers_alive = workers_alive
        self.queued = queued
        self.oldest = oldest
        self.done: dict[str, dict[str, Any]] = {}

    async def submit(self, kind: str, payload: dict[str, Any]) -> str:
        self.queued += 1
        return f"job-{self.queued}"

    async def facts(self) -> QueueFacts | None:
        return QueueFacts(self.workers_alive, self.queued, self.oldest)

    async def status(self, job_id: str) -> JobStatus | None:
        if job_id in self.done:
            return JobStatus(job_id, JobState.SUCCEEDED, result=self.done[job_id])
        return JobStatus(job_id, JobState.QUEUED)

    async def wait(self, job_id: str, max_wait: float) -> JobStatus:
        status = await self.status(job_id)
        assert status is not None
        return status

    async def close(self) -> None:
        return None


def test_no_worker_is_named_with_the_backlog() -> None:
    assert queue_problems(QueueFacts(0, 0, None)) == ["no live job worker (no worker heartbeat)"]
    (problem,) = queue_problems(QueueFacts(0, 3, 75.4))
    assert problem == "no live job worker (no worker heartbeat); 3 queued, the oldest for 75 s"


def test_a_queue_whose_workers_are_alive_is_stalled_only_past_the_threshold() -> None:
    assert queue_problems(QueueFacts(2, 5, 59.0), stall_seconds=60) == []
    (problem,) = queue_problems(QueueFacts(2, 5, 61.0), stall_seconds=60)
    assert problem.startswith("job queue stalled: 2 worker(s) alive, but a job has waited 61 s")


async def test_a_waiting_caller_is_told_when_no_worker_is_alive() -> None:
    queue = FakeWorkerQueue(workers_alive=0)
    job_id = await queue.submit("compress", {})
    started = time.monotonic()
    with pytest.raises(ProviderError) as raised:
        await wait_served(queue, job_id, max_wait=60, what="the stage compression")
    assert time.monotonic() - started < 5  # not the 60 s it would have waited
    assert raised.value.retryable
    assert raised.value.details == {"store": JOB_WORKER}
    assert is_no_live_worker(raised.value)
    assert "no live job worker to run the stage compression" in raised.value.message
    assert queue.queued == 1  # the job stays queued for the next worker


async def test_with_a_live_worker_the_caller_waits_for_the_result() -> None:
    queue = FakeWorkerQueue(workers_alive=1)
    job_id = await queue.submit("compress", {})
    queue.done[job_id] = {"summary": "done"}
    status = await wait_served(queue, job_id, max_wait=60, what="the stage compression")
    assert status.result == {"summary": "done"}
    assert await has_live_worker(queue)
    assert not await has_live_worker(FakeWorkerQueue(workers_alive=0))


async def test_health_reports_the_queue_and_its_cause_without_failing() -> None:
    queue = FakeWorkerQueue(workers_alive=0, queued=2, oldest=12.0)

    async def up() -> None:
        return None

    async def no_outbox() -> int:
        return 0

    health = HealthService({"redis": up}, "production", no_outbox, jobs=queue.facts)
    report = await health.check()
    assert report.ok  # every store answers: the process can serve
    assert report.jobs is not None
    assert report.jobs.facts == QueueFacts(0, 2, 12.0)
    assert report.degraded == [
        "no live job worker (no worker heartbeat); 2 queued, the oldest for 12 s"
    ]
    queue.workers_alive = 1
    assert (await health.check()).degraded == []


async def test_a_queue_that_cannot_be_read_is_named() -> None:
    async def unreadable() -> QueueFacts | None:
        raise ConnectionError("refused")

    async def no_outbox() -> int:
        return 0

    report = await HealthService({}, "production", no_outbox, jobs=unreadable).check()
    assert report.jobs is not None
    assert report.jobs.facts is None
    assert report.degraded == ["job queue unreadable (its Redis did not answer)"]


async def test_the_queue_is_scraped_as_gauges() -> None:
    queue = FakeWorkerQueue(workers_alive=0, queued=2, oldest=12.5)

    async def no_outbox() -> int:
        return 0

    health = HealthService({}, "production", no_outbox, jobs=queue.facts)
    registry = CollectorRegistry()
    registry.register(HealthCollector(health))
    await health.check()
    scraped = generate_latest(registry).decode()
    assert "agentcore_job_workers_alive 0.0" in scraped
    assert "agentcore_jobs_queued 2.0" in scraped
    assert "agentcore_jobs_oldest_queued_seconds 12.5" in scraped


def test_a_worker_needs_servers_for_what_it_touches(tmp_path: Path) -> None:
    base = {"agentcore_data_dir": tmp_path, "redis_url": "redis://r", "database_url": "pg://d"}
    Settings(**base).check_worker(beat=False)  # vectors, if embedded, stay the server's
    Settings(**base, qdrant_url="http://q").check_worker(beat=True)
    refusals = [
        ({**base, "redis_url": None}, False, "needs REDIS_URL"),
        ({**base, "database_url": None}, False, "needs DATABASE_URL"),
        (base, True, "--beat needs QDRANT_URL"),
    ]
    for fields, beat, said in refusals:
        with pytest.raises(ConfigurationError, match=said):
            Settings(**fields).check_worker(beat=beat)
