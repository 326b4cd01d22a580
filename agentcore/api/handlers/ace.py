"""JSON-RPC methods of the ACE meta-thinker (FR-8): ``memory.ace.strategic_context``,
``memory.ace.record_intervention`` and ``memory.ace.interventions``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints

from agentcore.api.handlers.compass import TaskProgressResult
from agentcore.api.handlers.error_memory import ErrorPatternOut
from agentcore.api.handlers.stages import StageOut
from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import SearchHit
from agentcore.domain.ace import Intervention, Outcome
from agentcore.services.consumers.ace import DECISIONS, GENERAL, AceService

Share = Annotated[float, Field(ge=0, le=1, strict=False)]
DecisionType = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z][A-Za-z0-9_ -]*$"),
    Field(
        description="ACE's name for the decision: "
        + ", ".join(DECISIONS)
        + " rank memories for it; any other word ranks them by the general policy"
    ),
]
InterventionType = Annotated[
    str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")
]  # e.g. context_refresh, replan, escalate, stage_transition, error_correction


class PerformanceMetrics(BaseModel):
    """The task's figures as ACE sees them; all optional, other keys are kept as given."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    error_rate: Share | None = Field(None, description="share of the agent's steps that failed")
    progress: Share | None = Field(None, description="share of the task done")
    progress_rate: Share | None = Field(None, description="progress per step, recently")
    coherence: Share | None = Field(None, description="how consistent the agent's output is")
    coherence_history: Annotated[list[Share], Field(max_length=100)] | None = Field(
        None, description="recent coherence values, oldest first"
    )
    budget_used: Annotated[float, Field(ge=0, strict=False)] | None = Field(
        None, description="share of the task's token budget spent (1 = all of it)"
    )


class StrategicContextParams(ScopeParams):
    task_id: Identifier
    decision_type: DecisionType = GENERAL
    performance_metrics: PerformanceMetrics = Field(default_factory=PerformanceMetrics)
    query: Annotated[str, StringConstraints(min_length=1, max_length=2000)] | None = Field(
        None, description="what to look for (default: from the decision type and the brief)"
    )
    limit: Annotated[int, Field(ge=1, le=50)] = 10


class SignalOut(BaseModel):
    name: Literal[
        "error_rate",
        "stalled_progress",
        "falling_coherence",
        "repeated_error_pattern",
        "budget_nearly_spent",
    ]
    value: float
    threshold: float
    severity: Literal["warning", "critical"]
    detail: str


class RecommendationOut(BaseModel):
    action: Literal["continue", "context_refresh", "replan", "escalate"]
    reasons: list[str]


class InterventionTally(BaseModel):
    total: int
    by_outcome: dict[str, int]
    by_type: dict[str, dict[str, int]] = Field(description="{intervention_type: {outcome: n}}")


class StrategicContextResult(BaseModel):
    task_id: str
    decision_type: str = Field(description="as given")
    policy: str = Field(description="the ranking policy applied: " + ", ".join(DECISIONS))
    current_stage: StageOut | None
    relevant_memories: list[SearchHit]
    error_patterns: list[ErrorPatternOut]
    critical_facts: list[str] = Field(description="every critical constraint of the task")
    task_progress: TaskProgressResult | None = Field(description="null for a task without stages")
    signals: list[SignalOut] = Field(description="each signal over its threshold; [] when calm")
    recommended_action: RecommendationOut
    interventions: InterventionTally


class RecordInterventionParams(ScopeParams):
    task_id: Identifier
    intervention_type: InterventionType
    outcome: Literal["success", "partial", "failure"]
    memory_ids: Annotated[list[Identifier], Field(max_length=100)] = Field(
        default_factory=list,
        description="the memories the intervention relied on: their importance follows the outcome",
    )
    decision_type: DecisionType | None = None
    details: dict[str, JsonValue] = Field(default_factory=dict, max_length=64)


