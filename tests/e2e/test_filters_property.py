"""Random filters give the same memories in embedded mode (SQLite + qdrant-edge) and in
production mode (PostgreSQL + Redis, the Qdrant server adapter on qdrant-client's local mode)
over JSON-RPC: memory.list selects exactly what the domain's definition selects, in both, and
memory.search returns only memories that satisfy the filter, losing none to the candidates."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from qdrant_client import AsyncQdrantClient
from starlette.testclient import TestClient

from agentcore.adapters.vectors.qdrant_server import QdrantServerVectorStore
from agentcore.api.app import create_app
from agentcore.bootstrap import build_container
from agentcore.config import Settings
from agentcore.domain.filter_grammar import parse_filter
from tests.conftest import REDIS_SHIFT, empty_redis, migrate
from tests.e2e.test_rpc_api import result
from tests.filter_oracle import satisfies
from tests.filter_strategies import RECORDS, SESSION, filters, memory_of

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

USER = "e2e-filter-property"
SCOPE = {"user_id": USER, "session_id": SESSION}
REDIS_DB = 12 - REDIS_SHIFT
QUERY = "Which box on the shelf holds the item?"


class Modes:
    def __init__(self, embedded: TestClient, production: TestClient) -> None:
        self.clients = {"embedded": embedded, "production": production}
        records = [{**record, "user_id": USER} for record in RECORDS]
        for client in self.clients.values():
            assert len(result(client, "memory.import", records=records, **SCOPE)["imported"]) == 40
        listed = result(embedded, "memory.list", limit=100, **SCOPE)["memories"]
        numbers = {m["metadata"]["i"]: m["id"] for m in listed}
        self.memories = [(numbers[i], memory_of(record, USER)) for i, record in enumerate(RECORDS)]

    def expected(self, raw: dict[str, Any]) -> set[str]:
        tree = parse_filter(raw)
        return {memory_id for memory_id, memory in self.memories if satisfies(memory, tree)}


@pytest.fixture(scope="module")
def modes(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Modes]:
    embedded_dir: Path = tmp_path_factory.mktemp("embedded")
    embedded = Settings(agentcore_data_dir=embedded_dir)
    migrate(embedded.sqlalchemy_url)
    production = Settings(
        agentcore_data_dir=tmp_path_factory.mktemp("production"),
        database_url=postgres_url,
        redis_url=empty_redis(REDIS_DB),
    )
    vectors = QdrantServerVectorStore(AsyncQdrantClient(location=":memory:"))
    build = partial(build_container, vectors=vectors)
    with (
        TestClient(create_app(embedded)) as one,
        TestClient(create_app(production, build)) as other,
    ):
        yield Modes(one, other)
    empty_redis(REDIS_DB)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=filters())
def test_both_modes_select_the_same_memories(modes: Modes, raw: dict[str, Any]) -> None:
    expected = modes.expected(raw)
    for client in modes.clients.values():
        page = result(client, "memory.list", filter=raw, limit=100, **SCOPE)
        assert {m["id"] for m in page["memories"]} == expected
        assert page["total_count"] == len(expected)
        found = result(client, "memory.search", query=QUERY, filter=raw, limit=8, **SCOPE)
        ids = [hit["memory"]["id"] for hit in found["results"]]
        assert set(ids) <= expected
        assert len(ids) == min(8, len(expected))
