"""JSON-RPC methods of COMPASS stages: ``memory.stage.start``, ``.current`` and ``.get``.

``memory.stage.complete`` (which compresses the stage) is declared with the orchestration; it
reuses ``StageOut`` and ``StageMemoryOut`` from here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.domain.stages import Stage, StageMemory
from agentcore.services.compass.stages import StageManager

StageTypeName = Literal["planning", "execution", "reflection", "verification"]


class StartStageParams(ScopeParams):
    task_id: Identifier
    stage_type: StageTypeName
    agent_id: Identifier | None = None
    session_id: Identifier | None = None
    detect_transitions: bool = Field(
        False,
        description="let automatic detection end this stage (by default a declared stage "
        "holds until the caller completes it or starts another)",
    )
    complexity: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="how complex the work of the stage is (0-1): gentler compression"
    )


class TaskIdParams(ScopeParams):
    task_id: Identifier


class GetStageParams(ScopeParams):
    stage_id: Identifier
    task_id: Identifier | None = Field(None, description="when given, the stage must be its")


class StageOut(BaseModel):
    id: str
    task_id: str
    stage_type: str
    status: str = Field(description="active, or completed (compressed once it has a memory)")
    started_at: datetime
    completed_at: datetime | None
    agent_id: str | None
    session_id: str | None
    origin: Literal["declared", "detected"] = Field(
        description="declared by a caller (it holds), or started by automatic detection"
    )
    detect_transitions: bool = Field(description="whether detection may end this stage")
    reason: str = Field(description="why it started: explicit, or the detection's reason")
    detection: dict[str, Any] | None = Field(
        description="for a stage a memory started: signal, confidence, reason, signals "
        "(each phrase or marker seen, with its stage_type and weight), trigger_memory_id"
    )
    metadata: dict[str, Any] = Field(description="previous_stage_id, complexity")

    @classmethod
    def of(cls, s: Stage) -> StageOut:
        return cls.model_validate(s.to_dict())


class StageMemoryOut(BaseModel):
    stage_id: str
    task_id: str
    summary: str
    insights: list[str]
    critical_facts: list[str]
    raw_memory_ids: list[str]
    compression_ratio: float | None = Field(description="input tokens per output token")
    quality_metrics: dict[str, Any]
    engine: str
    fallback: bool
    cost_usd: float
    tokens_in: int
    tokens_out: int
    created_at: datetime

    @classmethod
    def of(cls, m: StageMemory) -> StageMemoryOut:
        return cls.model_validate(m.to_dict())


class StartStageResult(BaseModel):
    stage_id: str
    stage: StageOut
    previous_stage_id: str | None = Field(
        description="the stage that was active before this one (completed when it started)"
    )


class CurrentStageResult(BaseModel):
    stage: StageOut | None = Field(description="the task's active stage, or null")


class StageDetailResult(BaseModel):
    stage: StageOut
    stage_memory: StageMemoryOut | None = Field(description="null until it is compressed")


def stage_methods(service: StageManager) -> list[RpcMethod]:
    async def start(a: StartStageParams) -> StartStageResult:
        stage = await service.start(
            a.task_id,
            a.stage_type,
            agent_id=a.agent_id,
            session_id=a.session_id,
            detect_transitions=a.detect_transitions,
            metadata=None if a.complexity is None else {"complexity": a.complexity},
        )
        previous = stage.metadata.get("previous_stage_id")
        return StartStageResult(
            stage_id=stage.id,
            stage=StageOut.of(stage),
            previous_stage_id=previous if isinstance(previous, str) else None,
        )

    async def current(a: TaskIdParams) -> CurrentStageResult:
        stage = await service.current(a.task_id)
        return CurrentStageResult(stage=None if stage is None else StageOut.of(stage))

    async def get(a: GetStageParams) -> StageDetailResult:
        stage, memory = await service.detail(a.stage_id, a.task_id)
        return StageDetailResult(
            stage=StageOut.of(stage),
            stage_memory=None if memory is None else StageMemoryOut.of(memory),
        )

    return [
        RpcMethod(
            "memory.stage.start",
            StartStageParams,
            StartStageResult,
            start,
            "Declare a stage of this type the task's active stage, completing the active one "
            "(pending compression); returns the active stage itself when it has that type. "
            "Every memory added under the task joins it until it is completed or another "
            "stage starts.",
        ),
        RpcMethod(
            "memory.stage.current",
            TaskIdParams,
            CurrentStageResult,
            current,
            "The task's active stage, or null: how it was set (declared or detected) and, "
            "when detected, the detector's signals and confidence.",
        ),
        RpcMethod(
            "memory.stage.get",
            GetStageParams,
            StageDetailResult,
            get,
            "A stage and its stage memory (summary, insights, critical facts, ratio, quality, "
            "cost) once compressed.",
        ),
    ]
