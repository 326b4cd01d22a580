from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

import pytest
from prometheus_client import CollectorRegistry

from agentcore.api.handlers.episodic import episodic_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.domain.episodes import Episode, EpisodeStatus, extractive_summary
from agentcore.domain.errors import InvalidParams, ProviderError
from agentcore.domain.models import EventKind, Layer, ScopeIds
from agentcore.domain.records import MemoryChanges
from agentcore.services.episodic import (
    EpisodeListRequest,
    EpisodeSearchRequest,
    EpisodicMemoryService,
)
from agentcore.services.ports import EpisodeItem, EpisodeQuery
from tests.fakes import FakeStore, FakeUnitOfWork
from tests.unit.conftest import Services

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
SCOPE = ScopeIds(user_id="alice", session_id="s1")


class FakeEpisodes:
    """The episode repository over a dict, with the SQL adapter's filters and orders."""

    def __init__(self, rows: dict[str, Episode], failing_saves: list[bool]) -> None:
        self._rows = rows
        self._failing = failing_saves

    async def get_many(self, episode_ids: Sequence[str], *, lock: bool = False) -> list[Episode]:
        return [self._rows[i] for i in dict.fromkeys(episode_ids) if i in self._rows]

    async def open_for(self, scope_key: str, session_id: str | None) -> Episode | None:
        found = [
            e
            for e in self._rows.values()
            if e.scope_key == scope_key
            and e.session_id == session_id
            and e.status is EpisodeStatus.OPEN
        ]
        return max(found, key=lambda e: (e.started_at, e.id), default=None)

    async def overlapping(self, scope_key: str, since: datetime, until: datetime) -> list[Episode]:
        return [
            e
            for e in self._rows.values()
            if e.scope_key == scope_key and e.started_at <= until and e.ended_at >= since
        ]

    async def save(self, episode: Episode) -> None:
        if self._failing and self._failing.pop():
            raise ProviderError("database went away")
        self._rows[episode.id] = episode

    async def page(self, query: EpisodeQuery) -> tuple[list[Episode], int]:
        rows = sorted(
            (e for e in self._rows.values() if _matches(e, query)),
            key=lambda e: (e.started_at, e.id),
            reverse=True,
        )
        total = len(rows)
        if query.after is not None:
            rows = [e for e in rows if (e.started_at, e.id) < query.after]
        return rows[: query.limit], total

    async def closed_since(self, since: datetime | None, limit: int) -> list[Episode]:
        found = [
            e
            for e in self._rows.values()
            if e.status is EpisodeStatus.CLOSED and (since is None or e.updated_at > since)
        ]
        return sorted(found, key=lambda e: (e.updated_at, e.id))[:limit]

    async def beyond_cap(self, scope_key: str, keep: int) -> list[Episode]:
        rows = sorted(
            (
                e
                for e in self._rows.values()
                if e.scope_key == scope_key and e.status is not EpisodeStatus.SUMMARIZED
            ),
            key=lambda e: (e.started_at, e.id),
            reverse=True,
        )
        return rows[keep:][::-1]


def _matches(e: Episode, q: EpisodeQuery) -> bool:
    return (
        e.scope_key in q.scope_keys
        and (q.session_id is None or e.session_id == q.session_id)
        and (q.task_id is None or e.task_id == q.task_id)
        and (q.stage_id is None or e.stage_id == q.stage_id)
        and (q.status is None or e.status is q.status)
        and (q.since is None or e.ended_at >= q.since)
        and (q.until is None or e.started_at <= q.until)
    )


class FakeEpisodicUnitOfWork:
    """The fakes' unit of work plus episodes; commit publishes both."""

    def __init__(self, parent: FakeEpisodicStore) -> None:
        self._parent = parent
        self._inner: FakeUnitOfWork = parent.store()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        self.memories = self._inner.memories
        self._rows = copy.deepcopy(self._parent.episodes)
        self.episodes = FakeEpisodes(self._rows, self._parent.failing_saves)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._inner.__aexit__(exc_type, exc, tb)

    async def commit(self) -> None:
        await self._inner.commit()
        self._parent.episodes = self._rows


class FakeEpisodicStore:
    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.episodes: dict[str, Episode] = {}
        self.failing_saves: list[bool] = []  # popped per save: True fails that save

    def __call__(self, *, read_only: bool = False) -> FakeEpisodicUnitOfWork:
        return FakeEpisodicUnitOfWork(self)


