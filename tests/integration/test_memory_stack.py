"""The services over real adapters, on each backend combination the service supports:
embedded (SQLite + qdrant-edge) and servers (PostgreSQL + Qdrant, qdrant-client local mode
standing in for the server). The embedder is the real local ONNX model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.memory_manager import ListRequest
from agentcore.services.ports import VectorFilter
from agentcore.services.retrieval import SearchQuery
from tests.conftest import migrate
from tests.fakes import FakeEmbedder
from tests.isolation import owned, scope_ids, visible


async def test_search_finds_the_added_memory_first(stack: Container) -> None:
    alice = ScopeIds(user_id="alice")
    texts = [
        "Caroline went to the LGBTQ support group yesterday",
        "Melanie painted a sunrise over the lake",
        "The quarterly report is due next Monday",
        "Caroline is researching adoption agencies",
    ]
    stored = await stack.memory.add_batch([NewMemory(t, alice) for t in texts])
    found = await stack.memory.search(SearchQuery("What did Melanie paint?", alice, limit=3))
    assert found.results[0].memory.id == stored[1].id
    assert 0 < found.results[0].similarity <= 1


async def test_vector_writes_survive_a_vector_store_outage(stack: Container) -> None:
    bob = ScopeIds(user_id="bob")
    original = stack.vectors.upsert

    async def failing(*_: object, **__: object) -> None:
        from agentcore.domain.errors import ProviderError

        raise ProviderError("down")

    stack.vectors.upsert = failing  # type: ignore[method-assign]
    stored = await stack.memory.add(NewMemory("Bob's flight leaves at 7am from gate B12", bob))
    assert await stack.vectors.count(VectorFilter(scope_keys=["user:bob"])) == 0
    # The lexical index, written with the memory, still finds it meanwhile.
    found_meanwhile = await stack.memory.search(SearchQuery("when does the flight leave", bob))
    assert [r.memory.id for r in found_meanwhile.results] == [stored.id]
    assert await stack.memory.indexed()  # the indexer's try failed: handed to the replay
    stack.vectors.upsert = original  # type: ignore[method-assign]
    assert await stack.vector_sync.replay(failed_only=True) == 1
    assert await stack.vector_sync.flush() == 1
    found = await stack.memory.search(SearchQuery("when does the flight leave", bob))
    assert found.results[0].memory.id == stored.id
    async with stack.uow_factory() as uow:
        assert await uow.outbox.count() == 0


async def test_a_store_refuses_an_embedder_of_another_dimension(
    tmp_path: Path, embedder: LocalMiniLMEmbedder
) -> None:
    config = Settings(agentcore_data_dir=tmp_path)
    migrate(config.sqlalchemy_url)
    first = await build_container(config, embedder=embedder)
    await first.aclose()
    await first.vectors.close()
    with pytest.raises(ConfigurationError, match="all-MiniLM-L6-v2/384"):
        await build_container(config, embedder=FakeEmbedder(dimension=64))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(memories=st.lists(owned(), min_size=1, max_size=8), caller=scope_ids())
def test_isolation_holds_on_the_real_stack(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: LocalMiniLMEmbedder,
    memories: list[tuple[ScopeIds, str | None]],
    caller: ScopeIds,
) -> None:
    async def run() -> None:
        config = Settings(agentcore_data_dir=tmp_path_factory.mktemp("iso"))
        migrate(config.sqlalchemy_url)
        container = await build_container(config, embedder=embedder)
        try:
            manager = container.memory
            stored = await manager.add_batch(
                [NewMemory("shared words", ids, scope_level=level) for ids, level in memories]
            )
            expected = {m.id for m in stored if visible(m, caller)}
            page = await manager.list_page(ListRequest(scope=caller, limit=100))
            assert {m.id for m in page.memories} == expected
            found = await manager.search(SearchQuery("shared words", caller, limit=100))
            assert {r.memory.id for r in found.results} == expected
        finally:
            await container.aclose()
            await container.vectors.close()

    asyncio.run(run())
