"""JSON-RPC methods of working memory: ``memory.working.append``, ``.get``, ``.clear``,
``.flush``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.services.working_memory import WorkingItem, WorkingMemoryService


class WorkingAppendParams(ScopeParams):
    session_id: Identifier  # required here
    content: Annotated[str, Field(min_length=1)]
    kind: Literal["message", "task", "goal"] = "message"
    role: Literal["user", "assistant", "system", "tool"] | None = None
    stage_id: Identifier | None = None


class WorkingSessionParams(ScopeParams):
    """Every method takes the same scope ids; working memory is the session's."""

    session_id: Identifier


class WorkingItemOut(BaseModel):
    id: str
    content: str
    kind: str
    role: str | None
    at: datetime
    tokens: int
    stage_id: str | None
    task_id: str | None
    agent_id: str | None
    user_id: str | None
    session_id: str | None
    project_id: str | None
    team_id: str | None
    org_id: str | None
    company_id: str | None

    @classmethod
    def of(cls, item: WorkingItem) -> WorkingItemOut:
        return cls(
            id=item.id,
            content=item.content,
            kind=item.kind.value,
            role=None if item.role is None else item.role.value,
            at=item.at,
            tokens=item.tokens,
            stage_id=item.stage_id,
            **item.scope.as_dict(),
        )


class WorkingAppendResult(BaseModel):
    item: WorkingItemOut
    items_evicted: int = Field(description="items that left for episodic memory on this append")
    evicted_ids: list[str] = Field(description="their ids, also their episodic memory ids")
    token_count: int
    max_tokens: int
    ttl_seconds: int


class WorkingGetResult(BaseModel):
    items: list[WorkingItemOut]
    token_count: int
    max_tokens: int
    ttl_seconds: int = Field(description="seconds left before the session goes idle")


class WorkingClearResult(BaseModel):
    cleared: int = Field(description="items dropped without becoming episodic memories")


class WorkingFlushResult(BaseModel):
    flushed: int = Field(description="items moved from working to episodic memory")
    memory_ids: list[str]


def working_methods(service: WorkingMemoryService) -> list[RpcMethod]:
    async def append(a: WorkingAppendParams) -> WorkingAppendResult:
        out = await service.append(
            a.scope_ids(), a.content, kind=a.kind, role=a.role, stage_id=a.stage_id
        )
        return WorkingAppendResult(
            item=WorkingItemOut.of(out.item),
            items_evicted=len(out.departed),
            evicted_ids=[item.id for item in out.departed],
            token_count=out.token_count,
            max_tokens=out.max_tokens,
            ttl_seconds=out.ttl_seconds,
        )

    async def get(a: WorkingSessionParams) -> WorkingGetResult:
        view = await service.get(a.session_id)
        return WorkingGetResult(
            items=[WorkingItemOut.of(item) for item in view.items],
            token_count=view.token_count,
            max_tokens=view.max_tokens,
            ttl_seconds=view.ttl_seconds,
        )

    async def clear(a: WorkingSessionParams) -> WorkingClearResult:
        return WorkingClearResult(cleared=await service.clear(a.session_id))

    async def flush(a: WorkingSessionParams) -> WorkingFlushResult:
        out = await service.flush(a.session_id)
        return WorkingFlushResult(flushed=out.flushed, memory_ids=out.memory_ids)

    return [
        RpcMethod(
            "memory.working.append",
            WorkingAppendParams,
            WorkingAppendResult,
            append,
            "Add a message, task or goal to a session's working memory; the oldest items "
            "move to episodic memory when the token bound is exceeded.",
        ),
        RpcMethod(
            "memory.working.get",
            WorkingSessionParams,
            WorkingGetResult,
            get,
            "A session's working memory, oldest item first.",
        ),
        RpcMethod(
            "memory.working.clear",
            WorkingSessionParams,
            WorkingClearResult,
            clear,
            "Drop a session's working memory without keeping it as episodic memory.",
        ),
        RpcMethod(
            "memory.working.flush",
            WorkingSessionParams,
            WorkingFlushResult,
            flush,
            "Move a session's working memory to episodic memory now.",
        ),
    ]
