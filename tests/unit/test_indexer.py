"""Write-behind vectors (``agentcore.services.indexer``): a write is acknowledged once it is
committed, its vector follows, writes that arrive together are embedded together, and a
search never waits for them: it compares the vectors embedded and not yet written itself."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from agentcore.domain.errors import EmbeddingFailed
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel
from agentcore.domain.records import NewMemory
from agentcore.services.fresh import EMBED_NOW, EMBEDDING_WAIT
from agentcore.services.indexer import VectorIndexer
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import OutboxEntry, VectorPoint, Vectors
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery
from agentcore.services.vector_sync import Prepared, VectorSync
from tests.fakes import FakeEmbedder, FakeStore, FakeVectorStore
from tests.unit.conftest import FakeClock

ALICE, BOB = ScopeIds(user_id="alice"), ScopeIds(user_id="bob")


class GatedEmbedder(FakeEmbedder):
    """Embeds only while ``open`` is set; counts the texts of each call; fails on demand."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.open.set()
        self.batches: list[int] = []
        self.fail = False

    async def embed(self, texts: Sequence[str]) -> Vectors:
        await self.open.wait()
        if self.fail:
            raise EmbeddingFailed("the embedder is down")
        self.batches.append(len(texts))
        return await super().embed(texts)

    async def embed_query(self, text: str) -> Vectors:
        vector: Vectors = (await FakeEmbedder.embed(self, [text]))[0]  # no wait on the gate
        return vector


