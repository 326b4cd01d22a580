from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from agentcore.domain.contradictions import _clauses, clauses
from agentcore.domain.errors import (
    ContentTooLong,
    InvalidLayer,
    InvalidParams,
    MemoryNotFound,
    MissingIdentifier,
    QueryTooLong,
)
from agentcore.domain.filters import metadata_equals
from agentcore.domain.models import EventKind, Layer, ScopeIds, StageType, new_id
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.scoring import content_cues
from agentcore.services.memory_manager import ListRequest
from agentcore.services.retrieval import SearchQuery, prime_ranking_soon
from tests.unit.conftest import Services

ALICE = ScopeIds(user_id="alice")
BOB = ScopeIds(user_id="bob")


async def test_add_then_search_finds_it_first(services: Services) -> None:
    m = services.memory
    await m.add(NewMemory("the deploy runs every friday", ALICE))
    target = await m.add(NewMemory("alice prefers green tea in the morning", ALICE))
    await m.add(NewMemory("the cat sleeps on the sofa", ALICE))
    outcome = await m.search(SearchQuery("what tea does alice prefer", ALICE))
    assert outcome.results[0].memory.id == target.id
    assert outcome.results[0].factors["similarity"] == outcome.results[0].similarity
    assert outcome.searched_scopes == ["user"]
    assert outcome.searched_layers == [Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL]


async def test_defaults_and_provenance(services: Services) -> None:
    stored = await services.memory.add(NewMemory("hello", ScopeIds(user_id="u", session_id="s")))
    assert stored.layer is Layer.EPISODIC
    assert stored.scope_key == "user:u"
    assert stored.created_in_session_id == "s"
    assert stored.embedding_model == "fake-bow"


@pytest.mark.parametrize(
    ("new", "error"),
    [
        (NewMemory("x", ScopeIds()), MissingIdentifier),
        (NewMemory("x", ALICE, layer="dreams"), InvalidLayer),
        (NewMemory("x", ALICE, layer="working"), InvalidLayer),
        (NewMemory("x" * 501, ALICE), ContentTooLong),
        (NewMemory("   ", ALICE), InvalidParams),
        (NewMemory("x", ALICE, scope_level="session"), MissingIdentifier),
        (NewMemory("x", ALICE, ttl_seconds=5, expires_at=None), None),
    ],
)
async def test_bad_input_changes_nothing(
    services: Services, new: NewMemory, error: type[Exception] | None
) -> None:
    if error is None:
        await services.memory.add(new)
        assert len(services.store.state.memories) == 1
        return
    with pytest.raises(error):
        await services.memory.add(new)
    assert services.store.commits == 0
    assert services.vectors.points == {}


async def test_a_batch_is_all_or_nothing(services: Services) -> None:
    items = [NewMemory("fine", ALICE), NewMemory("bad", ScopeIds())]
    with pytest.raises(MissingIdentifier):
        await services.memory.add_batch(items)
    assert services.store.state.memories == {}
    stored = await services.memory.add_batch([NewMemory("one", ALICE), NewMemory("two", BOB)])
    await services.memory.indexed()
    assert len(services.vectors.points) == 2
    assert {m.scope_key for m in stored} == {"user:alice", "user:bob"}
    with pytest.raises(InvalidParams):
        await services.memory.add_batch([NewMemory("x", ALICE)] * 11)


async def test_other_scopes_are_invisible(services: Services) -> None:
    m = services.memory
    secret = await m.add(NewMemory("alice's locker code is 4711", ALICE))
    assert await m.delete(secret.id, BOB) is False  # idempotent, and reveals nothing
    for call in (
        m.get(secret.id, BOB),
        m.history(secret.id, BOB),
        m.update(secret.id, BOB, MemoryChanges(content="hacked")),
    ):
        with pytest.raises(MemoryNotFound):
            await call
    found = await m.search(SearchQuery("locker code", BOB))
    assert found.results == []
    page = await m.list_page(ListRequest(scope=BOB))
    assert page.memories == []
    assert page.total_count == 0
    assert (await m.get(secret.id, ALICE)).content == "alice's locker code is 4711"


async def test_get_counts_an_access(services: Services) -> None:
    stored = await services.memory.add(NewMemory("note", ALICE))
    await services.memory.get(stored.id, ALICE)
    again = await services.memory.get(stored.id, ALICE)
    assert again.access_count == 2
    assert again.last_accessed_at is not None


async def test_update_reembeds_and_merges_metadata(services: Services) -> None:
    m = services.memory
    stored = await m.add(NewMemory("the build uses make", ALICE, metadata={"a": 1, "b": 2}))
    updated = await m.update(
        stored.id, ALICE, MemoryChanges(content="the build uses ninja", metadata={"b": 3})
    )
    assert updated.metadata == {"a": 1, "b": 3}
    hit = (await m.search(SearchQuery("ninja build", ALICE))).results[0]
    assert hit.memory.id == stored.id
    assert hit.memory.content == "the build uses ninja"
    events = await m.history(stored.id, ALICE)
    assert [e.kind for e in events] == [EventKind.ADD, EventKind.UPDATE]
    assert events[1].before == {"content": "the build uses make", "metadata": {"a": 1, "b": 2}}


async def test_an_update_that_changes_nothing_writes_nothing(services: Services) -> None:
    stored = await services.memory.add(NewMemory("same", ALICE, tags=("x",)))
    commits = services.store.commits
    await services.memory.update(stored.id, ALICE, MemoryChanges(content="same", tags=("x",)))
    assert services.store.commits == commits