@pytest.fixture
def episodic(services: Services) -> tuple[EpisodicMemoryService, FakeEpisodicStore]:
    store = FakeEpisodicStore(services.store)
    service = EpisodicMemoryService(
        store,
        services.memory,
        services.clock,
        max_episodes=3,
        batch_size=10,
        max_content_length=500,
        max_gap=timedelta(minutes=30),
        max_items=20,
    )
    return service, store


def item(
    n: int, content: str, stage: str | None = None, minutes: float | None = None
) -> EpisodeItem:
    at = T0 + timedelta(minutes=n if minutes is None else minutes)
    role = "user" if n % 2 == 0 else "assistant"
    return EpisodeItem(f"00000000-0000-4000-8000-{n:012d}", content, "message", role, at, stage)


def by_start(store: FakeEpisodicStore) -> list[Episode]:
    return sorted(store.episodes.values(), key=lambda e: e.started_at)


async def test_consecutive_items_of_one_stage_share_an_episode_and_stages_never_mix(
    services: Services, episodic: tuple[EpisodicMemoryService, FakeEpisodicStore]
) -> None:
    service, store = episodic
    items = [
        item(0, "plan the data migration", "plan"),
        item(1, "list the tables to move", "plan"),
        item(2, "copy the users table", "exec"),
        item(3, "revise the plan for orders", "plan"),
    ]
    assert await service.record(SCOPE, items, "evicted") == [i.id for i in items]

    episodes = by_start(store)
    assert [(e.stage_id, e.item_count) for e in episodes] == [("plan", 2), ("exec", 1), ("plan", 1)]
    assert [e.status for e in episodes] == [EpisodeStatus.CLOSED] * 2 + [EpisodeStatus.OPEN]
    assert (episodes[0].started_at, episodes[0].ended_at) == (items[0].at, items[1].at)
    memories = services.store.state.memories
    for episode in episodes:
        for memory_id in episode.memory_ids:
            memory = memories[memory_id]
            assert memory.layer is Layer.EPISODIC
            assert memory.stage_id == episode.stage_id
            assert memory.metadata["episode_id"] == episode.id
            assert memory.metadata["reason"] == "evicted"
    assert memories[items[1].id].metadata["role"] == "assistant"
    assert memories[items[1].id].metadata["at"] == items[1].at.isoformat()


async def test_evictions_extend_the_open_episode_until_a_flush_a_gap_or_a_full_episode(
    episodic: tuple[EpisodicMemoryService, FakeEpisodicStore],
) -> None:
    service, store = episodic
    await service.record(SCOPE, [item(0, "hello there")], "evicted")
    await service.record(SCOPE, [item(1, "hi, how can I help")], "evicted")
    await service.record(SCOPE, [item(2, "book a table")], "flushed")
    await service.record(SCOPE, [item(3, "a new conversation")], "evicted")
    await service.record(SCOPE, [item(4, "much later", minutes=100)], "evicted")
    await service.record(
        SCOPE, [item(n, f"message {n}", minutes=100 + n) for n in range(5, 30)], "evicted"
    )

    episodes = by_start(store)
    assert [e.item_count for e in episodes] == [3, 1, 20, 6]
    closed, opened = EpisodeStatus.CLOSED, EpisodeStatus.OPEN
    # Four episodes over the cap of three: the oldest is summarized.
    assert [e.status for e in episodes] == [EpisodeStatus.SUMMARIZED, closed, closed, opened]


async def test_a_flush_with_nothing_new_closes_the_open_episode(
    episodic: tuple[EpisodicMemoryService, FakeEpisodicStore],
) -> None:
    service, store = episodic
    await service.record(SCOPE, [item(0, "hello")], "evicted")
    assert await service.record(SCOPE, [], "flushed") == []
    assert [e.status for e in store.episodes.values()] == [EpisodeStatus.CLOSED]


