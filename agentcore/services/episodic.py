"""EpisodicMemoryService: the episodic layer (FR-1.2), fed by working memory (``EpisodeSink``).

An episode is one stretch of a session within one stage: the items working memory evicts join
the session's open episode while they stay in its stage, follow it within ``max_gap`` and fit in
``max_items``; otherwise a new episode starts. A flush or an idle session closes it. Every item
becomes one episodic memory (``metadata.episode_id`` links it to its episode), so each message
stays findable by search. Beyond ``max_episodes`` unsummarized episodes per scope, the oldest are
pruned into one extractive summary memory each; their item memories are deleted through the
memory manager (their history keeps the full snapshot) except critical ones, which stay.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from agentcore.domain.clock import Clock
from agentcore.domain.episodes import Episode, EpisodeStatus, extractive_summary
from agentcore.domain.errors import Conflict, InvalidParams, MemoryNotFound
from agentcore.domain.models import Memory, ScopeIds, ScopeLevel, scope_key
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.scopes import owning_level, visible_scope_keys
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import EpisodeItem, EpisodeQuery, UnitOfWorkFactory
from agentcore.services.ranked import ScoredMemory
from agentcore.services.retrieval import SearchQuery

REASONS = frozenset({"evicted", "flushed", "idle"})
_CLOSING = frozenset({"flushed", "idle"})
_IDS = uuid.UUID("6f1d2c1e-4b8a-4f57-9a51-8d0e2f7c3b10")  # namespace of derived ids
_SEARCH_DEPTH = 100  # item hits fetched before grouping them into episodes


@dataclass(frozen=True, slots=True)
class EpisodeListRequest:
    """``scope.session_id`` and ``scope.task_id``, when given, also keep only that session's or
    task's episodes (beyond making their scope visible)."""

    scope: ScopeIds
    scope_level: str | None = None
    stage_id: str | None = None
    status: EpisodeStatus | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 20
    after: tuple[datetime, str] | None = None


@dataclass(frozen=True, slots=True)
class EpisodePage:
    episodes: list[Episode]
    next_after: tuple[datetime, str] | None
    total_count: int


@dataclass(frozen=True, slots=True)
class EpisodeDetail:
    episode: Episode
    memories: list[Memory]  # its items in time order (after pruning: the summary and criticals)


@dataclass(frozen=True, slots=True)
class EpisodeSearchRequest:
    query: str
    scope: ScopeIds
    scope_level: str | None = None
    stage_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 5


@dataclass(frozen=True, slots=True)
class EpisodeMatch:
    episode: Episode
    score: float  # the best score of its matching memories
    matches: list[ScoredMemory]  # best first


@dataclass
class _Group:
    """Items bound for one episode; ``fresh`` ones still need their memories stored."""

    episode_id: str
    stage_id: str | None
    items: list[EpisodeItem]
    last_at: datetime
    count: int
    fresh: bool = True


