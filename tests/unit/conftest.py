from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agentcore.services.memory_manager import MemoryManager
from agentcore.services.retrieval import EnhancedRetrieval
from agentcore.services.vector_sync import VectorSync
from tests.fakes import FakeEmbedder, FakeStore, FakeVectorStore


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)  # distinct, increasing timestamps
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Services:
    memory: MemoryManager
    store: FakeStore
    vectors: FakeVectorStore
    embedder: FakeEmbedder
    sync: VectorSync
    clock: FakeClock


@pytest.fixture
def services() -> Services:
    store, vectors, embedder, clock = FakeStore(), FakeVectorStore(), FakeEmbedder(), FakeClock()
    sync = VectorSync(store, vectors, embedder, clock)
    retrieval = EnhancedRetrieval(store, vectors, embedder, clock, max_query_length=200)
    memory = MemoryManager(
        store, embedder, sync, retrieval, clock, max_content_length=500, max_batch_size=10
    )
    return Services(memory, store, vectors, embedder, sync, clock)
