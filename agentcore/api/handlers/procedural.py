"""JSON-RPC methods of the procedural layer: ``memory.procedure.record`` and ``.search``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import MemoryOut
from agentcore.services.procedural import ProceduralMemoryService, ProcedureMatch

Action = Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=4_000)]


class RecordProcedureParams(ScopeParams):
    action: Action = Field(description="what was done, e.g. 'retry the request 3 times'")
    context: Text = Field(description="the situation it was done in")
    outcome: Text = Field(description="what happened")
    success: bool
    scope: str | None = Field(None, description="scope level; default: most specific id given")
    stage_id: Identifier | None = None


class SearchProceduresParams(ScopeParams):
    context: Annotated[str, Field(min_length=1)]
    scopes: Annotated[list[str], Field(min_length=1, max_length=8)] | None = None
    limit: Annotated[int, Field(ge=1, le=50)] = 5


class RecordProcedureResult(BaseModel):
    record: MemoryOut
    procedure: MemoryOut | None = Field(description="null until the pattern recurs enough")
    action_key: str = Field(description="the normalized action pattern records are grouped by")
    occurrences: int
    successes: int
    success_rate: float


class ProcedureHit(BaseModel):
    procedure: MemoryOut
    action: str
    similarity: float
    success_rate: float
    occurrences: int
    successes: int
    relevant: bool = Field(description="within the relevance band of the best match")

    @classmethod
    def of(cls, m: ProcedureMatch) -> ProcedureHit:
        return cls(
            procedure=MemoryOut.of(m.procedure),
            action=m.action,
            similarity=round(m.similarity, 6),
            success_rate=m.success_rate,
            occurrences=m.occurrences,
            successes=m.successes,
            relevant=m.relevant,
        )


class SearchProceduresResult(BaseModel):
    results: list[ProcedureHit]
    total_count: int


def procedural_methods(service: ProceduralMemoryService) -> list[RpcMethod]:
    async def record(a: RecordProcedureParams) -> RecordProcedureResult:
        out = await service.record(
            a.action,
            a.context,
            a.outcome,
            a.success,
            a.scope_ids(),
            scope_level=a.scope,
            stage_id=a.stage_id,
        )
        return RecordProcedureResult(
            record=MemoryOut.of(out.record),
            procedure=None if out.procedure is None else MemoryOut.of(out.procedure),
            action_key=out.action_key,
            occurrences=out.occurrences,
            successes=out.successes,
            success_rate=out.success_rate,
        )

    async def search(a: SearchProceduresParams) -> SearchProceduresResult:
        matches = await service.search(a.context, a.scope_ids(), scopes=a.scopes, limit=a.limit)
        return SearchProceduresResult(
            results=[ProcedureHit.of(m) for m in matches], total_count=len(matches)
        )

    return [
        RpcMethod(
            "memory.procedure.record",
            RecordProcedureParams,
            RecordProcedureResult,
            record,
            "Record an action with its context and outcome; aggregates recurring actions "
            "into procedures with success rates.",
        ),
        RpcMethod(
            "memory.procedure.search",
            SearchProceduresParams,
            SearchProceduresResult,
            search,
            "The procedures most similar to a context, best success rate first.",
        ),
    ]