class EpisodicMemoryService:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        memory: MemoryManager,
        clock: Clock,
        *,
        max_episodes: int,
        batch_size: int,
        max_content_length: int,
        max_gap: timedelta = timedelta(minutes=30),
        max_items: int = 50,
    ) -> None:
        self._uow_factory = uow_factory
        self._memory = memory
        self._clock = clock
        self._max_episodes = max_episodes
        self._batch = batch_size
        self._max_content = max_content_length
        self._max_gap = max_gap
        self._max_items = max_items

    async def record(self, scope: ScopeIds, items: Sequence[EpisodeItem], reason: str) -> list[str]:
        """``EpisodeSink.record``: returns the memory ids of all ``items`` (each already
        stored, or pruned into a summary, counts as stored). Then enforces the cap."""
        if reason not in REASONS:
            raise InvalidParams(
                f"reason must be one of {sorted(REASONS)}",
                errors=[{"field": "reason", "message": "unknown reason"}],
            )
        first: dict[str, EpisodeItem] = {}
        for item in items:
            first.setdefault(item.id, replace(item, at=_utc(item.at)))
        unique = list(first.values())
        # Episodes belong to their session when they have one (working memory always gives
        # it), even if the items also carry more specific ids such as the user's.
        level = ScopeLevel.SESSION if scope.session_id else owning_level(scope)
        key = scope_key(level, scope.present()[level])
        if unique:
            fresh, orphans, open_episode = await self._triage(key, scope.session_id, unique)
            groups = _plan(fresh, open_episode, self._max_gap, self._max_items)
            for group in groups:
                await self._store(scope, level, group, reason)
            await self._link(key, scope, [*groups, *orphans], open_episode, reason)
        elif reason in _CLOSING:
            await self._link(key, scope, [], None, reason)
        await self.prune(key)
        return [item.id for item in unique]

    async def prune(self, key: str) -> int:
        """Summarize the scope's unsummarized episodes beyond the cap; returns how many."""
        async with self._uow_factory(read_only=True) as uow:
            over = await uow.episodes.beyond_cap(key, self._max_episodes)
        for episode in over:
            await self._summarize(episode)
        return len(over)

    async def list_page(self, request: EpisodeListRequest) -> EpisodePage:
        query = EpisodeQuery(
            scope_keys=_keys(request.scope, request.scope_level),
            session_id=request.scope.session_id,
            task_id=request.scope.task_id,
            stage_id=request.stage_id,
            status=request.status,
            since=request.since,
            until=_check_range(request.since, request.until),
            limit=request.limit + 1,
            after=request.after,
        )
        async with self._uow_factory(read_only=True) as uow:
            rows, total = await uow.episodes.page(query)
        page, more = rows[: request.limit], len(rows) > request.limit
        next_after = (page[-1].started_at, page[-1].id) if more and page else None
        return EpisodePage(page, next_after, total)

    async def get(self, episode_id: str, scope: ScopeIds) -> EpisodeDetail:
        keys = visible_scope_keys(scope)
        async with self._uow_factory(read_only=True) as uow:
            found = await uow.episodes.get_many([episode_id])
            if not found or found[0].scope_key not in keys:
                raise MemoryNotFound(f"no episode {episode_id} in the given scope")
            episode = found[0]
            extra = [episode.summary_memory_id] if episode.summary_memory_id else []
            memories = await uow.memories.get_many([*extra, *episode.memory_ids])
        now = self._clock()
        alive = [m for m in memories if not m.is_expired(now)]
        return EpisodeDetail(episode, sorted(alive, key=_item_time))

    async def search(self, request: EpisodeSearchRequest) -> list[EpisodeMatch]:
        """Episodes ranked by the best score of their memories (items or summary)."""
        until = _check_range(request.since, request.until)
        outcome = await self._memory.search(
            SearchQuery(
                query=request.query,
                scope=request.scope,
                layers=["episodic"],
                scopes=None if request.scope_level is None else [request.scope_level],
                limit=_SEARCH_DEPTH,
                stage_id=request.stage_id,
            )
        )
        hits: dict[str, list[ScoredMemory]] = {}
        for scored in outcome.results:
            episode_id = scored.memory.metadata.get("episode_id")
            if isinstance(episode_id, str):
                hits.setdefault(episode_id, []).append(scored)
        async with self._uow_factory(read_only=True) as uow:
            episodes = await uow.episodes.get_many(list(hits))
        keys = set(_keys(request.scope, request.scope_level))
        query = EpisodeQuery(
            scope_keys=list(keys),
            session_id=request.scope.session_id,
            task_id=request.scope.task_id,
            since=request.since,
            until=until,
        )
        matches = [
            EpisodeMatch(e, max(s.score for s in hits[e.id]), hits[e.id])
            for e in episodes
            if _selected(e, query)
        ]
        matches.sort(key=lambda m: m.score, reverse=True)
        return matches[: request.limit]

    async def _triage(
        self, key: str, session_id: str | None, items: list[EpisodeItem]
    ) -> tuple[list[EpisodeItem], list[_Group], Episode | None]:
        """Items to store, stored items still missing from their episode (an interrupted
        earlier call), and the session's open episode."""
        ats = [item.at for item in items]
        async with self._uow_factory(read_only=True) as uow:
            near = await uow.episodes.overlapping(key, min(ats), max(ats))
            recorded = {memory_id for episode in near for memory_id in episode.memory_ids}
            unrecorded = [item.id for item in items if item.id not in recorded]
            stored = {m.id: m for m in await uow.memories.get_many(unrecorded)}
            open_episode = await uow.episodes.open_for(key, session_id)
        orphans: dict[str, _Group] = {}
        for item in items:
            memory = stored.get(item.id)
            episode_id = None if memory is None else memory.metadata.get("episode_id")
            if isinstance(episode_id, str) and item.id not in recorded:
                group = orphans.setdefault(
                    episode_id, _Group(episode_id, item.stage_id, [], item.at, 0, fresh=False)
                )
                group.items.append(item)
        fresh = [item for item in items if item.id not in recorded and item.id not in stored]
        return fresh, list(orphans.values()), open_episode

    async def _store(self, scope: ScopeIds, level: ScopeLevel, group: _Group, reason: str) -> None:
        news = [
            NewMemory(
                id=item.id,
                content=item.content,
                scope=scope,
                scope_level=level.value,
                layer="episodic",
                stage_id=item.stage_id,
                source="working_memory",
                metadata={
                    "episode_id": group.episode_id,
                    "kind": item.kind,
                    "role": item.role,
                    "at": item.at.isoformat(),
                    "reason": reason,
                },
            )
            for item in group.items
        ]
        for start in range(0, len(news), self._batch):
            part = news[start : start + self._batch]
            try:
                await self._memory.add_batch(part)
            except Conflict:
                # A concurrent call stored some of them first: store the rest.
                async with self._uow_factory(read_only=True) as uow:
                    have = {m.id for m in await uow.memories.get_many([n.id or "" for n in part])}
                rest = [n for n in part if n.id not in have]
                if rest:
                    await self._memory.add_batch(rest)

    async def _link(
        self,
        key: str,
        scope: ScopeIds,
        groups: list[_Group],
        open_episode: Episode | None,
        reason: str,
    ) -> None:
        """Create or extend the episodes of ``groups``; only the newest stays open."""
        now = self._clock()
        fresh_ids = [group.episode_id for group in groups if group.fresh]
        async with self._uow_factory() as uow:
            if open_episode is None and not groups:
                open_episode = await uow.episodes.open_for(key, scope.session_id)
            latest = fresh_ids[-1] if fresh_ids else open_episode.id if open_episode else None
            ids = [group.episode_id for group in groups]
            ids += [open_episode.id] if open_episode else []
            current = {e.id: e for e in await uow.episodes.get_many(ids, lock=True)}
            touched: dict[str, Episode] = {}
            for group in groups:
                existing = touched.get(group.episode_id) or current.get(group.episode_id)
                touched[group.episode_id] = _merged(existing, group, key, scope, now)
            for episode_id in [*fresh_ids, *([open_episode.id] if open_episode else [])]:
                episode = touched.get(episode_id) or current.get(episode_id)
                if episode is None or episode.status is EpisodeStatus.SUMMARIZED:
                    continue
                keep_open = episode_id == latest and reason not in _CLOSING
                status = EpisodeStatus.OPEN if keep_open else EpisodeStatus.CLOSED
                touched[episode_id] = replace(episode, status=status, updated_at=now)
            for episode in touched.values():
                await uow.episodes.save(episode)
            await uow.commit()

    async def _summarize(self, episode: Episode) -> None:
        summary_id = _derived_id("summary", episode.id)
        async with self._uow_factory(read_only=True) as uow:
            found = {m.id: m for m in await uow.memories.get_many([*episode.memory_ids])}
            summary = next(iter(await uow.memories.get_many([summary_id])), None)
        items = sorted(found.values(), key=_item_time)
        if summary is None and items:
            summary = await self._add_summary(episode, summary_id, items)
        for memory in items:
            try:
                if not memory.critical:
                    await self._memory.delete(memory.id, memory.scope)
                elif summary is not None:
                    link = MemoryChanges(metadata={"summary_memory_id": summary.id})
                    await self._memory.update(memory.id, memory.scope, link)
            except MemoryNotFound:
                continue  # deleted meanwhile (or expired): nothing left to prune
        async with self._uow_factory() as uow:
            current = await uow.episodes.get_many([episode.id], lock=True)
            if current and current[0].status is not EpisodeStatus.SUMMARIZED:
                await uow.episodes.save(
                    replace(
                        current[0],
                        status=EpisodeStatus.SUMMARIZED,
                        summary_memory_id=None if summary is None else summary.id,
                        updated_at=self._clock(),
                    )
                )
                await uow.commit()

    async def _add_summary(self, episode: Episode, summary_id: str, items: list[Memory]) -> Memory:
        lines = [(str(m.metadata.get("role") or m.metadata.get("kind")), m.content) for m in items]
        new = NewMemory(
            id=summary_id,
            content=extractive_summary(lines, self._max_content),
            scope=items[0].scope,
            scope_level=items[0].scope_level.value,
            layer="episodic",
            stage_id=episode.stage_id,
            source="episodic_summary",
            compacted_from_ids=episode.memory_ids,
            metadata={
                "episode_id": episode.id,
                "summary": True,
                "started_at": episode.started_at.isoformat(),
                "ended_at": episode.ended_at.isoformat(),
                "item_count": episode.item_count,
            },
        )
        try:
            return await self._memory.add(new)
        except Conflict:  # made by an interrupted earlier pruning
            async with self._uow_factory(read_only=True) as uow:
                made = await uow.memories.get(summary_id)
            if made is None:
                raise
            return made


