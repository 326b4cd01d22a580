"""JSON-RPC methods of the memory lifecycle: ``memory.promote``, ``memory.session.close`` and
``memory.compact``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agentcore.api.params import Identifier, MemoryIdParams, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import MemoryOut
from agentcore.services.lifecycle.compaction import MAX_SOURCES, CompactionService
from agentcore.services.lifecycle.promotion import Promoted, PromotionService

# Every level parses: a level the hierarchy does not allow (downward, sideways, volatile) is
# INVALID_PROMOTION from the rules, a word that is no level at all INVALID_PARAMS.
TargetScope = Literal["task", "agent", "session", "user", "project", "team", "org", "company"]


class PromoteParams(MemoryIdParams):
    target_scope: TargetScope = Field(
        description="a persistent scope broader than the memory's (upward only: any other "
        "level is INVALID_PROMOTION)"
    )
    delete_original: bool = False


class PromoteResult(BaseModel):
    memory: MemoryOut = Field(description="the new memory, promoted_from_id set")
    promoted_from_id: str
    redacted: dict[str, int] = Field(description="personal data replaced, by kind")


class CloseSessionParams(ScopeParams):
    session_id: Identifier


class PromotedOut(BaseModel):
    memory_id: str
    promoted_from_id: str
    scope: str
    redacted: dict[str, int]


class CloseSessionResult(BaseModel):
    session_id: str
    flushed_working: int = Field(description="working-memory items moved to episodic memory")
    evaluated: int = Field(description="memories of the session looked at")
    promoted: list[PromotedOut]
    redacted: dict[str, int] = Field(description="personal data replaced, by kind, in all")
    skipped_sensitive: list[str] = Field(
        description="ids never promoted: marked sensitive, or holding a secret"
    )
    below_threshold: int
    already_promoted: list[str] = Field(description="ids promoted by an earlier close")
    consolidated_facts: int = Field(description="semantic facts stored or merged from the session")
    no_persistent_scope: int = Field(
        description="important memories that stay: neither the call nor they name a user or "
        "another persistent scope"
    )


class CompactParams(ScopeParams):
    memory_ids: Annotated[list[Identifier], Field(min_length=2, max_length=MAX_SOURCES)]
    content: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="the compacted text; default: the memories' sentences merged"
    )


def _promoted(p: Promoted) -> PromotedOut:
    return PromotedOut(
        memory_id=p.memory.id,
        promoted_from_id=p.source_id,
        scope=p.memory.scope_level.value,
        redacted={kind.value: n for kind, n in p.redacted.items()},
    )


def lifecycle_methods(
    promotion: PromotionService, compaction: CompactionService
) -> list[RpcMethod]:
    async def promote(a: PromoteParams) -> PromoteResult:
        done = await promotion.promote(
            a.memory_id, a.scope_ids(), a.target_scope, delete_original=a.delete_original
        )
        return PromoteResult(
            memory=MemoryOut.of(done.memory),
            promoted_from_id=done.source_id,
            redacted={kind.value: n for kind, n in done.redacted.items()},
        )

    async def close(a: CloseSessionParams) -> CloseSessionResult:
        report = await promotion.close_session(a.session_id, a.scope_ids())
        return CloseSessionResult(
            session_id=report.session_id,
            flushed_working=report.flushed_working,
            evaluated=report.evaluated,
            promoted=[_promoted(p) for p in report.promoted],
            redacted={kind.value: n for kind, n in report.redacted.items()},
            skipped_sensitive=report.skipped_sensitive,
            below_threshold=report.below_threshold,
            already_promoted=report.already_promoted,
            no_persistent_scope=report.no_persistent_scope,
            consolidated_facts=report.consolidated_facts,
        )

    async def compact(a: CompactParams) -> MemoryOut:
        return MemoryOut.of(await compaction.compact(a.memory_ids, a.scope_ids(), a.content))

    return [
        RpcMethod(
            "memory.compact",
            CompactParams,
            MemoryOut,
            compact,
            "Compact memories of one scope into one (compacted_from_ids); the originals leave "
            "search and listings but stay readable by id.",
        ),
        RpcMethod(
            "memory.promote",
            PromoteParams,
            PromoteResult,
            promote,
            "Copy a memory upward to a persistent scope, personal data redacted; the new memory "
            "carries promoted_from_id.",
        ),
        RpcMethod(
            "memory.session.close",
            CloseSessionParams,
            CloseSessionResult,
            close,
            "End a session: flush its working memory, then promote its important memories to "
            "the user (or the next persistent) scope, redacting personal data and skipping "
            "sensitive ones.",
        ),
    ]
