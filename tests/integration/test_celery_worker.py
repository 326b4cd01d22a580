"""A real Celery worker process on the machine's Redis and PostgreSQL replays vector writes
that the API process could not make."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.jobs.celery_queue import CeleryJobQueue
from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.bootstrap import REPLAY_VECTORS, build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.domain.stages import StageMemory
from agentcore.services.jobs import JobStatus
from agentcore.services.ports import VectorFilter
from agentcore.worker import celery_app
from tests.fakes import FakeVectorStore

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


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


def test_worker_replays_owed_vector_writes(
    postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(agentcore_data_dir=tmp_path, database_url=postgres_url, redis_url=redis_url)
    stored_id = asyncio.run(_add_while_vectors_are_down(settings))
    env = {
        **os.environ,
        "AGENTCORE_DATA_DIR": str(tmp_path),
        "DATABASE_URL": postgres_url,
        "REDIS_URL": redis_url,
    }
    env.pop("QDRANT_URL", None)
    worker = subprocess.Popen(
        [sys.executable, "-m", "agentcore.cli", "worker", "--loglevel", "WARNING"], env=env
    )
    try:
        status = asyncio.run(_replay_on_a_worker(settings))
        assert status.result == {"replayed": 1}
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
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
    env = {
        **os.environ,
        "AGENTCORE_DATA_DIR": str(tmp_path / "worker"),
        "DATABASE_URL": postgres_url,
        "REDIS_URL": redis_url,
    }
    env.pop("QDRANT_URL", None)
    worker = subprocess.Popen(
        [sys.executable, "-m", "agentcore.cli", "worker", "--loglevel", "WARNING"], env=env
    )
    try:
        stage_id, memory = asyncio.run(_complete_on_a_worker(settings))
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    assert memory is not None, "the API waited for the worker's compression"
    assert memory.stage_id == stage_id
    assert len(memory.raw_memory_ids) == 30
    assert memory.engine == "extractive"
    assert memory.compression_ratio is not None
    assert memory.compression_ratio > 5
