"""JSON-RPC methods of error memory (FR-4): ``memory.error.record``, ``.history``, ``.patterns``.

(``agentcore.api.errors`` is the JSON-RPC error table; this module is the error *memory*.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, StringConstraints

from agentcore.api.handlers.stages import StageTypeName
from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.domain.error_records import MAX_DESCRIPTION, MAX_RECOVERY, ErrorPattern, ErrorRecord
from agentcore.services.errors import MAX_HISTORY, ErrorTracker, NewError

ErrorTypeName = Literal["hallucination", "missing_info", "incorrect_action", "context_degradation"]
Severity = Annotated[float, Field(ge=0, le=1, strict=False)]
MAX_EXAMPLES = 5


class RecordErrorParams(ScopeParams):
    task_id: Identifier
    stage_id: Identifier | None = Field(None, description="default: the task's active stage")
    agent_id: Identifier | None = None
    error_type: ErrorTypeName
    description: Annotated[str, StringConstraints(min_length=1, max_length=MAX_DESCRIPTION)]
    context: dict[str, JsonValue] = Field(
        default_factory=dict, max_length=64, description="where it happened (tool, input, ...)"
    )
    recovery_action: (
        Annotated[str, StringConstraints(min_length=1, max_length=MAX_RECOVERY)] | None
    ) = None
    severity: Severity = Field(description="0 (harmless) to 1 (the task failed)")


class ErrorHistoryParams(ScopeParams):
    task_id: Identifier | None = None
    agent_id: Identifier | None = None
    stage_type: StageTypeName | None = None
    min_severity: Severity | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_HISTORY)] = 20


class ErrorPatternsParams(ScopeParams):
    task_id: Identifier | None = None
    agent_id: Identifier | None = None


class ErrorRecordOut(BaseModel):
    error_id: str
    task_id: str
    stage_id: str | None
    stage_type: str | None
    agent_id: str | None
    error_type: str
    description: str
    context: dict[str, Any]
    recovery_action: str | None
    severity: float
    created_at: datetime

    @classmethod
    def of(cls, r: ErrorRecord) -> ErrorRecordOut:
        return cls(
            error_id=r.id,
            task_id=r.task_id,
            stage_id=r.stage_id,
            stage_type=None if r.stage_type is None else r.stage_type.value,
            agent_id=r.agent_id,
            error_type=r.error_type.value,
            description=r.description,
            context=dict(r.context),
            recovery_action=r.recovery_action,
            severity=r.severity,
            created_at=r.created_at,
        )


class ErrorPatternOut(BaseModel):
    pattern_type: Literal["frequency", "sequence", "context"]
    error_types: list[str] = Field(description="a sequence lists its types in order")
    occurrences: int
    severity: float = Field(description="0-1: recency-weighted mean severity × repetition")
    description: str
    recommendation: str
    examples: list[str] = Field(description=f"ids of up to {MAX_EXAMPLES} errors, newest first")
    source: Literal["statistical", "llm"]

    @classmethod
    def of(cls, p: ErrorPattern) -> ErrorPatternOut:
        return cls(
            pattern_type=p.pattern_type.value,
            error_types=[t.value for t in p.error_types],
            occurrences=p.occurrences,
            severity=p.severity,
            description=p.description,
            recommendation=p.recommendation,
            examples=list(p.error_ids[:MAX_EXAMPLES]),
            source=p.source.value,
        )


class RecordErrorResult(BaseModel):
    error_id: str
    error: ErrorRecordOut
    memory_ids: list[str] = Field(description="the error's memory, then its recovery's")
    patterns: list[ErrorPatternOut] = Field(description="the task's patterns (statistical)")


class ErrorHistoryResult(BaseModel):
    errors: list[ErrorRecordOut]
    count: int


class ErrorPatternsResult(BaseModel):
    patterns: list[ErrorPatternOut]
    analysed_errors: int
    llm_status: Literal["off", "used", "skipped", "over_budget", "failed"]


def error_memory_methods(tracker: ErrorTracker) -> list[RpcMethod]:
    async def record(a: RecordErrorParams) -> RecordErrorResult:
        new = NewError(
            task_id=a.task_id,
            error_type=a.error_type,
            description=a.description,
            severity=a.severity,
            stage_id=a.stage_id,
            agent_id=a.agent_id,
            context=dict(a.context),
            recovery_action=a.recovery_action,
        )
        out = await tracker.record(new)
        return RecordErrorResult(
            error_id=out.record.id,
            error=ErrorRecordOut.of(out.record),
            memory_ids=list(out.memory_ids),
            patterns=[ErrorPatternOut.of(p) for p in out.patterns],
        )

    async def history(a: ErrorHistoryParams) -> ErrorHistoryResult:
        records = await tracker.history(
            task_id=a.task_id,
            agent_id=a.agent_id,
            stage_type=a.stage_type,
            min_severity=a.min_severity,
            limit=a.limit,
        )
        return ErrorHistoryResult(
            errors=[ErrorRecordOut.of(r) for r in records], count=len(records)
        )

    async def patterns(a: ErrorPatternsParams) -> ErrorPatternsResult:
        report = await tracker.patterns(task_id=a.task_id, agent_id=a.agent_id)
        return ErrorPatternsResult(
            patterns=[ErrorPatternOut.of(p) for p in report.patterns],
            analysed_errors=report.analysed_errors,
            llm_status=report.llm_status.value,
        )

    return [
        RpcMethod(
            "memory.error.record",
            RecordErrorParams,
            RecordErrorResult,
            record,
            "Record an agent's error (and its recovery) in a task; it is also stored as a "
            "critical memory. Returns the task's error patterns after this record.",
        ),
        RpcMethod(
            "memory.error.history",
            ErrorHistoryParams,
            ErrorHistoryResult,
            history,
            "Errors of a task and/or agent, newest first, optionally of one stage type and "
            "at or above a severity.",
        ),
        RpcMethod(
            "memory.error.patterns",
            ErrorPatternsParams,
            ErrorPatternsResult,
            patterns,
            "Frequency, sequence and context patterns in the errors of a task and/or agent, "
            "each with a severity and a recommendation (plus LLM-found patterns when an LLM "
            "is configured).",
        ),
    ]
