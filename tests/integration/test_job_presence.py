"""The job queue on the machine's Redis and PostgreSQL, with no worker process: heartbeats say
which workers are alive, Celery's list says what waits and since when, a caller waiting for a
job nobody runs is told at once (or has it run in process), and a worker's vector writes, when
the vectors belong to the serving process, wait in the outbox for that process."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
import redis

from agentcore.adapters.jobs.celery_app import celery_app
from agentcore.adapters.jobs.celery_queue import CeleryJobQueue
from agentcore.adapters.jobs.presence import WORKERS_KEY, WorkerHeartbeat, read_facts
from agentcore.adapters.vectors.owned_elsewhere import OwnedElsewhereVectorStore
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.errors import ProviderError
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.domain.stages import StageStatus
from agentcore.services.compass.orchestration import COMPRESS_STAGE
from agentcore.services.jobs import JOB_WORKER
from tests.fakes import FakeEmbedder, FakeVectorStore

pytestmark = [pytest.mark.redis]


def test_heartbeats_count_live_workers_and_a_silent_one_drops_out(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    assert read_facts(client, "celery").workers_alive == 0
    beat = WorkerHeartbeat(client, name="host:1")
    beat.start()
    try:
        assert read_facts(client, "celery").workers_alive == 1
        client.zadd(WORKERS_KEY, {"host:2": 1.0})  # a worker last heard of long ago
        assert read_facts(client, "celery").workers_alive == 1
        assert client.zscore(WORKERS_KEY, "host:2") is None  # pruned by the reader
    finally:
        beat.stop()
    assert read_facts(client, "celery").workers_alive == 0  # a clean stop leaves at once


async def test_queued_jobs_and_the_oldest_ones_age(redis_url: str, tmp_path: Path) -> None:
    settings = Settings(agentcore_data_dir=tmp_path, redis_url=redis_url)
    queue = CeleryJobQueue(celery_app(settings))
    empty = await queue.facts()
    assert empty is not None
    assert (empty.queued, empty.oldest_queued_seconds) == (0, None)
    await queue.submit("nothing.here", {})
    await asyncio.sleep(0.3)
    await queue.submit("nothing.here", {})
    facts = await queue.facts()
    assert facts is not None
    assert (facts.workers_alive, facts.queued) == (0, 2)
    assert facts.oldest_queued_seconds is not None
    assert 0.3 <= facts.oldest_queued_seconds < 30


async def _container(settings: Settings, **kwargs: object) -> Container:
    return await build_container(settings, embedder=FakeEmbedder(), **kwargs)  # type: ignore[arg-type]


async def _stage(api: Container, task_id: str) -> str:
    stage = await api.stages.start(task_id, "execution")
    for i in range(12):
        text = f"Loaded batch {i} of the invoices; the totals matched the ledger."
        await api.memory.add(NewMemory(text, ScopeIds(task_id=task_id)))
    return stage.id


@pytest.mark.postgres
async def test_a_waited_completion_without_a_worker(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(agentcore_data_dir=tmp_path, database_url=postgres_url, redis_url=redis_url)
    api = await _container(settings, vectors=FakeVectorStore())
    broker = redis.Redis.from_url(redis_url)
    try:
        # No worker at all: refused at once, the stage untouched, nothing queued.
        stage_id = await _stage(api, "no-worker")
        started = time.monotonic()
        with pytest.raises(ProviderError) as refused:
            await api.compass.complete_stage("no-worker", stage_id, wait=True)
        assert time.monotonic() - started < 5
        assert refused.value.details == {"store": JOB_WORKER}
        assert (await api.stages.get(stage_id)).status is StageStatus.ACTIVE
        assert broker.llen("celery") == 0

        # A worker that goes while the caller waits: told within seconds, the job kept queued.
        beat = WorkerHeartbeat(broker, name="going:1")
        beat.start()
        threading.Timer(1.0, beat.stop).start()
        started = time.monotonic()
        with pytest.raises(ProviderError) as gone:
            await api.compass.complete_stage("no-worker", stage_id, wait=True)
        assert gone.value.details == {"store": JOB_WORKER}
        assert time.monotonic() - started < 10
        assert (await api.stages.get(stage_id)).status is StageStatus.COMPLETED
        assert broker.llen("celery") == 1  # runs once a worker is up
        facts = await api.jobs.facts()
        assert facts is not None
        assert facts.queued == 1
        assert (await api.health.check()).degraded[0].startswith("no live job worker")

        # The task's progress does not wait for a job no worker runs: the stage joins later.
        started = time.monotonic()
        progress = await api.compass.task_progress("no-worker")
        assert time.monotonic() - started < 5
        assert progress.completed_stage_ids == ()
    finally:
        await api.aclose()
        broker.close()


@pytest.mark.postgres
async def test_inline_without_a_worker_compresses_in_process(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(
        agentcore_data_dir=tmp_path,
        database_url=postgres_url,
        redis_url=redis_url,
        jobs_inline_without_worker=True,
    )
    api = await _container(settings, vectors=FakeVectorStore())
    try:
        stage_id = await _stage(api, "inline")
        done = await api.compass.complete_stage("inline", stage_id, wait=True)
        assert done.stage_memory is not None
        assert done.stage_memory.summary
        assert len(done.stage_memory.raw_memory_ids) == 12
        assert redis.Redis.from_url(redis_url).llen("celery") == 0  # nothing for a worker
    finally:
        await api.aclose()
    # Asked again, without a worker and without inline jobs: the summary is there already.
    strict = settings.model_copy(update={"jobs_inline_without_worker": False})
    again = await _container(strict, vectors=FakeVectorStore())
    try:
        repeated = await again.compass.complete_stage("inline", stage_id, wait=True)
        assert repeated.stage_memory == done.stage_memory
    finally:
        await again.aclose()


@pytest.mark.postgres
async def test_a_workers_vector_writes_wait_for_the_serving_process(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(agentcore_data_dir=tmp_path, database_url=postgres_url, redis_url=redis_url)
    worker = await _container(settings, vectors=OwnedElsewhereVectorStore())
    try:
        await worker.startup.run()  # nothing to open: the collection is the owner's
        assert worker.startup.done
        memory = await worker.memory.add(NewMemory("Deferred vector", ScopeIds(team_id="w")))
        await worker.memory.close()  # the write path has tried, and left it owed
        assert COMPRESS_STAGE in worker.job_handlers
    finally:
        await worker.aclose()
    owner_vectors = FakeVectorStore()
    owner = await _container(settings, vectors=owner_vectors)
    try:
        assert await owner.vector_sync.replay(failed_only=True) >= 1
        assert memory.id in owner_vectors.points
    finally:
        await owner.aclose()
