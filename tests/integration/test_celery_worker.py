"""A real Celery worker process on the machine's Redis and PostgreSQL: it leaves vector writes to
the process that owns the embedded vectors, compresses stages (extractive, and with a model
behind an OpenAI-compatible endpoint), and a worker killed mid-job leaves the job failed and
retryable."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agentcore.adapters.compressors import ExtractiveEngine
from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.jobs.celery_app import celery_app
from agentcore.adapters.jobs.celery_queue import HEARTBEAT_TTL, CeleryJobQueue, heartbeat_key
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.bootstrap import REPLAY_VECTORS, Container, build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.domain.stages import StageMemory
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.compass.drafts import CompressionItem
from agentcore.services.jobs import JobState, JobStatus
from agentcore.services.ports import VectorFilter
from tests.agent_trace import CRITICAL, PLANNING
from tests.fakes import FakeVectorStore
from tests.openai_chat_stub import API_KEY, FakeOpenAI, Reply, chat_server
from tests.worker_process import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
# The worker builds its embedder from its settings: the one every container built here uses
# (they share the module's Postgres database, which records the embedder of its store).
MINILM = {"EMBEDDER": "minilm"}


async def _add_while_vectors_are_down(settings: Settings) -> str:
    embedder = LocalMiniLMEmbedder()
    down = FakeVectorStore()
    down.failing = True
    api = await build_container(settings, embedder=embedder, vectors=down)
    try:
        new = NewMemory("The release train leaves on Thursday", ScopeIds(team_id="t1"))
        return (await api.memory.add(new)).id
    finally:
        await api.aclose()
        await embedder.close()


async def _search_embedded_vectors(data_dir: Path) -> list[str]:
    vectors = EdgeVectorStore(data_dir / "qdrant")
    await vectors.ensure_collection(384, "all-MiniLM-L6-v2")
    query = LocalMiniLMEmbedder()
    try:
        vector = (await query.embed(["when does the release train leave"]))[0]
        hits = await vectors.search(vector, VectorFilter(scope_keys=["team:t1"]), 5)
    finally:
        await query.close()
        await vectors.close()
    return [hit.id for hit in hits]


async def _replay_on_a_worker(settings: Settings) -> JobStatus:
    jobs = CeleryJobQueue(celery_app(settings))
    job_id = await jobs.submit(REPLAY_VECTORS, {})
    return await jobs.wait(job_id, max_wait=120)


async def _replay_as_the_owner(settings: Settings) -> int:
    """The serving process's part: it opens the embedded vector store and applies what is owed."""
    embedder = LocalMiniLMEmbedder()
    owner = await build_container(settings, embedder=embedder)
    try:
        return await owner.vector_sync.recover()
    finally:
        await owner.aclose()
        await embedder.close()


