"""The ACE meta-thinker's view of a task (FR-8): strategic context for a decision, and the
interventions it records, whose outcomes feed back into the importance of the memories they
relied on.

``strategic_context`` gathers in one call what ACE decides on: the memories ranked for the
decision type and the task's current stage, shifted towards what the signals say the task
needs (errors → what corrected errors, stalled progress → plans and strategies, falling
coherence → critical facts), the task's error patterns, every critical
constraint of the task, its progress brief, the signals over their thresholds and the action
they recommend (``agentcore.domain.ace``), and the count of past interventions by type and
outcome.

``record_intervention`` stores an intervention and, in the same transaction, moves the
importance of the memories it names (up on success, down on failure, bounded), each change in
the memory's history with the actor ``ace:<intervention id>``. A memory's importance is its
criticality factor in retrieval unless it is flagged critical (``agentcore.domain.scoring``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcore.domain.ace import (
    COHERENCE,
    ERROR_RATE,
    PATTERN,
    STALLED,
    AceThresholds,
    Intervention,
    Observations,
    Outcome,
    Recommendation,
    Signal,
    adjusted_importance,
    detect_signals,
    recommend,
)
from agentcore.domain.clock import Clock
from agentcore.domain.error_records import ErrorPattern
from agentcore.domain.errors import TaskNotFound
from agentcore.domain.models import Memory, ScopeIds, StageType, new_id
from agentcore.domain.scoring import criticality
from agentcore.domain.stages import Stage, StageStatus, TaskContext
from agentcore.services.compass.orchestration import CompassService
from agentcore.services.compass.stages import StageManager
from agentcore.services.costs import CostTracker
from agentcore.services.errors import MAX_HISTORY, ErrorTracker
from agentcore.services.memory_manager import ListRequest, MemoryManager
from agentcore.services.ports import UnitOfWork, UnitOfWorkFactory
from agentcore.services.ranked import ScoredMemory
from agentcore.services.retrieval import SearchQuery

PAST_INTERVENTIONS = 20  # the newest interventions the recommendation looks at
# What a signal makes worth more in the ranking: (weight, at least this value).
SIGNAL_NEEDS = {
    ERROR_RATE: ("error_correction", 0.25),
    PATTERN: ("error_correction", 0.25),
    COHERENCE: ("criticality", 0.25),
    STALLED: ("stage_relevance", 0.3),
}
MAX_OVERRIDE = 0.6  # the overridden weights together, at most


@dataclass(frozen=True, slots=True)
class Decision:
    """How memories are ranked for one kind of decision: the stage whose memories fit it
    (None: the task's current stage), partial weight overrides, and what to look for."""

    stage: StageType | None
    weights: Mapping[str, float]
    looking_for: str


DECISIONS = {
    "general": Decision(None, {}, "the task, its goal and where it stands"),
    "stage_transition": Decision(None, {"recency": 0.2}, "results and open points of the stage"),
    "context_refresh": Decision(
        None, {"criticality": 0.25}, "constraints, goals and decisions of the task"
    ),
    "replan": Decision(
        StageType.PLANNING, {"error_correction": 0.15}, "the plan, its steps and what failed"
    ),
    "error_recovery": Decision(
        StageType.REFLECTION, {"error_correction": 0.25}, "errors, their causes and the fixes"
    ),
    "escalation": Decision(
        None, {"criticality": 0.2, "error_correction": 0.2}, "what blocks the task"
    ),
}
GENERAL = "general"


def policy_for(decision_type: str) -> str:
    """The ranking policy of a decision type: a known one (case, spaces and hyphens aside),
    else the general policy. ACE's vocabulary is its own ("intervention", "handoff", …); a
    word the service does not know still gets a context, ranked for the task as a whole."""
    name = "_".join(decision_type.strip().lower().replace("-", " ").split())
    return name if name in DECISIONS else GENERAL


@dataclass(frozen=True, slots=True)
class StrategicContext:
    task_id: str
    decision_type: str  # as ACE named it
    policy: str  # the ranking policy applied: a key of DECISIONS
    current_stage: Stage | None
    relevant_memories: list[ScoredMemory]
    error_patterns: list[ErrorPattern]
    critical_facts: tuple[str, ...]
    task_progress: TaskContext | None
    signals: list[Signal]
    recommendation: Recommendation
    interventions: dict[str, Any]  # total, by_outcome, by_type {type: {outcome: n}}


@dataclass(frozen=True, slots=True)
class ImportanceChange:
    memory_id: str
    importance_before: float
    importance: float
    criticality: float  # the retrieval factor now
    critical: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "importance_before": self.importance_before,
            "importance": self.importance,
            "criticality": self.criticality,
            "critical": self.critical,
        }


@dataclass(frozen=True, slots=True)
class AceSettings:
    thresholds: AceThresholds = field(default_factory=AceThresholds)
    feedback_step: float = 0.1
    importance_floor: float = 0.1