class GatedVectorStore(FakeVectorStore):
    """Writes points only while ``open`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.open.set()

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await self.open.wait()
        await super().upsert(points)


class Rig:
    def __init__(self) -> None:
        self.store, self.vectors = FakeStore(), GatedVectorStore()
        self.embedder = GatedEmbedder()
        clock = FakeClock()
        self.sync = VectorSync(self.store, self.vectors, self.embedder, clock)
        self.saturated = False
        self.retrieval = EnhancedRetrieval(
            self.store,
            self.vectors,
            self.embedder,
            clock,
            200,
            saturated=lambda: self.saturated,
        )
        self.memory = MemoryManager(
            self.store, self.embedder, self.sync, self.retrieval, clock, 500, 100
        )

    async def embedded(self, count: int) -> None:
        """Until ``count`` owed vectors are computed (and not written)."""
        for _ in range(5_000):
            if len(self.retrieval.fresh.cosines(QUERY, ["user:alice"])) >= count:
                return
            await asyncio.sleep(0.001)
        raise AssertionError(f"{count} vectors were not embedded in 5 s")


QUERY = np.ones(64, dtype=np.float32) / 8.0


async def test_a_write_is_acknowledged_before_its_vector_is_written() -> None:
    rig = Rig()
    rig.embedder.open.clear()  # the embedder cannot finish: the add must not wait for it
    stored = await rig.memory.add(NewMemory("The staging cluster runs in Frankfurt", ALICE))
    assert stored.id in rig.store.state.memories  # committed
    assert rig.vectors.points == {}  # its vector follows
    rig.embedder.open.set()
    assert await rig.memory.indexed()
    found = await rig.memory.search(SearchQuery("where does staging run", ALICE))
    assert found.results[0].memory.id == stored.id
    assert set(rig.vectors.points) == {stored.id}


async def test_a_search_never_waits_for_a_backlog() -> None:
    rig = Rig()
    rig.embedder.open.clear()  # nothing can be embedded: the search must not wait for it
    notes = [NewMemory(f"Alice keeps bees, hive {n}", ALICE) for n in range(EMBED_NOW + 1)]
    await rig.memory.add_batch(notes)
    found = await asyncio.wait_for(rig.memory.search(SearchQuery("who keeps bees", ALICE)), 1)
    assert found.results == []  # a backlog: no vector yet, and no lexical index in this rig
    rig.embedder.open.set()
    assert await rig.memory.indexed()


async def test_a_search_embeds_the_owed_texts_nobody_is_embedding() -> None:
    rig = Rig()
    rig.embedder.open.clear()  # the indexer's first batch cannot finish...
    first = await rig.memory.add(NewMemory("Bob waters the garden", BOB))
    await asyncio.sleep(0.01)
    bees = await rig.memory.add(NewMemory("Alice keeps bees", ALICE))  # ...this one waits
    before = rig.embedder.calls
    query = SearchQuery("who keeps bees", ALICE)
    found = await asyncio.wait_for(rig.memory.search(query), 1)
    assert [r.memory.id for r in found.results] == [bees.id]  # by its meaning, Alice's only
    assert rig.embedder.calls == before + 2  # the query, and Alice's one owed text
    again = await asyncio.wait_for(rig.memory.search(query), 1)
    assert [r.memory.id for r in again.results] == [bees.id]
    assert rig.embedder.calls == before + 2  # nothing: the owed vector and the query's kept
    rig.embedder.open.set()
    assert await rig.memory.indexed()
    assert rig.embedder.batches == [1]  # the indexer embedded Bob's only: Alice's was known
    assert set(rig.vectors.points) == {first.id, bees.id}


async def test_a_saturated_service_leaves_the_owed_texts_to_the_indexer() -> None:
    """With calls waiting for a place, a search embeds only its query: the owed text is left
    to the indexer (found by its words meanwhile; this rig has no lexical index)."""
    rig = Rig()
    rig.embedder.open.clear()
    await rig.memory.add(NewMemory("Bob waters the garden", BOB))
    await asyncio.sleep(0.01)  # the indexer's batch is under way and cannot finish
    await rig.memory.add(NewMemory("Alice keeps bees", ALICE))
    rig.saturated = True
    before = rig.embedder.calls
    started = time.monotonic()
    found = await asyncio.wait_for(rig.memory.search(SearchQuery("who keeps bees", ALICE)), 1)
    assert time.monotonic() - started < EMBEDDING_WAIT  # and waited for nothing under way
    assert found.results == []
    assert rig.embedder.calls == before + 1  # the query only
    rig.saturated = False
    found = await asyncio.wait_for(rig.memory.search(SearchQuery("who keeps bees", ALICE)), 1)
    assert [r.memory.content for r in found.results] == ["Alice keeps bees"]
    rig.embedder.open.set()
    assert await rig.memory.indexed()


async def test_a_search_waits_a_little_for_an_embedding_under_way() -> None:
    rig = Rig()
    rig.embedder.open.clear()
    await rig.memory.add(NewMemory("Alice keeps bees", ALICE))
    await asyncio.sleep(0.01)  # the indexer is embedding it
    query = SearchQuery("who keeps bees", ALICE)
    started = time.monotonic()
    found = await asyncio.wait_for(rig.memory.search(query), 1)
    assert found.results == []  # not found by meaning: still under way (no lexical index)
    assert EMBEDDING_WAIT <= time.monotonic() - started < EMBEDDING_WAIT + 0.5
    rig.embedder.open.set()
    assert await rig.memory.indexed()


async def test_a_search_takes_an_embedding_that_ends_while_it_waits() -> None:
    rig = Rig()
    rig.embedder.open.clear()
    bees = await rig.memory.add(NewMemory("Alice keeps bees", ALICE))
    await asyncio.sleep(0.01)  # the indexer is embedding it
    calls = rig.embedder.calls
    search = asyncio.ensure_future(rig.memory.search(SearchQuery("who keeps bees", ALICE)))
    await asyncio.sleep(0.01)
    rig.embedder.open.set()  # the embedding ends while the search waits for it
    found = await asyncio.wait_for(search, 1)
    assert [r.memory.id for r in found.results] == [bees.id]
    assert rig.embedder.batches == [1]  # embedded once, by the indexer...
    assert rig.embedder.calls == calls + 2  # ...and the query (FakeEmbedder.embed counts it)


async def test_searches_at_the_same_moment_embed_an_owed_text_once() -> None:
    rig = Rig()
    rig.embedder.open.clear()  # the indexer's first batch cannot finish: Alice's text waits
    await rig.memory.add(NewMemory("Bob waters the garden", BOB))
    await asyncio.sleep(0.01)
    bees = await rig.memory.add(NewMemory("Alice keeps bees", ALICE))
    now_texts: list[str] = []
    gate = asyncio.Event()

    async def embed_now(texts: Sequence[str]) -> Vectors:
        now_texts.extend(texts)
        await gate.wait()
        return await FakeEmbedder.embed(rig.embedder, texts)

    rig.embedder.embed_now = embed_now  # type: ignore[method-assign]
    query = SearchQuery("who keeps bees", ALICE)
    searches = [asyncio.ensure_future(rig.memory.search(query)) for _ in range(3)]
    await asyncio.sleep(0.01)
    gate.set()
    for found in await asyncio.wait_for(asyncio.gather(*searches), 1):
        assert [r.memory.id for r in found.results] == [bees.id]
    assert now_texts == ["Alice keeps bees"]


async def test_a_vector_is_searched_from_the_moment_it_is_embedded() -> None:
    rig = Rig()
    rig.vectors.open.clear()  # embedded, but the vector store cannot take it yet
    bees = await rig.memory.add(NewMemory("Alice keeps bees on the roof", ALICE))
    await rig.memory.add(NewMemory("Bob keeps bees too", BOB))
    await rig.embedded(1)
    assert rig.vectors.points == {}
    found = await rig.memory.search(SearchQuery("Alice keeps bees on the roof", ALICE))
    assert [r.memory.id for r in found.results] == [bees.id]  # Bob's is not Alice's to see
    assert found.results[0].similarity == pytest.approx(1.0)  # the exact comparison
    rig.vectors.open.set()
    assert await rig.memory.indexed()
    assert len(rig.retrieval.fresh) == 0  # written: the store answers for it now
    again = await rig.memory.search(SearchQuery("Alice keeps bees on the roof", ALICE))
    assert [r.memory.id for r in again.results] == [bees.id]


async def test_writes_that_arrive_together_are_embedded_together() -> None:
    rig = Rig()
    rig.embedder.open.clear()  # the first write's embedding is under way...
    first = asyncio.create_task(rig.memory.add(NewMemory("first note", ALICE)))
    await asyncio.sleep(0)
    await first
    await asyncio.sleep(0)  # ...the indexer is waiting on it
    await asyncio.gather(*(rig.memory.add(NewMemory(f"note {i}", ALICE)) for i in range(20)))
    rig.embedder.open.set()
    assert await rig.memory.indexed()
    assert rig.embedder.batches == [1, 20]
    assert len(rig.vectors.points) == 21


async def test_an_embedder_outage_keeps_the_write_and_owes_its_vector() -> None:
    rig = Rig()
    rig.embedder.fail = True
    stored = await rig.memory.add(NewMemory("written while the embedder was down", ALICE))
    assert await rig.memory.indexed()
    assert stored.id in rig.store.state.memories
    assert rig.vectors.points == {}
    assert [e.attempts for e in rig.store.state.outbox.values()] == [1]  # failed once
    rig.embedder.fail = False
    assert await rig.sync.replay(failed_only=True) == 1
    assert set(rig.vectors.points) == {stored.id}


async def test_a_memory_deleted_before_indexing_gets_no_vector() -> None:
    rig = Rig()
    rig.embedder.open.clear()
    stored = await rig.memory.add(NewMemory("short-lived note", ALICE))
    assert await rig.memory.delete(stored.id, ALICE)
    rig.embedder.open.set()
    assert await rig.memory.indexed()
    assert rig.vectors.points == {}


async def test_close_writes_what_is_queued() -> None:
    rig = Rig()
    await rig.memory.add_batch([NewMemory(f"note {i}", ALICE) for i in range(5)])
    await rig.memory.close()
    assert len(rig.vectors.points) == 5


class StepSync:
    """Stands in for VectorSync: records when each batch is prepared and written; the
    preparation of the first batch waits for ``release``."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.release_first = asyncio.Event()

    async def prepare(self, entries: Sequence[OutboxEntry], known: object = None) -> Prepared:
        name = entries[0].memory_id
        self.events.append(f"prepare {name}")
        if name == "a":
            await self.release_first.wait()
        return Prepared([], [(entry.id, _point(entry.memory_id)) for entry in entries], 0)

    async def write(self, prepared: Prepared) -> int:
        self.events.append(f"write {prepared.points[0][1].id}")
        return len(prepared.points)

    def reserve(self, entry_ids: Sequence[int]) -> None:
        return None

    def release(self, entry_ids: Sequence[int]) -> None:
        return None


def _point(memory_id: str) -> VectorPoint:
    return VectorPoint(memory_id, [1.0], "user:alice", {"user_id": "alice"}, "episodic")


async def test_the_next_batch_is_embedded_while_the_one_before_waits_and_writes_keep_order() -> (
    None
):
    sync = StepSync()
    indexer = VectorIndexer(sync, batch_size=1)  # type: ignore[arg-type]
    for number, name in enumerate(("a", "b", "c")):
        memory = Memory(id=name, content=name, layer=Layer.EPISODIC, scope_level=ScopeLevel.USER,
                        scope=ALICE, created_at=datetime(2025, 1, 1, tzinfo=UTC),
                        updated_at=datetime(2025, 1, 1, tzinfo=UTC))  # fmt: skip
        indexer.submit([(number, memory)])
    await asyncio.sleep(0.01)
    assert sync.events == ["prepare a", "prepare b"]  # b prepared while a still embeds
    sync.release_first.set()
    assert await indexer.drain(5)
    assert [e for e in sync.events if e.startswith("write")] == ["write a", "write b", "write c"]
