"""The episodic layer on the real stack: SQLite + qdrant-edge and PostgreSQL + Qdrant (local
mode), both migrated by Alembic (0002 creates ``episodes``), with the real local embedder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection

from agentcore.adapters.db.tables import Base
from agentcore.bootstrap import Container
from agentcore.domain.clock import utcnow
from agentcore.domain.episodes import EpisodeStatus
from agentcore.domain.models import EventKind, ScopeIds
from agentcore.services.episodic import (
    EpisodeListRequest,
    EpisodeSearchRequest,
    EpisodicMemoryService,
)
from agentcore.services.ports import EpisodeItem

T0 = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
SCOPE = ScopeIds(user_id="carol", session_id="s-1")
DISTINCT = {
    3: ("I booked flight TP1234 to Lisbon for the conference.", "Great, the hotel is near Alfama."),
    41: ("My sister adopted a golden retriever puppy named Biscuit.", "What a lovely name!"),
    57: ("The database migration to Postgres failed on the orders table.", "Roll back first."),
}


def service_of(stack: Container) -> EpisodicMemoryService:
    settings = stack.settings
    return EpisodicMemoryService(
        stack.uow_factory,
        stack.memory,
        utcnow,
        max_episodes=settings.episodic_memory_max_episodes,
        batch_size=settings.memory_max_batch_size,
        max_content_length=settings.memory_max_context_length,
    )


def episode_items(n: int) -> list[EpisodeItem]:
    user, assistant = DISTINCT.get(n, (f"Routine check-in number {n}.", "Noted, thanks."))
    at = T0 + timedelta(hours=n)
    return [
        EpisodeItem(f"00000000-0000-4000-8000-{2 * n:012d}", user, "message", "user", at),
        EpisodeItem(
            f"00000000-0000-4000-8000-{2 * n + 1:012d}",
            assistant,
            "message",
            "assistant",
            at + timedelta(minutes=1),
        ),
    ]


async def test_sixty_episodes_keep_fifty_and_summarize_ten(stack: Container) -> None:
    service = service_of(stack)
    for n in range(60):
        await service.record(SCOPE, episode_items(n), "flushed")

    def listing(**kw: Any) -> EpisodeListRequest:
        return EpisodeListRequest(SCOPE, limit=100, **kw)

    active = await service.list_page(listing(status=EpisodeStatus.CLOSED))
    summarized = await service.list_page(listing(status=EpisodeStatus.SUMMARIZED))
    assert (active.total_count, summarized.total_count) == (50, 10)
    assert sorted(e.started_at for e in summarized.episodes) == [
        T0 + timedelta(hours=n) for n in range(10)
    ]

    # The pruned items: their summary holds the text, their history the full snapshot.
    lisbon = next(e for e in summarized.episodes if e.started_at == T0 + timedelta(hours=3))
    detail = await service.get(lisbon.id, SCOPE)
    (summary,) = detail.memories
    assert summary.id == lisbon.summary_memory_id
    assert summary.compacted_from_ids == list(lisbon.memory_ids)
    assert "TP1234" in summary.content
    *_, deleted = await stack.memory.history(lisbon.memory_ids[1], SCOPE)
    assert deleted.kind is EventKind.DELETE
    assert deleted.before is not None
    assert deleted.before["content"] == DISTINCT[3][1]

    window = listing(since=T0 + timedelta(hours=20, seconds=30), until=T0 + timedelta(hours=22))
    in_window = await service.list_page(window)
    assert [e.started_at for e in in_window.episodes] == [
        T0 + timedelta(hours=h) for h in (22, 21, 20)
    ]

    for query, n in [
        ("what is the name of the dog my sister got", 41),
        ("why did the Postgres migration fail", 57),
        ("which flight did I book to Lisbon", 3),  # found through its summary
    ]:
        found = await service.search(EpisodeSearchRequest(query, SCOPE))
        assert found[0].episode.started_at == T0 + timedelta(hours=n), query
    late = await service.search(
        EpisodeSearchRequest("golden retriever puppy", SCOPE, since=T0 + timedelta(hours=50))
    )
    assert all(m.episode.started_at >= T0 + timedelta(hours=49) for m in late)
    assert T0 + timedelta(hours=41) not in {m.episode.started_at for m in late}


async def test_evicted_items_join_one_episode_and_a_retry_stores_nothing_twice(
    stack: Container,
) -> None:
    service = service_of(stack)
    items = [
        EpisodeItem(f"10000000-0000-4000-8000-{n:012d}", f"message {n}", "message", "user", at)
        for n, at in enumerate(T0 + timedelta(minutes=m) for m in range(6))
    ]
    for n in range(0, 6, 2):
        await service.record(SCOPE, items[n : n + 2], "evicted")
    assert await service.record(SCOPE, items, "evicted") == [i.id for i in items]

    page = await service.list_page(EpisodeListRequest(SCOPE))
    (episode,) = page.episodes
    assert (episode.status, episode.item_count) == (EpisodeStatus.OPEN, 6)
    assert (episode.started_at, episode.ended_at) == (items[0].at, items[-1].at)
    detail = await service.get(episode.id, SCOPE)
    assert [m.content for m in detail.memories] == [i.content for i in items]


async def test_the_migrations_match_the_models(stack: Container) -> None:
    """Every table of the models (episodes, stages' origin, interventions, memories.flagged,
    ...) is what the migrations built; the lexical index's tables are built by hand."""

    def diff(connection: Connection) -> list[Any]:
        return list(compare_metadata(MigrationContext.configure(connection), Base.metadata))

    async with stack.engine.connect() as conn:
        diffs = await conn.run_sync(diff)
    assert [d for d in diffs if "memory_lexical" not in repr(d)] == []