def test_a_worker_leaves_owed_vector_writes_to_the_owner_of_the_vectors(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    """Without QDRANT_URL the vectors are the embedded engine's under the data directory, which
    the serving process owns: a worker there opens no vector store, so the writes a job of its
    would make stay owed in the outbox, and the owner applies them."""
    settings = Settings(agentcore_data_dir=tmp_path, database_url=postgres_url, redis_url=redis_url)
    stored_id = asyncio.run(_add_while_vectors_are_down(settings))
    with celery_worker(tmp_path, postgres_url, redis_url, **MINILM):
        status = asyncio.run(_replay_on_a_worker(settings))
        assert status.result == {"replayed": 0}
        # The heartbeat outlives the task's return, so the job never reads as lost while
        # Celery is still writing its result.
        redis = celery_app(settings).backend.client
        assert 0 < redis.ttl(heartbeat_key(status.job_id)) <= HEARTBEAT_TTL
    assert not (tmp_path / "qdrant").exists()  # the worker made no vector store
    assert asyncio.run(_replay_as_the_owner(settings)) == 1
    assert asyncio.run(_search_embedded_vectors(tmp_path)) == [stored_id]


async def _complete_on_a_worker(settings: Settings) -> tuple[str, StageMemory | None]:
    embedder = LocalMiniLMEmbedder()
    api = await build_container(settings, embedder=embedder, vectors=FakeVectorStore())
    try:
        stage = await api.stages.start("celery-task", "execution")
        for i in range(30):
            text = f"Loaded batch {i} of the invoices; the totals matched the ledger."
            await api.memory.add(NewMemory(text, ScopeIds(task_id="celery-task")))
        done = await api.compass.complete_stage("celery-task", stage.id, wait=True)
        return stage.id, done.stage_memory
    finally:
        await api.aclose()
        await embedder.close()


def test_stage_compression_runs_on_a_real_worker(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(
        agentcore_data_dir=tmp_path / "api", database_url=postgres_url, redis_url=redis_url
    )
    with celery_worker(tmp_path / "worker", postgres_url, redis_url, **MINILM):
        stage_id, memory = asyncio.run(_complete_on_a_worker(settings))
    assert memory is not None, "the API waited for the worker's compression"
    assert memory.stage_id == stage_id
    assert len(memory.raw_memory_ids) == 30
    assert memory.engine == "extractive"
    assert memory.compression_ratio is not None
    assert 8 <= memory.compression_ratio <= 12  # a loop's log lines fill the budget too


# --- the LLM path on a worker, and a worker that dies mid-job --------------------------------


async def _planning_stage(api: Container, task_id: str) -> str:
    stage = await api.stages.start(task_id, "planning")
    for text in PLANNING:
        await api.memory.add(NewMemory(text, ScopeIds(task_id=task_id), critical=text in CRITICAL))
    return stage.id


async def _llm_stages_on_a_worker(settings: Settings, worker: subprocess.Popen[bytes]) -> None:
    embedder = LocalMiniLMEmbedder()
    api = await build_container(settings, embedder=embedder, vectors=FakeVectorStore())
    try:
        first = await _planning_stage(api, "llm-on-worker")
        done = await api.compass.complete_stage("llm-on-worker", first, wait=True)
        memory = done.stage_memory
        assert memory is not None, "the worker compressed the stage with the model"
        assert memory.engine == "llm:gpt-4.1-mini"
        assert memory.quality_metrics["repaired"] is True  # the model dropped a flagged memory
        assert set(CRITICAL) & set(PLANNING) <= set(memory.critical_facts)
        assert 8 <= (memory.compression_ratio or 0) <= 12

        second = await _planning_stage(api, "worker-dies")
        started = await api.compass.complete_stage("worker-dies", second, wait=False)
        assert started.job_id is not None
        running = await _until(api, started.job_id, ("running",))
        assert running.state is JobState.RUNNING  # the model is slow: the job is in its call
        worker.kill()  # SIGKILL: no clean-up, no result
        worker.wait(timeout=30)
        lost = await _until(api, started.job_id, ("failed",), seconds=HEARTBEAT_TTL + 20)
        assert lost.error is not None
        assert (lost.error["code"], lost.error["retryable"]) == ("INTERNAL_ERROR", True)
        assert "worker" in lost.error["message"]
        assert await api.stages.stage_memory(second) is None  # nothing half-written
    finally:
        await api.aclose()
        await embedder.close()


async def _until(
    api: Container, job_id: str, states: tuple[str, ...], seconds: float = 60
) -> JobStatus:
    deadline = time.monotonic() + seconds
    while True:
        status = await api.jobs.status(job_id)
        assert status is not None, "a submitted job is known"
        if status.state.value in states or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.1)


def test_llm_compression_on_a_worker_and_a_worker_that_dies(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    with chat_server(FakeOpenAI()) as fake:
        extractive = asyncio.run(_extractive_planning_summary())
        lossy = "\n".join(line for line in extractive.splitlines() if "signature" not in line)
        fake.default = json.dumps({"summary": lossy})
        fake.script += [Reply(), Reply(delay=120)]  # the second stage's call never returns
        settings = Settings(
            agentcore_data_dir=tmp_path / "api", database_url=postgres_url, redis_url=redis_url
        )
        llm = {
            "COMPRESSION_ENGINE": "llm",
            "OPENAI_API_KEY": API_KEY,
            "OPENAI_BASE_URL": fake.url,
            "FACT_EXTRACTOR": "offline",
        }
        with celery_worker(tmp_path / "worker", postgres_url, redis_url, **llm, **MINILM) as worker:
            asyncio.run(_llm_stages_on_a_worker(settings, worker))
            assert worker.returncode == -signal.SIGKILL


async def _extractive_planning_summary() -> str:
    tokens = BpeTokenCounter()
    items = [
        CompressionItem(f"p{i}", text, critical=text in CRITICAL) for i, text in enumerate(PLANNING)
    ]
    return (await ContextCompressor(ExtractiveEngine(tokens), tokens).compress_stage(items)).summary
