from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.memory_manager import ListRequest, MemoryManager
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery
from agentcore.services.vector_sync import VectorSync
from tests.fakes import FakeEmbedder, FakeStore, FakeVectorStore
from tests.isolation import owned, scope_ids, visible
from tests.unit.conftest import FakeClock


def _manager() -> MemoryManager:
    store, vectors, embedder, clock = FakeStore(), FakeVectorStore(), FakeEmbedder(), FakeClock()
    sync = VectorSync(store, vectors, embedder, clock)
    retrieval = EnhancedRetrieval(store, vectors, embedder, clock, 100)
    return MemoryManager(store, embedder, sync, retrieval, clock, 100, 100)


@settings(max_examples=150, deadline=None)
@given(memories=st.lists(owned(), min_size=1, max_size=12), caller=scope_ids())
def test_a_caller_sees_exactly_the_memories_of_scopes_it_names(
    memories: list[tuple[ScopeIds, str | None]], caller: ScopeIds
) -> None:
    async def run() -> None:
        manager = _manager()
        stored = await manager.add_batch(
            [NewMemory("shared words", ids, scope_level=level) for ids, level in memories]
        )
        expected = {m.id for m in stored if visible(m, caller)}
        page = await manager.list_page(ListRequest(scope=caller, limit=100))
        assert {m.id for m in page.memories} == expected
        found = await manager.search(SearchQuery("shared words", caller, limit=100))
        assert {r.memory.id for r in found.results} == expected

    asyncio.run(run())
