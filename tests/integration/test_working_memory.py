"""WorkingMemoryService on each real store (Redis and in-process) with the real tokenizer; and
the issue's "done when": 200 real messages through real Redis, every evicted one findable
afterwards as an episodic memory of the session in a real embedded stack."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.adapters.working.local_store import LocalWorkingMemoryStore
from agentcore.adapters.working.redis_store import RedisWorkingMemoryStore
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds
from agentcore.services.episodic import EpisodeListRequest
from agentcore.services.memory_manager import ListRequest
from agentcore.services.ports import EpisodeItem, EpisodeSink
from agentcore.services.retrieval import SearchQuery
from agentcore.services.working_memory import (
    WorkingMemoryService,
    WorkingMemoryStore,
)
from tests.conftest import migrate

TTL = 3600
LOCOMO = Path("/work/shared/data/locomo/locomo10.json")


class ManualClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=10)
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class RecordingSink:
    def __init__(self) -> None:
        self.calls: list[tuple[ScopeIds, list[EpisodeItem], str]] = []

    async def record(self, scope: ScopeIds, items: Sequence[EpisodeItem], reason: str) -> list[str]:
        self.calls.append((scope, list(items), reason))
        return [item.id for item in items]

    def ids(self, reason: str | None = None) -> list[str]:
        return [i.id for _, items, r in self.calls if reason in (None, r) for i in items]


@pytest.fixture(scope="module")
def counter() -> BpeTokenCounter:
    return BpeTokenCounter()


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalMiniLMEmbedder]:
    model = LocalMiniLMEmbedder()
    yield model
    asyncio.run(model.close())


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture(params=[pytest.param("redis", marks=pytest.mark.redis), "local"])
def store(request: pytest.FixtureRequest) -> WorkingMemoryStore:
    if request.param == "local":
        return LocalWorkingMemoryStore()
    client: aioredis.Redis = request.getfixturevalue("redis_client")
    return RedisWorkingMemoryStore(client, ttl_seconds=TTL)


@dataclass
class Harness:
    service: WorkingMemoryService
    store: WorkingMemoryStore
    sink: RecordingSink
    clock: ManualClock


def harness(
    store: WorkingMemoryStore,
    counter: BpeTokenCounter,
    max_tokens: int,
    sink: EpisodeSink | None = None,
) -> Harness:
    clock, recording = ManualClock(), RecordingSink()
    service = WorkingMemoryService(
        store,
        counter,
        recording if sink is None else sink,
        clock,
        max_tokens=max_tokens,
        ttl_seconds=TTL,
        max_content_length=10_000,
    )
    return Harness(service, store, recording, clock)


SESSION = ScopeIds(session_id="s-42", user_id="melanie")


async def test_the_bound_evicts_oldest_first_into_the_sink(
    store: WorkingMemoryStore, counter: BpeTokenCounter
) -> None:
    h = harness(store, counter, max_tokens=100)
    texts = [f"Message {i}: the quick brown fox jumps over the lazy dog." for i in range(12)]
    ids = [(await h.service.append(SESSION, t, role="user")).item.id for t in texts]
    view = await h.service.get("s-42")
    per_item = counter.count(texts[0])
    assert view.token_count == per_item * len(view.items) <= 100 < per_item * (len(view.items) + 1)
    assert [i.id for i in view.items] == ids[-len(view.items) :]
    assert h.sink.ids("evicted") == ids[: -len(view.items)]
    assert await store.outbox("s-42") == []
    assert view.items[0].scope == SESSION
    assert view.items[0].role == "user"


async def test_concurrent_appends_neither_exceed_the_bound_nor_lose_items(
    store: WorkingMemoryStore, counter: BpeTokenCounter
) -> None:
    h = harness(store, counter, max_tokens=120)
    texts = [f"Concurrent note number {i} about the release plan." for i in range(50)]
    results = await asyncio.gather(*(h.service.append(SESSION, t) for t in texts))
    assert all(r.token_count <= 120 for r in results)
    await h.service.sweep_idle()  # the backstop for any hand-off still owed
    live = [i.id for i in (await h.service.get("s-42")).items]
    sunk = set(h.sink.ids("evicted"))
    assert (await h.service.get("s-42")).token_count <= 120
    assert set(live).isdisjoint(sunk)
    assert set(live) | sunk == {r.item.id for r in results}
    assert await store.outbox("s-42") == []


async def test_an_idle_session_is_swept_even_by_a_restarted_service(
    store: WorkingMemoryStore, counter: BpeTokenCounter
) -> None:
    h = harness(store, counter, max_tokens=4000)
    stale = await h.service.append(SESSION, "Remember: the demo moved to Thursday.", kind="task")
    h.clock.advance(TTL / 2)
    fresh = await h.service.append(ScopeIds(session_id="s-43"), "Still talking here.")
    # A new service over the same store, as after a restart, sweeps when the TTL has passed.
    later = harness(store, counter, max_tokens=4000)
    assert (
        await later.service.sweep_idle(h.clock.now + timedelta(seconds=TTL / 2 + 1))
    ).items_handed_off == 1
    assert later.sink.calls[0][2] == "idle"
    assert later.sink.calls[0][1][0].id == stale.item.id
    assert later.sink.calls[0][1][0].kind == "task"
    assert (await store.snapshot("s-42")).items == []
    assert [i.id for i in (await store.snapshot("s-43")).items] == [fresh.item.id]
    assert await store.idle_sessions(h.clock.now + timedelta(seconds=TTL), 10) == ["s-43"]


async def test_flush_and_clear(store: WorkingMemoryStore, counter: BpeTokenCounter) -> None:
    h = harness(store, counter, max_tokens=4000)
    text = 'He said "ship it" — then left 🚀\nat 5 {"json": true}'
    kept = await h.service.append(SESSION, text, stage_id="stage-1")
    out = await h.service.flush("s-42")
    assert (out.flushed, out.memory_ids) == (1, [kept.item.id])
    item = h.sink.calls[0][1][0]
    assert (item.content, item.stage_id, item.at) == (text, "stage-1", kept.item.at)
    await h.service.append(SESSION, "scratch that")
    assert await h.service.clear("s-42") == 1
    assert (await h.service.get("s-42")).items == []
    assert len(h.sink.calls) == 1
    assert await store.idle_sessions(h.clock.now + timedelta(days=2), 10) == []


@pytest.mark.redis
async def test_redis_keeps_keys_past_the_ttl_until_swept(
    redis_client: aioredis.Redis, counter: BpeTokenCounter
) -> None:
    store = RedisWorkingMemoryStore(redis_client, ttl_seconds=TTL)
    h = harness(store, counter, max_tokens=4000)
    await h.service.append(SESSION, "a note")
    ttl = await redis_client.ttl("agentcore:wm:s-42:items")
    assert TTL + 24 * 3600 - 5 <= ttl <= TTL + 24 * 3600 == store.expire_seconds
    # Keys Redis dropped (a service down longer than TTL + margin) leave no stale index entry.
    await redis_client.delete("agentcore:wm:s-42:items", "agentcore:wm:s-42:meta")
    await h.service.sweep_idle(h.clock.now + timedelta(seconds=TTL + 1))
    assert await redis_client.zscore("agentcore:wm:sessions", "s-42") is None


# Done when: 200 appended messages stay within 4000 tokens, and every evicted message is
# findable afterwards as an episodic memory of that session.


def conversation(count: int) -> list[tuple[str, str]]:
    """(speaker, text) turns of a real LoCoMo conversation, or varied sentences without it."""
    if LOCOMO.exists():
        conv = json.loads(LOCOMO.read_text())[0]["conversation"]
        names = [k for k in conv if k.startswith("session_") and not k.endswith("date_time")]
        names.sort(key=lambda k: int(k.split("_")[1]))
        turns = [(t["speaker"], t["text"]) for name in names for t in conv[name]]
        return turns[:count]
    topics = ["hiking", "painting", "the budget", "a new puppy", "jazz", "the move", "tax forms"]
    return [
        (
            "Ana" if i % 2 else "Ben",
            f"Turn {i}: I keep thinking about {topics[i % 7]} since day {i}.",
        )
        for i in range(count)
    ]


@pytest.mark.redis
async def test_two_hundred_messages_stay_bounded_and_evictions_become_episodic(
    redis_url: str, counter: BpeTokenCounter, embedder: LocalMiniLMEmbedder, tmp_path: Path
) -> None:
    """The container as production wires it: Redis working memory feeding the episodic layer."""
    base, db = redis_url.rsplit("/", 1)
    config = Settings(agentcore_data_dir=tmp_path, redis_url=base, redis_memory_db=int(db))
    migrate(config.sqlalchemy_url)
    container = await build_container(config, embedder=embedder)
    try:
        service = container.working
        session = ScopeIds(session_id="locomo-conv-26", user_id="caroline")
        evicted: dict[str, str] = {}
        for speaker, text in conversation(200):
            role = "user" if speaker in ("Caroline", "Ben") else "assistant"
            out = await service.append(session, text, role=role)
            assert out.token_count <= 4000
            evicted.update((i.id, i.content) for i in out.departed)
        view = await service.get("locomo-conv-26")
        assert sum(counter.count(i.content) for i in view.items) == view.token_count <= 4000
        assert len(evicted) + len(view.items) == 200
        assert len(evicted) >= 20

        stored = await _episodic_ids(container, "locomo-conv-26")
        assert stored == set(evicted)
        for memory_id in list(evicted)[:: max(1, len(evicted) // 5)]:
            found = await container.memory.search(
                SearchQuery(evicted[memory_id], ScopeIds(session_id="locomo-conv-26"), limit=5)
            )
            assert memory_id in [r.memory.id for r in found.results]
        episodes = await container.episodic.list_page(
            EpisodeListRequest(scope=ScopeIds(session_id="locomo-conv-26"))
        )
        assert sum(e.item_count for e in episodes.episodes) == len(evicted)
    finally:
        await container.aclose()
        await container.vectors.close()


async def _episodic_ids(container: Container, session_id: str) -> set[str]:
    ids: set[str] = set()
    after = None
    while True:
        page = await container.memory.list_page(
            ListRequest(
                scope=ScopeIds(session_id=session_id), layer="episodic", limit=100, after=after
            )
        )
        ids.update(m.id for m in page.memories)
        if page.next_after is None:
            return ids
        after = page.next_after