async def test_delete_keeps_the_history_readable(services: Services) -> None:
    stored = await services.memory.add(NewMemory("temporary", ALICE))
    assert await services.memory.delete(stored.id, ALICE)
    assert await services.memory.delete(stored.id, ALICE) is False  # idempotent
    with pytest.raises(MemoryNotFound):
        await services.memory.get(stored.id, ALICE)
    assert services.vectors.points == {}
    kinds = [e.kind for e in await services.memory.history(stored.id, ALICE)]
    assert kinds == [EventKind.ADD, EventKind.DELETE]


async def test_clear_touches_one_layer_of_one_scope(services: Services) -> None:
    m = services.memory
    both = ScopeIds(user_id="alice", session_id="s1")
    await m.add(NewMemory("episode", ALICE))
    fact = await m.add(NewMemory("fact", ALICE, layer="semantic"))
    in_session = await m.add(NewMemory("session episode", both, scope_level="session"))
    other = await m.add(NewMemory("bob episode", BOB))
    await m.indexed()
    assert await m.clear("episodic", ALICE, None) == 1
    left = set(services.store.state.memories)
    assert left == {fact.id, in_session.id, other.id}
    assert set(services.vectors.points) == left


async def test_expired_memories_are_not_returned(services: Services) -> None:
    stored = await services.memory.add(NewMemory("short lived", ALICE, ttl_seconds=60))
    assert (await services.memory.search(SearchQuery("short lived", ALICE))).results
    services.clock.advance(61)
    assert (await services.memory.search(SearchQuery("short lived", ALICE))).results == []
    with pytest.raises(MemoryNotFound):
        await services.memory.get(stored.id, ALICE)


async def test_list_pages_with_a_cursor(services: Services) -> None:
    m = services.memory
    ids = [(await m.add(NewMemory(f"note {i}", ALICE))).id for i in range(5)]
    seen: list[str] = []
    after = None
    while True:
        page = await m.list_page(ListRequest(scope=ALICE, limit=2, after=after))
        assert page.total_count == 5
        seen += [x.id for x in page.memories]
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == list(reversed(ids))


async def test_search_filters(services: Services) -> None:
    m = services.memory
    await m.add(NewMemory("deploy notes", ALICE, tags=("ops",), metadata={"env": "prod"}))
    await m.add(NewMemory("deploy notes", ALICE, tags=("dev",), metadata={"env": "test"}))
    by_tag = await m.search(SearchQuery("deploy", ALICE, tags=["ops"]))
    assert [r.memory.tags for r in by_tag.results] == [["ops"]]
    by_meta = await m.search(SearchQuery("deploy", ALICE, where=metadata_equals({"env": "test"})))
    assert [r.memory.metadata["env"] for r in by_meta.results] == ["test"]
    none = await m.search(SearchQuery("deploy", ALICE, layers=["semantic"]))
    assert none.results == []
    with pytest.raises(QueryTooLong):
        await m.search(SearchQuery("q" * 201, ALICE))


async def test_a_failed_vector_write_is_replayed_not_lost(services: Services) -> None:
    services.vectors.failing = True
    stored = await services.memory.add(NewMemory("written while the vector store was down", ALICE))
    await services.memory.indexed()
    assert stored.id in services.store.state.memories
    assert services.vectors.points == {}
    assert await services.sync.replay() == 0  # still down: stays queued
    assert len(services.store.state.outbox) == 1
    services.vectors.failing = False
    assert await services.sync.replay() == 1
    assert await services.sync.flush() == 1
    assert services.store.state.outbox == {}
    assert stored.id in services.vectors.durable
    hits = await services.memory.search(SearchQuery("vector store down", ALICE))
    assert hits.results[0].memory.id == stored.id


async def test_outbox_rows_stay_until_the_vector_store_flushed(services: Services) -> None:
    await services.memory.add(NewMemory("durable", ALICE))
    await services.memory.indexed()
    assert len(services.store.state.outbox) == 1  # applied, not yet durable
    assert services.vectors.durable == {}
    await services.sync.flush()
    assert services.store.state.outbox == {}
    assert len(services.vectors.durable) == 1


async def test_expires_at_and_ttl_are_exclusive(services: Services) -> None:
    later = services.clock.now + timedelta(hours=1)
    with pytest.raises(InvalidParams):
        await services.memory.add(NewMemory("x", ALICE, expires_at=later, ttl_seconds=5))


async def test_a_written_memory_is_read_for_ranking_once_the_write_returns(
    services: Services,
) -> None:
    content = "Jo moved to Lisbon in 2021 and never looked back; the approach worked"
    parsed = _clauses.cache_info().misses
    await services.memory.add(NewMemory(content, ALICE))
    assert _clauses.cache_info().misses == parsed  # not on the write's own path
    await asyncio.sleep(0)  # the event loop's next turn
    assert _clauses.cache_info().misses == parsed + 1
    hits = _clauses.cache_info().hits
    clauses(content)  # what ranking a search that returns it calls
    assert _clauses.cache_info().hits == hits + 1
    assert content_cues(content) == (StageType.PLANNING,)  # "approach" is a planning cue


async def test_a_batch_is_read_for_ranking_a_few_texts_per_turn_of_the_loop() -> None:
    texts = [f"Deploy {new_id()} runs at {i} pm on Friday, not Monday" for i in range(20)]
    parsed = _clauses.cache_info().misses
    prime_ranking_soon(texts)
    await asyncio.sleep(0)
    assert _clauses.cache_info().misses == parsed + 8
    for _ in range(3):
        await asyncio.sleep(0)
    assert _clauses.cache_info().misses == parsed + 20
