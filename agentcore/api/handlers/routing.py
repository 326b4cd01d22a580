"""JSON-RPC methods for the MessageRouter and for artifacts: ``memory.route_context``,
``memory.artifact.add`` and ``memory.artifact.list``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from agentcore.api import cursor
from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import ListResult, MemoryOut, SearchHit
from agentcore.services.consumers.artifacts import ArtifactService, NewArtifact
from agentcore.services.consumers.routing import MAX_CANDIDATES, RoutingService


class RouteContextParams(ScopeParams):
    content: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    session_id: Identifier
    limit: Annotated[int, Field(ge=1, le=50)] = 5
    candidate_agents: (
        Annotated[list[Identifier], Field(min_length=1, max_length=MAX_CANDIDATES)] | None
    ) = Field(None, description="default: the agents that wrote memories in the session")


class AgentScoreOut(BaseModel):
    agent_id: str
    score: float = Field(description="0-1: how well the agent's history matches the content")
    memory_relevance: float
    procedure_score: float = Field(description="best relevant procedure: similarity × success")
    evidence: list[dict[str, Any]]


class RouteContextResult(BaseModel):
    memories: list[SearchHit] = Field(description="the session's most relevant memories")
    agent_scores: list[AgentScoreOut] = Field(description="best first")


class ArtifactAddParams(ScopeParams):
    task_id: Identifier
    session_id: Identifier
    agent_id: Identifier | None = None
    stage_id: Identifier | None = Field(None, description="default: the task's current stage")
    name: Annotated[str, StringConstraints(min_length=1, max_length=255)]
    content: Annotated[str, StringConstraints(min_length=1)] | None = None
    uri: Annotated[str, StringConstraints(min_length=1, max_length=2048)] | None = None
    participants: Annotated[list[Identifier], Field(max_length=32)] = Field(default_factory=list)


class ArtifactListParams(ScopeParams):
    task_id: Identifier
    session_id: Identifier | None = None
    stage_id: Identifier | None = None
    participant: Identifier | None = None
    cursor: Annotated[str, StringConstraints(max_length=512)] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20


def routing_methods(routing: RoutingService, artifacts: ArtifactService) -> list[RpcMethod]:
    async def route(a: RouteContextParams) -> RouteContextResult:
        found = await routing.route_context(
            a.content, a.scope_ids(), limit=a.limit, candidate_agents=a.candidate_agents
        )
        return RouteContextResult(
            memories=[SearchHit.of(s) for s in found.memories],
            agent_scores=[
                AgentScoreOut(
                    agent_id=s.agent_id,
                    score=s.score,
                    memory_relevance=s.memory_relevance,
                    procedure_score=s.procedure_score,
                    evidence=s.evidence,
                )
                for s in found.agent_scores
            ],
        )

    async def add(a: ArtifactAddParams) -> MemoryOut:
        new = NewArtifact(
            task_id=a.task_id,
            session_id=a.session_id,
            name=a.name,
            content=a.content,
            uri=a.uri,
            stage_id=a.stage_id,
            participants=a.participants,
            agent_id=a.agent_id,
        )
        return MemoryOut.of(await artifacts.add(new))

    async def list_(a: ArtifactListParams) -> ListResult:
        page = await artifacts.list(
            a.task_id,
            session_id=a.session_id,
            stage_id=a.stage_id,
            participant=a.participant,
            after=None if a.cursor is None else cursor.decode(a.cursor, "desc"),
            limit=a.limit,
        )
        return ListResult(
            memories=[MemoryOut.of(m) for m in page.memories],
            next_cursor=None if page.next_after is None else cursor.encode(page.next_after, "desc"),
            total_count=page.total_count,
        )

    return [
        RpcMethod(
            "memory.route_context",
            RouteContextParams,
            RouteContextResult,
            route,
            "For the MessageRouter: the session's memories relevant to a message and, per "
            "candidate agent, how well its memories and procedures match, with evidence.",
        ),
        RpcMethod(
            "memory.artifact.add",
            ArtifactAddParams,
            MemoryOut,
            add,
            "Store an artifact of a task's session (content or uri) as an episodic memory linked "
            "to the session and stage.",
        ),
        RpcMethod(
            "memory.artifact.list",
            ArtifactListParams,
            ListResult,
            list_,
            "A task's artifacts, newest first, by session, stage and participant.",
        ),
    ]