async def test_recording_the_same_items_again_stores_nothing_new(
    services: Services, episodic: tuple[EpisodicMemoryService, FakeEpisodicStore]
) -> None:
    service, store = episodic
    items = [item(n, f"message number {n}", "s") for n in range(12)]  # > one batch of 10
    first = await service.record(SCOPE, items, "evicted")
    memories_before = dict(services.store.state.memories)
    episodes_before = dict(store.episodes)

    again = await service.record(SCOPE, [*items[5:], items[5]], "evicted")

    assert again == first[5:]
    assert services.store.state.memories.keys() == memories_before.keys()
    assert {k: e.memory_ids for k, e in store.episodes.items()} == {
        k: e.memory_ids for k, e in episodes_before.items()
    }


async def test_a_retry_after_a_failed_link_repairs_the_episode(
    services: Services, episodic: tuple[EpisodicMemoryService, FakeEpisodicStore]
) -> None:
    service, store = episodic
    items = [item(0, "the deploy failed"), item(1, "roll it back")]
    store.failing_saves.append(True)
    with pytest.raises(ProviderError):
        await service.record(SCOPE, items, "evicted")
    assert set(services.store.state.memories) == {i.id for i in items}
    assert store.episodes == {}

    await service.record(SCOPE, items, "evicted")

    (episode,) = store.episodes.values()
    assert set(episode.memory_ids) == {i.id for i in items}
    assert services.store.state.memories[items[0].id].metadata["episode_id"] == episode.id


async def test_episodes_beyond_the_cap_are_summarized_never_dropped(
    services: Services, episodic: tuple[EpisodicMemoryService, FakeEpisodicStore]
) -> None:
    service, store = episodic
    topics = ["the cat sat on the mat", "paris trip in may", "tax return deadline", "gym plan"]
    batches = [
        [item(10 * t + k, f"{topic}. detail {k} about {topic}.") for k in range(3)]
        for t, topic in enumerate([*topics, "recipe for soup"])
    ]
    critical_id = batches[0][1].id
    for batch in batches[:1]:
        await service.record(SCOPE, batch, "flushed")
    await services.memory.update(critical_id, SCOPE, MemoryChanges(critical=True))
    for batch in batches[1:]:
        await service.record(SCOPE, batch, "flushed")

    episodes = by_start(store)
    assert [e.status for e in episodes] == [EpisodeStatus.SUMMARIZED] * 2 + [
        EpisodeStatus.CLOSED
    ] * 3
    memories = services.store.state.memories
    for episode, batch in zip(episodes[:2], batches[:2], strict=True):
        assert episode.summary_memory_id is not None
        summary = memories[episode.summary_memory_id]
        assert summary.compacted_from_ids == [i.id for i in batch]
        assert summary.metadata["summary"] is True
        assert summary.metadata["episode_id"] == episode.id
        assert episode.memory_ids == tuple(i.id for i in batch)
        for i in batch:
            if i.id == critical_id:
                assert memories[i.id].metadata["summary_memory_id"] == summary.id
                continue
            assert i.id not in memories
            (*_, deleted) = await services.memory.history(i.id, SCOPE)
            assert deleted.kind is EventKind.DELETE
            assert deleted.before is not None
            assert deleted.before["content"] == i.content
    assert "paris" in memories[episodes[1].summary_memory_id or ""].content

    # Items pruned into a summary are not stored again by a late retry.
    count = len(memories)
    assert await service.record(SCOPE, batches[1], "flushed") == [i.id for i in batches[1]]
    assert len(services.store.state.memories) == count


async def test_listing_matches_overlapping_time_ranges_newest_first(
    episodic: tuple[EpisodicMemoryService, FakeEpisodicStore],
) -> None:
    service, _ = episodic
    for hour in range(3):
        batch = [item(100 * hour + k, f"hour {hour}", minutes=60 * hour + k) for k in range(3)]
        await service.record(SCOPE, batch, "flushed")

    async def starts(**kw: datetime) -> list[datetime]:
        page = await service.list_page(EpisodeListRequest(SCOPE, **kw))
        return [e.started_at for e in page.episodes]

    hours = [T0 + timedelta(hours=h) for h in range(3)]
    assert await starts() == hours[::-1]
    assert await starts(since=T0 + timedelta(minutes=61)) == [hours[2], hours[1]]
    assert await starts(since=T0 + timedelta(minutes=59), until=T0 + timedelta(minutes=61)) == [
        hours[1]
    ]
    other = await service.list_page(EpisodeListRequest(ScopeIds(user_id="alice", session_id="x")))
    assert other.episodes == []
    first = await service.list_page(EpisodeListRequest(SCOPE, limit=2))
    rest = await service.list_page(EpisodeListRequest(SCOPE, limit=2, after=first.next_after))
    assert [e.started_at for e in [*first.episodes, *rest.episodes]] == hours[::-1]
    assert first.total_count == 3
    with pytest.raises(InvalidParams):
        await service.list_page(EpisodeListRequest(SCOPE, since=hours[2], until=hours[0]))


