"""JSON-RPC methods of the episodic layer: ``memory.episodes.list``, ``.get`` and ``.search``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from agentcore.api import cursor
from agentcore.api.params import Identifier, ScopeParams, Timestamp
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import MemoryOut
from agentcore.domain.episodes import Episode, EpisodeStatus
from agentcore.services.episodic import (
    EpisodeListRequest,
    EpisodeMatch,
    EpisodeSearchRequest,
    EpisodicMemoryService,
)

_ORDER = "desc"  # episodes are listed newest first
_SCOPE_DOC = "scope level; default: every level whose id is given"
_LINK_DOC = "session_id and task_id, when given, also keep only that session's or task's episodes"


class ListEpisodesParams(ScopeParams):
    scope: str | None = Field(None, description=_SCOPE_DOC)
    stage_id: Identifier | None = None
    status: Literal["open", "closed", "summarized"] | None = None
    since: Timestamp | None = Field(None, description="episodes that end at or after this")
    until: Timestamp | None = Field(None, description="episodes that start at or before this")
    cursor: Annotated[str, StringConstraints(max_length=512)] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20


class GetEpisodeParams(ScopeParams):
    episode_id: Identifier


class SearchEpisodesParams(ScopeParams):
    query: Annotated[str, Field(min_length=1)]
    scope: str | None = Field(None, description=_SCOPE_DOC)
    stage_id: Identifier | None = None
    since: Timestamp | None = None
    until: Timestamp | None = None
    limit: Annotated[int, Field(ge=1, le=50)] = 5


class EpisodeOut(BaseModel):
    id: str
    scope_key: str
    session_id: str | None
    task_id: str | None
    stage_id: str | None
    status: str = Field(description="open, closed or summarized")
    started_at: datetime
    ended_at: datetime
    item_count: int
    memory_ids: list[str] = Field(description="its items' memories (kept after pruning)")
    summary_memory_id: str | None

    @classmethod
    def of(cls, e: Episode) -> EpisodeOut:
        return cls(
            id=e.id,
            scope_key=e.scope_key,
            session_id=e.session_id,
            task_id=e.task_id,
            stage_id=e.stage_id,
            status=e.status.value,
            started_at=e.started_at,
            ended_at=e.ended_at,
            item_count=e.item_count,
            memory_ids=list(e.memory_ids),
            summary_memory_id=e.summary_memory_id,
        )


class ListEpisodesResult(BaseModel):
    episodes: list[EpisodeOut]
    next_cursor: str | None
    total_count: int


class EpisodeDetailResult(BaseModel):
    episode: EpisodeOut
    memories: list[MemoryOut] = Field(description="its items in time order, or its summary")


class MatchedMemory(BaseModel):
    memory: MemoryOut
    score: float
    similarity: float


class EpisodeHit(BaseModel):
    episode: EpisodeOut
    score: float = Field(description="the best score of its matching memories")
    matches: list[MatchedMemory]

    @classmethod
    def of(cls, m: EpisodeMatch) -> EpisodeHit:
        return cls(
            episode=EpisodeOut.of(m.episode),
            score=round(m.score, 6),
            matches=[
                MatchedMemory(
                    memory=MemoryOut.of(s.memory),
                    score=round(s.score, 6),
                    similarity=round(s.similarity, 6),
                )
                for s in m.matches
            ],
        )


class SearchEpisodesResult(BaseModel):
    results: list[EpisodeHit]
    total_count: int


def episodic_methods(service: EpisodicMemoryService) -> list[RpcMethod]:
    async def list_(a: ListEpisodesParams) -> ListEpisodesResult:
        page = await service.list_page(
            EpisodeListRequest(
                scope=a.scope_ids(),
                scope_level=a.scope,
                stage_id=a.stage_id,
                status=None if a.status is None else EpisodeStatus(a.status),
                since=a.since,
                until=a.until,
                limit=a.limit,
                after=None if a.cursor is None else cursor.decode(a.cursor, _ORDER),
            )
        )
        return ListEpisodesResult(
            episodes=[EpisodeOut.of(e) for e in page.episodes],
            next_cursor=None if page.next_after is None else cursor.encode(page.next_after, _ORDER),
            total_count=page.total_count,
        )

    async def get(a: GetEpisodeParams) -> EpisodeDetailResult:
        detail = await service.get(a.episode_id, a.scope_ids())
        return EpisodeDetailResult(
            episode=EpisodeOut.of(detail.episode),
            memories=[MemoryOut.of(m) for m in detail.memories],
        )

    async def search(a: SearchEpisodesParams) -> SearchEpisodesResult:
        matches = await service.search(
            EpisodeSearchRequest(
                query=a.query,
                scope=a.scope_ids(),
                scope_level=a.scope,
                stage_id=a.stage_id,
                since=a.since,
                until=a.until,
                limit=a.limit,
            )
        )
        return SearchEpisodesResult(
            results=[EpisodeHit.of(m) for m in matches], total_count=len(matches)
        )

    return [
        RpcMethod(
            "memory.episodes.list",
            ListEpisodesParams,
            ListEpisodesResult,
            list_,
            "Episodes of a scope newest first, by time range (overlap), stage or status; "
            + _LINK_DOC
            + ".",
        ),
        RpcMethod(
            "memory.episodes.get",
            GetEpisodeParams,
            EpisodeDetailResult,
            get,
            "One episode with its memories in time order (its summary once pruned).",
        ),
        RpcMethod(
            "memory.episodes.search",
            SearchEpisodesParams,
            SearchEpisodesResult,
            search,
            "Episodes ranked by the best similarity of their memories to a query, each with "
            "its matching memories; optional time range (overlap); " + _LINK_DOC + ".",
        ),
    ]
