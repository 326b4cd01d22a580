"""Moving a store to another embedder, embedded (SQLite + qdrant-edge, `agentcore reembed`) and
production (PostgreSQL + the Qdrant server adapter, on qdrant-client's local mode): the store
refuses the new embedder until every memory has been embedded again, in batches, with a
progress bar; then search finds memories by the new model's meaning."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.migrate import upgrade
from agentcore.adapters.db.tables import Base
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.adapters.embedders import LocalE5Embedder, LocalMiniLMEmbedder
from agentcore.adapters.vectors.qdrant_server import QdrantServerVectorStore
from agentcore.bootstrap import build_container, reembed_store
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.ports import VectorFilter
from agentcore.services.reembedding import reembed
from agentcore.services.retrieval import SearchQuery
from tests.fakes import FakeEmbedder

SCOPE = ScopeIds(user_id="reembed-user")
BOARD = "The quarterly board meeting moved to Thursday afternoon."


async def _fill_with_the_old_model(settings: Settings) -> None:
    old = await build_container(settings, embedder=FakeEmbedder(64, "fake-bow"))
    try:
        notes = [NewMemory(f"Note {i} about the garden hose", SCOPE) for i in range(149)]
        await old.memory.add_batch(notes[:100])
        await old.memory.add_batch([*notes[100:], NewMemory(BOARD, SCOPE)])
        assert await old.memory.indexed()
    finally:
        await old.aclose()


async def _search_with_the_new_model(settings: Settings) -> tuple[list[str], int]:
    new = await build_container(settings)
    try:
        found = await new.memory.search(SearchQuery("when do the directors meet", SCOPE, limit=3))
        count = await new.vectors.count(VectorFilter(scope_keys=["user:reembed-user"]))
        return [r.memory.content for r in found.results], count
    finally:
        await new.aclose()


def test_a_store_moves_to_another_embedder(tmp_path: Path) -> None:
    settings = Settings(agentcore_data_dir=tmp_path)
    upgrade(settings.sqlalchemy_url)
    asyncio.run(_fill_with_the_old_model(settings))
    with pytest.raises(ConfigurationError, match="agentcore reembed"):
        asyncio.run(_search_with_the_new_model(settings))

    seen: list[tuple[int, int]] = []
    done = asyncio.run(reembed_store(settings, lambda n, total: seen.append((n, total))))
    assert (done.previous, done.current, done.memories) == (
        "fake-bow/64",
        "multilingual-e5-small/384",
        150,
    )
    assert seen == [(100, 150), (150, 150)]
    contents, count = asyncio.run(_search_with_the_new_model(settings))
    assert contents[0] == BOARD  # by meaning: no word of the query is in it
    assert count == 150


def test_the_command_reports_its_progress(tmp_path: Path) -> None:
    settings = Settings(agentcore_data_dir=tmp_path)
    upgrade(settings.sqlalchemy_url)
    asyncio.run(_fill_with_the_old_model(settings))
    env = {**os.environ, "AGENTCORE_DATA_DIR": str(tmp_path)}
    ran = subprocess.run(
        [sys.executable, "-m", "agentcore.cli", "reembed"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "150/150" in ran.stderr
    assert ran.stdout.strip() == (
        "150 memories embedded with multilingual-e5-small/384 (was fake-bow/64)"
    )


async def _empty(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            await conn.execute(delete(table))


@pytest.mark.postgres
async def test_a_production_store_moves_from_minilm_to_e5(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(agentcore_data_dir=tmp_path, database_url=postgres_url)
    engine = create_engine(postgres_url)
    await _empty(engine)
    vectors = QdrantServerVectorStore(AsyncQdrantClient(location=":memory:"))
    minilm, e5 = LocalMiniLMEmbedder(), LocalE5Embedder()
    try:
        old = await build_container(settings, embedder=minilm, vectors=vectors)
        notes = [NewMemory(f"Note {i} about the garden hose", SCOPE) for i in range(59)]
        await old.memory.add_batch([*notes, NewMemory(BOARD, SCOPE)])
        assert await old.memory.indexed()
        await old.aclose()
        with pytest.raises(ConfigurationError, match="EMBEDDER=minilm"):
            await build_container(settings, embedder=e5, vectors=vectors)

        seen: list[tuple[int, int]] = []
        factory = SqlUnitOfWorkFactory(engine)
        done = await reembed(
            factory, vectors, e5, batch_size=25, progress=lambda *n: seen.append(n)
        )
        assert (done.previous, done.current, done.memories) == (
            "all-MiniLM-L6-v2/384",
            "multilingual-e5-small/384",
            60,
        )
        assert seen == [(25, 60), (50, 60), (60, 60)]
        new = await build_container(settings, embedder=e5, vectors=vectors)
        found = await new.memory.search(SearchQuery("when do the directors meet", SCOPE, limit=3))
        await new.aclose()
        assert found.results[0].memory.content == BOARD
    finally:
        await _empty(engine)
        await engine.dispose()
        await vectors.close()
        await minilm.close()
        await e5.close()