class AceService:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        memory: MemoryManager,
        stages: StageManager,
        compass: CompassService,
        errors: ErrorTracker,
        costs: CostTracker,
        clock: Clock,
        settings: AceSettings,
    ) -> None:
        self._uow_factory = uow_factory
        self._memory = memory
        self._stages = stages
        self._compass = compass
        self._errors = errors
        self._costs = costs
        self._clock = clock
        self._settings = settings

    async def strategic_context(
        self,
        scope: ScopeIds,
        decision_type: str,
        performance_metrics: Mapping[str, Any],
        *,
        query: str | None = None,
        limit: int = 10,
    ) -> StrategicContext:
        """Everything ACE weighs for a ``decision_type`` (ranked by ``policy_for`` it) on the
        task of ``scope`` (module doc). ``TaskNotFound`` when nothing is known about the task."""
        task_id = _task_of(scope)
        stages = await self._stages.stages_of(task_id)
        progress = await self._compass.task_progress(task_id) if stages else None
        active = next((s for s in stages if s.status is StageStatus.ACTIVE), None)
        errors = await self._errors.history(task_id=task_id, limit=MAX_HISTORY)
        patterns = (await self._errors.patterns(task_id=task_id)).patterns
        seen = Observations(
            metrics=performance_metrics,
            observed_error_rate=await self._error_rate(scope, len(errors)),
            stage_age_seconds=None
            if active is None
            else (self._clock() - active.started_at).total_seconds(),
            patterns=[(p.description, p.occurrences, p.severity) for p in patterns],
            monthly_budget_used=min((await self._costs.budget_status()).used_pct / 100, 1.0),
        )
        signals = detect_signals(seen, self._settings.thresholds)
        policy = policy_for(decision_type)
        decision = DECISIONS[policy]
        stage, weights = _ranking(decision, active, signals)
        search = await self._memory.search(
            SearchQuery(
                query=_query(query, decision, progress),
                scope=scope,
                limit=limit,
                current_stage=None if stage is None else stage.value,
                scoring_weights=weights or None,
            )
        )
        if not stages and not errors and not search.results:
            raise TaskNotFound(f"nothing is known about task {task_id}")
        async with self._uow_factory(read_only=True) as uow:
            past = await uow.interventions.of_task(task_id, PAST_INTERVENTIONS)
            counts = await uow.interventions.count(task_id)
        return StrategicContext(
            task_id=task_id,
            decision_type=decision_type,
            policy=policy,
            current_stage=active,
            relevant_memories=search.results,
            error_patterns=patterns,
            critical_facts=() if progress is None else progress.critical_constraints,
            task_progress=progress,
            signals=signals,
            recommendation=recommend(signals, past),
            interventions=_tally(counts),
        )

    async def record_intervention(
        self,
        scope: ScopeIds,
        intervention_type: str,
        outcome: Outcome,
        memory_ids: Sequence[str] = (),
        *,
        decision_type: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> tuple[Intervention, list[ImportanceChange]]:
        """Store the intervention and apply its outcome to the memories it names, in one
        transaction. ``MemoryNotFound`` (nothing stored) when a memory is not visible to
        ``scope``."""
        task_id = _task_of(scope)
        intervention_id = new_id()
        step, floor = self._settings.feedback_step, self._settings.importance_floor

        def importance(memory: Memory) -> float:
            return adjusted_importance(memory.importance, outcome, step, floor)

        intervention = Intervention(
            id=intervention_id,
            task_id=task_id,
            intervention_type=intervention_type,
            outcome=outcome,
            created_at=self._clock(),
            agent_id=scope.agent_id,
            decision_type=decision_type,
            memory_ids=tuple(dict.fromkeys(memory_ids)),
            details=dict(details or {}),
        )
        changes: list[ImportanceChange] = []

        async def store(uow: UnitOfWork, changed: list[tuple[Memory, float]]) -> None:
            changes.extend(
                ImportanceChange(m.id, before, m.importance, criticality(m), m.critical)
                for m, before in changed
            )
            record = replace(intervention, changes=tuple(c.to_dict() for c in changes))
            await uow.interventions.add(record)

        await self._memory.reweigh(
            intervention.memory_ids, scope, importance, f"ace:{intervention_id}", then=store
        )
        return replace(intervention, changes=tuple(c.to_dict() for c in changes)), changes

    async def interventions(self, task_id: str, limit: int) -> list[Intervention]:
        """The task's interventions, newest first."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.interventions.of_task(task_id, limit)

    async def _error_rate(self, scope: ScopeIds, errors: int) -> float | None:
        """Errors recorded per memory of the task (each error is also stored as memories)."""
        page = await self._memory.list_page(ListRequest(ScopeIds(task_id=scope.task_id), limit=1))
        return None if page.total_count == 0 else min(errors / page.total_count, 1.0)


def _task_of(scope: ScopeIds) -> str:
    assert scope.task_id is not None, "ACE calls are about a task"
    return scope.task_id


def _ranking(
    decision: Decision, active: Stage | None, signals: Sequence[Signal]
) -> tuple[StageType | None, dict[str, float]]:
    """The stage and weight overrides that rank memories for the decision, shifted by what
    the signals say the task needs (FR-8, "context needs"): errors → what corrected errors,
    stalled progress → plans and strategies, falling coherence → critical facts."""
    stage = decision.stage or (None if active is None else active.stage_type)
    weights = dict(decision.weights)
    for signal in signals:
        need = SIGNAL_NEEDS.get(signal.name)
        if need is not None:
            weights[need[0]] = max(weights.get(need[0], 0.0), need[1])
        if signal.name == STALLED and decision.stage is None:
            stage = StageType.PLANNING
    total = sum(weights.values())
    if total > MAX_OVERRIDE:  # leave similarity and recency their share
        weights = {name: value * MAX_OVERRIDE / total for name, value in weights.items()}
    return stage, weights


def _query(query: str | None, decision: Decision, progress: TaskContext | None) -> str:
    if query:
        return query
    brief = "" if progress is None else progress.progress_summary[:600]
    return f"{decision.looking_for}. {brief}".strip()


def _tally(counts: Mapping[tuple[str, str], int]) -> dict[str, Any]:
    by_outcome: Counter[str] = Counter()
    by_type: dict[str, dict[str, int]] = {}
    for (kind, outcome), n in sorted(counts.items()):
        by_outcome[outcome] += n
        by_type.setdefault(kind, {})[outcome] = n
    return {"total": sum(by_outcome.values()), "by_outcome": dict(by_outcome), "by_type": by_type}