def _plan(
    items: list[EpisodeItem], open_episode: Episode | None, max_gap: timedelta, max_items: int
) -> list[_Group]:
    """Consecutive items grouped into episodes: the first may join the open episode; a new
    episode starts at a stage change, a gap over ``max_gap`` or a full episode."""
    current: _Group | None = None
    if open_episode is not None:
        current = _Group(
            open_episode.id,
            open_episode.stage_id,
            [],
            open_episode.ended_at,
            open_episode.item_count,
        )
    groups = [] if current is None else [current]
    for item in items:
        if (
            current is None
            or item.stage_id != current.stage_id
            or item.at - current.last_at > max_gap
            or current.count >= max_items
        ):
            current = _Group(_derived_id("episode", item.id), item.stage_id, [], item.at, 0)
            groups.append(current)
        current.items.append(item)
        current.count += 1
        current.last_at = max(current.last_at, item.at)
    return [group for group in groups if group.items]


def _merged(
    existing: Episode | None, group: _Group, key: str, scope: ScopeIds, now: datetime
) -> Episode:
    ats = [item.at for item in group.items]
    ids = tuple(item.id for item in group.items)
    if existing is None:
        return Episode(
            id=group.episode_id,
            scope_key=key,
            session_id=scope.session_id,
            task_id=scope.task_id,
            stage_id=group.stage_id,
            status=EpisodeStatus.CLOSED,
            started_at=min(ats),
            ended_at=max(ats),
            memory_ids=tuple(dict.fromkeys(ids)),
            created_at=now,
            updated_at=now,
        )
    return replace(
        existing,
        started_at=min(existing.started_at, *ats),
        ended_at=max(existing.ended_at, *ats),
        memory_ids=tuple(dict.fromkeys([*existing.memory_ids, *ids])),
        updated_at=now,
    )