class ImportanceChangeOut(BaseModel):
    memory_id: str
    importance_before: float
    importance: float
    criticality: float = Field(description="the memory's criticality factor in retrieval now")
    critical: bool


class InterventionOut(BaseModel):
    id: str
    task_id: str
    agent_id: str | None
    intervention_type: str
    decision_type: str | None
    outcome: str
    memory_ids: list[str]
    details: dict[str, Any]
    changes: list[ImportanceChangeOut]
    created_at: datetime

    @classmethod
    def of(cls, i: Intervention) -> InterventionOut:
        return cls(
            id=i.id,
            task_id=i.task_id,
            agent_id=i.agent_id,
            intervention_type=i.intervention_type,
            decision_type=i.decision_type,
            outcome=i.outcome.value,
            memory_ids=list(i.memory_ids),
            details=i.details,
            changes=[ImportanceChangeOut.model_validate(c) for c in i.changes],
            created_at=i.created_at,
        )


class RecordInterventionResult(BaseModel):
    intervention_id: str
    intervention: InterventionOut
    updated: list[ImportanceChangeOut] = Field(
        description="each listed memory: importance before and after, criticality now"
    )


class InterventionsParams(ScopeParams):
    task_id: Identifier
    limit: Annotated[int, Field(ge=1, le=100)] = 20


class InterventionsResult(BaseModel):
    interventions: list[InterventionOut] = Field(description="newest first")


def ace_methods(service: AceService) -> list[RpcMethod]:
    async def strategic_context(a: StrategicContextParams) -> StrategicContextResult:
        found = await service.strategic_context(
            a.scope_ids(),
            a.decision_type,
            a.performance_metrics.model_dump(exclude_none=True),
            query=a.query,
            limit=a.limit,
        )
        progress = found.task_progress
        return StrategicContextResult(
            task_id=found.task_id,
            decision_type=found.decision_type,
            policy=found.policy,
            current_stage=None if found.current_stage is None else StageOut.of(found.current_stage),
            relevant_memories=[SearchHit.of(s) for s in found.relevant_memories],
            error_patterns=[ErrorPatternOut.of(p) for p in found.error_patterns],
            critical_facts=list(found.critical_facts),
            task_progress=None if progress is None else TaskProgressResult.of(progress),
            signals=[SignalOut.model_validate(s.to_dict()) for s in found.signals],
            recommended_action=RecommendationOut.model_validate(found.recommendation.to_dict()),
            interventions=InterventionTally.model_validate(found.interventions),
        )

    async def record(a: RecordInterventionParams) -> RecordInterventionResult:
        intervention, changes = await service.record_intervention(
            a.scope_ids(),
            a.intervention_type,
            Outcome(a.outcome),
            a.memory_ids,
            decision_type=a.decision_type,
            details=a.details,
        )
        return RecordInterventionResult(
            intervention_id=intervention.id,
            intervention=InterventionOut.of(intervention),
            updated=[ImportanceChangeOut.model_validate(c.to_dict()) for c in changes],
        )

    async def interventions(a: InterventionsParams) -> InterventionsResult:
        found = await service.interventions(a.task_id, a.limit)
        return InterventionsResult(interventions=[InterventionOut.of(i) for i in found])

    return [
        RpcMethod(
            "memory.ace.strategic_context",
            StrategicContextParams,
            StrategicContextResult,
            strategic_context,
            "What ACE needs for a decision on a task: ranked memories, error patterns, "
            "critical facts, the progress brief, signals over their thresholds and the "
            "recommended action.",
        ),
        RpcMethod(
            "memory.ace.record_intervention",
            RecordInterventionParams,
            RecordInterventionResult,
            record,
            "Record an ACE intervention and its outcome; the importance of the memories it "
            "relied on rises on success and falls on failure.",
        ),
        RpcMethod(
            "memory.ace.interventions",
            InterventionsParams,
            InterventionsResult,
            interventions,
            "The interventions recorded for a task, newest first.",
        ),
    ]
