"""Shared integration fixtures: the real local embedder, and the service stack on each backend
combination: embedded (SQLite + qdrant-edge) and servers (PostgreSQL + Qdrant, qdrant-client's
local mode standing in for the server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.tables import Base
from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.vectors.qdrant_server import QdrantServerVectorStore
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from tests.conftest import migrate


@pytest.fixture(scope="session")
def embedder() -> Iterator[LocalMiniLMEmbedder]:
    model = LocalMiniLMEmbedder()
    yield model
    asyncio.run(model.close())


@pytest.fixture(params=["embedded", pytest.param("servers", marks=pytest.mark.postgres)])
async def stack(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalMiniLMEmbedder
) -> AsyncIterator[Container]:
    if request.param == "embedded":
        config = Settings(agentcore_data_dir=tmp_path)
        migrate(config.sqlalchemy_url)
        container = await build_container(config, embedder=embedder)
    else:
        url: str = request.getfixturevalue("postgres_url")
        config = Settings(agentcore_data_dir=tmp_path, database_url=url)
        vectors = QdrantServerVectorStore(AsyncQdrantClient(location=":memory:"))
        container = await build_container(config, embedder=embedder, vectors=vectors)
        await _empty(container)
    try:
        yield container
    finally:
        await container.aclose()
        await container.vectors.close()


async def _empty(container: Container) -> None:
    """The Postgres database is shared by a module: start each test from an empty store."""
    async with container.engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            if table.name != "store_settings":
                await conn.execute(delete(table))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated database of each backend (the Postgres one is shared: see ``engine``)."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    url = f"sqlite+aiosqlite:///{tmp_path / 'data' / 'agentcore.db'}"
    migrate(url)
    return url


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on ``database_url``, every table emptied first."""
    engine = create_engine(database_url)
    async with engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            await conn.execute(delete(table))  # cascades to the lexical rows on Postgres
    yield engine
    await engine.dispose()