def _selected(episode: Episode, query: EpisodeQuery) -> bool:
    return (
        episode.scope_key in query.scope_keys
        and (query.session_id is None or episode.session_id == query.session_id)
        and (query.task_id is None or episode.task_id == query.task_id)
        and (query.since is None or episode.ended_at >= query.since)
        and (query.until is None or episode.started_at <= query.until)
    )


def _keys(scope: ScopeIds, level: str | None) -> list[str]:
    return visible_scope_keys(scope, None if level is None else [level])


def _check_range(since: datetime | None, until: datetime | None) -> datetime | None:
    if since is not None and until is not None and since > until:
        raise InvalidParams(
            "since is after until", errors=[{"field": "since", "message": "after until"}]
        )
    return until


def _derived_id(kind: str, source_id: str) -> str:
    """A stable id derived from another: a retried call makes the same row, not a second."""
    return str(uuid.uuid5(_IDS, f"{kind}:{source_id}"))


def _utc(at: datetime) -> datetime:
    """Naive times are taken as UTC."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _item_time(memory: Memory) -> tuple[datetime, datetime]:
    """An item's time in its session (a summary sorts at its episode's start)."""
    at = memory.metadata.get("at") or memory.metadata.get("started_at")
    try:
        when = _utc(datetime.fromisoformat(at)) if isinstance(at, str) else memory.created_at
    except ValueError:
        when = memory.created_at
    return when, memory.created_at
