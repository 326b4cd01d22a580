from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agentcore.api.app import create_app
from agentcore.config import Settings
from tests.conftest import REDIS_SHIFT, empty_redis, migrate
from tests.server_process import Server


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The real app on the embedded default (SQLite, qdrant-edge, local ONNX embedder)."""
    data: Path = tmp_path_factory.mktemp("data")
    settings = Settings(agentcore_data_dir=data)
    migrate(settings.sqlalchemy_url)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


REDIS_DB = 11 - REDIS_SHIFT  # the Redis database of the production backend's module


@pytest.fixture(
    scope="module",
    params=[
        "embedded",
        pytest.param("production", marks=[pytest.mark.postgres, pytest.mark.redis]),
    ],
)
def backends(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    """The real app on each backend: embedded, and PostgreSQL + Redis (jobs need a worker there
    and have none here)."""
    data = tmp_path_factory.mktemp("data")
    if request.param == "embedded":
        settings = Settings(agentcore_data_dir=data, expiry_sweep_seconds=0.2)
        migrate(settings.sqlalchemy_url)
    else:
        database: str = request.getfixturevalue("postgres_url")
        settings = Settings(
            agentcore_data_dir=data, database_url=database, redis_url=empty_redis(REDIS_DB)
        )
    with TestClient(create_app(settings)) as client:
        yield client
    if request.param == "production":
        empty_redis(REDIS_DB)


SERVED_REDIS_DB = 9 - REDIS_SHIFT  # the Redis database of ``served``'s production backend
BOTH = [
    "embedded",
    pytest.param("production", marks=[pytest.mark.postgres, pytest.mark.redis]),
]


@contextmanager
def served(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """``agentcore serve`` in a process of its own on the backend ``request.param`` names
    ("embedded", or "production": a fresh PostgreSQL database and Redis), ``env`` added."""
    full = dict(env or {})
    if request.param == "production":
        full |= {
            "DATABASE_URL": request.getfixturevalue("postgres_url"),
            "REDIS_URL": empty_redis(SERVED_REDIS_DB),
            "REDIS_MEMORY_DB": str(SERVED_REDIS_DB),
        }
    server = Server(tmp_path_factory.mktemp("data"), env=full)
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()
        if request.param == "production":
            empty_redis(SERVED_REDIS_DB)