async def test_search_ranks_the_episode_with_the_best_matching_item_first(
    episodic: tuple[EpisodicMemoryService, FakeEpisodicStore],
) -> None:
    service, store = episodic
    texts = ["we talked about the weather", "alice booked a flight to lisbon", "budget review"]
    for n, text in enumerate(texts):
        await service.record(SCOPE, [item(10 * n, text), item(10 * n + 1, "ok")], "flushed")

    found = await service.search(EpisodeSearchRequest("flight to lisbon", SCOPE))
    assert found[0].episode.started_at == T0 + timedelta(minutes=10)
    assert found[0].matches[0].memory.content == texts[1]
    late = await service.search(
        EpisodeSearchRequest("flight to lisbon", SCOPE, since=T0 + timedelta(minutes=15))
    )
    assert [m.episode.started_at for m in late] == [T0 + timedelta(minutes=20)]
    detail = await service.get(found[0].episode.id, SCOPE)
    assert [m.content for m in detail.memories] == [texts[1], "ok"]
    assert len(store.episodes) == 3


async def test_an_unknown_reason_is_refused(
    episodic: tuple[EpisodicMemoryService, FakeEpisodicStore],
) -> None:
    with pytest.raises(InvalidParams):
        await episodic[0].record(SCOPE, [item(0, "x")], "forgotten")


def test_extractive_summary_is_bounded_keeps_each_role_and_the_order() -> None:
    lines = [
        ("user", "Hi. I want to plan a trip to Kyoto in April with my sister."),
        ("assistant", "Sure. Kyoto in April is cherry blossom season, so book hotels early."),
        ("user", "Ok. We also want to visit Nara and see the deer park for a day."),
    ] * 4
    total = sum(len(text) for _, text in lines)
    summary = extractive_summary(lines, max_chars=10_000)
    assert len(summary) <= max(total // 5, 200)
    kept = summary.splitlines()
    assert {line.split(":")[0] for line in kept} == {"user", "assistant"}
    assert "Kyoto" in summary
    assert "Hi." not in summary  # short, uninformative sentences go first
    assert extractive_summary([("user", "word " * 400)], max_chars=50).endswith("…")


async def test_the_rpc_methods_list_get_and_search_episodes(
    episodic: tuple[EpisodicMemoryService, FakeEpisodicStore],
) -> None:
    service, _ = episodic
    await service.record(
        SCOPE, [item(0, "alice booked a flight to lisbon"), item(1, "ok")], "flushed"
    )
    methods = {m.name: m for m in episodic_methods(service)}
    endpoint = JsonRpcEndpoint(methods, RpcMetrics(CollectorRegistry()))

    async def call(method: str, **params: object) -> Any:
        body = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        reply = await endpoint.handle(json.dumps(body).encode())
        assert isinstance(reply, dict)
        return reply

    ids = {"user_id": "alice", "session_id": "s1"}
    listed = await call("memory.episodes.list", **ids, since="2026-01-01T09:00:30Z")
    (episode,) = listed["result"]["episodes"]
    assert episode["item_count"] == 2
    assert episode["started_at"] == "2026-01-01T09:00:00Z"
    got = await call("memory.episodes.get", **ids, episode_id=episode["id"])
    assert [m["content"] for m in got["result"]["memories"]] == [
        "alice booked a flight to lisbon",
        "ok",
    ]
    found = await call("memory.episodes.search", **ids, query="flight to lisbon")
    assert found["result"]["results"][0]["episode"]["id"] == episode["id"]
    missing = await call("memory.episodes.get", user_id="bob", episode_id=episode["id"])
    assert missing["error"]["data"]["code"] == "MEMORY_NOT_FOUND"
    bad = await call("memory.episodes.list", **ids, status="lost")
    assert bad["error"]["code"] == -32602
