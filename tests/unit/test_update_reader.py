"""Supersession read from meaning before a write answers (``UpdateReader``, called by
``MemoryManager.store`` once the new memories are committed): what it records, what it leaves
alone, that it holds while the indexer is behind, and that a reading that failed is done again
behind the reply. The fake embedder's bag of words stands in for meaning."""

from __future__ import annotations

from typing import Any

import asyncio
from collections.abc import Sequence

import pytest

from agentcore.domain.errors import EmbeddingFailed
from agentcore.domain.models import EventKind, Layer, ScopeIds
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.updates import statement_of
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import VectorPoint, Vectors
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery
from agentcore.services.supersession import SUPERSESSION, UpdateReader
from agentcore.services.vector_sync import VectorSync
from tests.fakes import FakeEmbedder, FakeStore, FakeVectorStore
from tests.unit.conftest import FakeClock

ALICE = ScopeIds(user_id="alice")
OLD, NEW = "I write code in Sublime Text.", "I dropped Sublime Text, I write code in Zed these days."


class CountingEmbedder(FakeEmbedder):
    """Counts the texts read as queries; fails them on demand."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []
        self.fail_queries = False

    async def embed_query(self, text: str) -> Vectors:
        if self.fail_queries:
            raise EmbeddingFailed("the query path is down")
        self.queries.append(text)
        return await super().embed_query(text)


class GatedVectorStore(FakeVectorStore):
    """Writes wait while ``open`` is clear: an indexer that is behind."""

    def __init__(self) -> None:
        super().__init__()
        self.open = asyncio.Event()
        self.open.set()

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await self.open.wait()
        await super().upsert(points)


class Rig:
    def __init__(self) -> None:
        self.store, self.clock = FakeStore(), FakeClock()
        vectors, self.embedder = GatedVectorStore(), CountingEmbedder()
        self.vectors = vectors
        retrieval = EnhancedRetrieval(self.store, vectors, self.embedder, self.clock, 200)
        sync = VectorSync(self.store, vectors, self.embedder, self.clock)
        self.reader = UpdateReader(
            self.store, vectors, self.embedder, self.clock, fresh=retrieval.fresh
        )
        self.memory = MemoryManager(
            self.store, self.embedder, sync, retrieval, self.clock, 500, 10, updates=self.reader
        )

    async def add(self, text: str, scope: ScopeIds = ALICE, **kw: Any) -> str:
        self.clock.advance(60)
        return (await self.memory.add(NewMemory(text, scope, **kw))).id

    async def settled(self) -> None:
        assert await self.memory.indexed()


@pytest.fixture
def rig() -> Rig:
    return Rig()


async def test_a_new_value_supersedes_the_old_fact_before_the_write_answers(rig: Rig) -> None:
    assert statement_of(OLD) is None  # no rule reads either
    assert statement_of(NEW) is None
    rig.vectors.open.clear()  # no vector is written: both are still owed by the indexer
    old = await rig.add(OLD)
    new = await rig.add(NEW)
    assert rig.vectors.points == {}
    stale, current = await rig.memory.read([old, new], ALICE)
    assert (stale.superseded_by, stale.valid_to) == (new, current.created_at)
    assert (current.superseded_by, current.valid_to) == (None, None)
    events = await rig.memory.history(old, ALICE)
    assert [(e.kind, e.actor) for e in events] == [
        (EventKind.ADD, "api"),
        (EventKind.UPDATE, SUPERSESSION),
    ]
    assert events[1].after == {"valid_to": current.created_at.isoformat(), "superseded_by": new}


async def test_the_slot_of_the_old_fact_passes_to_the_new_one(rig: Rig) -> None:
    old_text = "I live in Graz."
    new_text = "We sold the house in Graz, these days I live in a flat in Linz."
    assert statement_of(new_text) is None
    old = await rig.add(old_text)
    new = await rig.add(new_text)
    await rig.settled()
    stale, current = await rig.memory.read([old, new], ALICE)
    assert stale.superseded_by == new
    assert current.fact_slot == "user|home"
    assert current.fact_value == f"~{new}"  # a value of its own
    events = await rig.memory.history(new, ALICE)
    assert events[-1].actor == SUPERSESSION
    assert events[-1].after == {"fact_slot": "user|home", "fact_value": f"~{new}"}


@pytest.mark.parametrize(
    ("first", "second", "kw"),
    [
        (OLD, "I also write code in Zed these days.", {}),  # adds to it
        (OLD, "My brother writes code in Zed these days.", {}),  # someone else's
        (OLD, "Do you write code in Zed these days?", {}),  # a question
        (OLD, NEW, {"layer": "procedural"}),  # not a fact layer
        ("I write code daily.", "I eat pasta on Fridays now.", {}),  # not close
    ],
)
async def test_what_is_no_update_supersedes_nothing(
    rig: Rig, first: str, second: str, kw: dict[str, str]
) -> None:
    old = await rig.add(first)
    await rig.add(second, ALICE, **kw)
    await rig.settled()
    assert (await rig.memory.read([old], ALICE))[0].superseded_by is None


async def test_another_speakers_fact_is_not_replaced(rig: Rig) -> None:
    old = await rig.add(OLD, metadata={"speaker": "Ana"})
    await rig.add(NEW, metadata={"speaker": "Ben"})
    await rig.settled()
    assert (await rig.memory.read([old], ALICE))[0].superseded_by is None


async def test_another_scopes_fact_is_not_replaced(rig: Rig) -> None:
    old = await rig.add(OLD, ScopeIds(user_id="bob"))
    await rig.add(NEW)
    await rig.settled()
    assert (await rig.memory.read([old], ScopeIds(user_id="bob")))[0].superseded_by is None


async def test_what_cannot_update_costs_no_embedding(rig: Rig) -> None:
    await rig.add(OLD)
    await rig.add(NEW)
    await rig.settled()
    asked = len(rig.embedder.queries)
    for text in (
        "Can you recommend a plumber?",
        "Wow, thanks so much!",
        "x " * 40,
        "I enjoy long walks on the beach.",  # nothing could confirm a replacement
    ):
        await rig.add(text)
    await rig.settled()
    assert len(rig.embedder.queries) == asked


async def test_the_model_background_is_measured_once(rig: Rig) -> None:
    first = await rig.reader.calibration()
    assert await rig.reader.calibration() is first
    assert -1.0 < first.background < 0.5  # bags of words of unrelated sentences barely meet


async def test_a_failed_reading_leaves_the_write_indexed(rig: Rig) -> None:
    rig.embedder.fail_queries = True
    old = await rig.add(OLD)
    await rig.add(NEW)
    await rig.settled()
    assert (await rig.memory.read([old], ALICE))[0].superseded_by is None
    assert rig.memory.indexing_backlog == 0


async def test_a_failed_reading_is_done_again_once_the_vector_is_written(rig: Rig) -> None:
    old = await rig.add(OLD)
    await rig.settled()
    rig.vectors.open.clear()
    rig.embedder.fail_queries = True
    new = await rig.add(NEW)  # acknowledged: the reading's failure is not the write's
    assert (await rig.memory.read([old], ALICE))[0].superseded_by is None
    rig.embedder.fail_queries = False
    rig.vectors.open.set()
    await rig.settled()
    assert (await rig.memory.read([old], ALICE))[0].superseded_by == new


async def test_a_promotion_is_not_read(rig: Rig) -> None:
    """A derived copy restates what was: it updates nothing."""
    old = await rig.add(OLD)
    await rig.settled()
    asked = len(rig.embedder.queries)
    (memory,) = await rig.memory.read([old], ALICE)
    await rig.memory.derive(
        NewMemory(NEW, ALICE, layer=Layer.SEMANTIC.value), EventKind.PROMOTE, [memory]
    )
    await rig.settled()
    assert len(rig.embedder.queries) == asked
    assert (await rig.memory.read([old], ALICE))[0].superseded_by is None


async def test_a_content_update_is_read_like_a_new_statement(rig: Rig) -> None:
    old = await rig.add(OLD)
    other = await rig.add("I keep my notes in a paper diary.")
    await rig.memory.update(other, ALICE, MemoryChanges(content=NEW))
    assert (await rig.memory.read([old], ALICE))[0].superseded_by == other


async def test_a_content_update_fills_the_slot_its_words_fill_now(rig: Rig) -> None:
    home = await rig.add("I live in Graz.")
    assert (await rig.memory.read([home], ALICE))[0].fact_slot == "user|home"
    await rig.memory.update(home, ALICE, MemoryChanges(content="I enjoy long walks."))
    (changed,) = await rig.memory.read([home], ALICE)
    assert (changed.fact_slot, changed.fact_value) == (None, None)
    moved = await rig.add("I live in Linz.")  # supersedes nothing: no memory says Graz now
    assert (await rig.memory.read([home], ALICE))[0].superseded_by is None
    assert (await rig.memory.read([moved], ALICE))[0].fact_slot == "user|home"


async def test_what_only_meaning_relates_ranks_first_for_the_present_and_is_not_recorded(
    rig: Rig,
) -> None:
    old = await rig.add("Ravi coaches the juniors at the club.")
    new = await rig.add("Ravi is with the seniors these days.")
    await rig.settled()
    assert (await rig.memory.read([old], ALICE))[0].superseded_by is None  # no confirmation
    for question in ("Who does Ravi coach at the club now?", "Who does Ravi coach at the club?"):
        found = await rig.memory.search(SearchQuery(question, ALICE))
        assert [hit.memory.id for hit in found.results][:2] == [new, old], question
    past = await rig.memory.search(SearchQuery("Who did Ravi coach at the club?", ALICE))
    assert [hit.memory.id for hit in past.results][:2] == [old, new]
