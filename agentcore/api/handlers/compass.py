"""JSON-RPC methods of COMPASS compression: memory.stage.complete, memory.task.progress and
memory.task.context."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from agentcore.api.handlers.stages import StageMemoryOut, StageOut, TaskIdParams
from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.domain.stages import TaskContext
from agentcore.services.compass.orchestration import CompassService


class CompleteStageParams(ScopeParams):
    task_id: Identifier
    stage_id: Identifier
    wait: bool = Field(True, description="wait for the compression (else a job_id is returned)")


class CompleteStageResult(BaseModel):
    stage: StageOut
    stage_memory: StageMemoryOut | None = Field(
        description="summary, insights, critical_facts, compression_ratio, quality_metrics, "
        "cost, raw_memory_ids; null while the compression job runs"
    )
    job_id: str | None = Field(description="read it with memory.job.get")


class TaskProgressResult(BaseModel):
    task_id: str
    progress_summary: str
    current_stage_id: str | None
    completed_stages: list[str]
    critical_constraints: list[str]
    performance_metrics: dict[str, Any]
    updated_at: datetime

    @classmethod
    def of(cls, c: TaskContext) -> TaskProgressResult:
        return cls(
            task_id=c.task_id,
            progress_summary=c.progress_summary,
            current_stage_id=c.current_stage_id,
            completed_stages=list(c.completed_stage_ids),
            critical_constraints=list(c.critical_constraints),
            performance_metrics=c.performance_metrics,
            updated_at=c.updated_at,
        )


class TaskContextParams(ScopeParams):
    task_id: Identifier
    level: Literal["raw", "stage", "task"] = "task"
    max_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = None


class ContextItem(BaseModel):
    kind: str  # critical_constraints, task_brief, stage_summary or memory
    text: str
    stage_id: str | None = None
    stage_type: str | None = None
    memory_id: str | None = None


class TaskContextResult(BaseModel):
    task_id: str
    level: str
    text: str
    token_count: int
    truncated: bool = Field(description="older items were left out to fit max_tokens")
    items: list[ContextItem]


def compass_methods(service: CompassService) -> list[RpcMethod]:
    async def complete(a: CompleteStageParams) -> CompleteStageResult:
        done = await service.complete_stage(a.task_id, a.stage_id, wait=a.wait)
        memory = done.stage_memory
        return CompleteStageResult(
            stage=StageOut.of(done.stage),
            stage_memory=None if memory is None else StageMemoryOut.of(memory),
            job_id=done.job_id,
        )

    async def progress(a: TaskIdParams) -> TaskProgressResult:
        return TaskProgressResult.of(await service.task_progress(a.task_id))

    async def context(a: TaskContextParams) -> TaskContextResult:
        view = await service.task_context(a.task_id, a.level, a.max_tokens)
        return TaskContextResult(
            task_id=view.task_id,
            level=view.level,
            text=view.text,
            token_count=view.token_count,
            truncated=view.truncated,
            items=[ContextItem.model_validate(item) for item in view.items],
        )

    return [
        RpcMethod(
            "memory.stage.complete",
            CompleteStageParams,
            CompleteStageResult,
            complete,
            "Complete a stage and compress its raw memories (~10:1) into its stage memory.",
        ),
        RpcMethod(
            "memory.task.progress",
            TaskIdParams,
            TaskProgressResult,
            progress,
            "The task's progress brief (~5:1 over its stage summaries), stages and constraints.",
        ),
        RpcMethod(
            "memory.task.context",
            TaskContextParams,
            TaskContextResult,
            context,
            "The task's context at level raw, stage or task, within max_tokens.",
        ),
    ]
