"""What the ACE meta-thinker asks of memory (FR-8): the signals that a task needs an
intervention, the action they recommend, and the interventions it records.

Signals, each compared with a threshold from the settings (``AceThresholds``):

- ``error_rate``: the task's error rate (``performance_metrics.error_rate``, else the share
  of the task's memories that record errors) above ``error_rate``;
- ``stalled_progress``: ``performance_metrics.progress_rate`` (progress per step, 0-1) under
  ``min_progress_rate``, or else the active stage open longer than ``stall_seconds``;
- ``falling_coherence``: ``performance_metrics.coherence`` under ``min_coherence``, or a drop
  of at least ``coherence_drop`` over ``coherence_history`` (oldest first);
- ``repeated_error_pattern``: an error pattern of the task seen ``pattern_occurrences``
  times or more (one signal per pattern);
- ``budget_nearly_spent``: the share of the budget used (``performance_metrics.budget_used``
  or the month's model budget, whichever is higher) at or above ``budget_used``.

A signal is ``critical`` when its value is twice as far from calm as the threshold (an error
rate of twice the threshold, no progress at all, coherence under half the threshold, a
severe pattern, the budget spent), else a ``warning``.

The recommended action, strongest first (``ACTIONS``): ``escalate`` when a critical error
signal persists after two failed interventions on the task, or the budget is spent;
``replan`` for stalled progress, a repeated error pattern or a critical error rate;
``context_refresh`` for falling coherence, a nearly spent budget or a raised error rate;
``continue`` when all is calm. An action whose last intervention on the task failed is not
recommended again: the next stronger one is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

CONTINUE, CONTEXT_REFRESH, REPLAN, ESCALATE = "continue", "context_refresh", "replan", "escalate"
ACTIONS = (CONTINUE, CONTEXT_REFRESH, REPLAN, ESCALATE)  # weakest first

ERROR_RATE = "error_rate"
STALLED = "stalled_progress"
COHERENCE = "falling_coherence"
PATTERN = "repeated_error_pattern"
BUDGET = "budget_nearly_spent"

# Which action each signal calls for, by severity.
_ACTION_OF = {
    (ERROR_RATE, "warning"): CONTEXT_REFRESH,
    (ERROR_RATE, "critical"): REPLAN,
    (STALLED, "warning"): REPLAN,
    (STALLED, "critical"): REPLAN,
    (COHERENCE, "warning"): CONTEXT_REFRESH,
    (COHERENCE, "critical"): CONTEXT_REFRESH,
    (PATTERN, "warning"): REPLAN,
    (PATTERN, "critical"): REPLAN,
    (BUDGET, "warning"): CONTEXT_REFRESH,
    (BUDGET, "critical"): ESCALATE,
}
FAILURES_BEFORE_ESCALATION = 2


class Outcome(StrEnum):
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"


class Severity(StrEnum):
    WARNING = "warning"
    CRITICAL = "critical"


@dataclass(frozen=True, slots=True)
class AceThresholds:
    error_rate: float = 0.3
    min_progress_rate: float = 0.05
    stall_seconds: float = 1800.0
    min_coherence: float = 0.6
    coherence_drop: float = 0.15
    pattern_occurrences: int = 3
    budget_used: float = 0.85


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    value: float
    threshold: float
    severity: Severity
    detail: str  # for people: what was measured and against what

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": round(self.value, 4),
            "threshold": self.threshold,
            "severity": self.severity.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Observations:
    """What the signals are computed from: the caller's metrics and the task's records."""

    metrics: Mapping[str, Any]
    observed_error_rate: float | None  # errors per memory of the task, when it has memories
    stage_age_seconds: float | None  # how long the active stage has been open
    patterns: Sequence[tuple[str, int, float]]  # (description, occurrences, severity 0-1)
    monthly_budget_used: float  # 0-1


@dataclass(frozen=True, slots=True)
class Intervention:
    id: str
    task_id: str
    intervention_type: str
    outcome: Outcome
    created_at: datetime
    agent_id: str | None = None
    decision_type: str | None = None
    memory_ids: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    # what the outcome changed: [{memory_id, importance_before, importance}]
    changes: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Recommendation:
    action: str
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "reasons": list(self.reasons)}


def detect_signals(seen: Observations, limits: AceThresholds) -> list[Signal]:
    """Every signal the observations raise (module doc); none when all is calm."""
    found = [
        _error_rate(seen, limits),
        _stalled(seen, limits),
        _coherence(seen.metrics, limits),
        _budget(seen, limits),
    ]
    signals = [s for s in found if s is not None]
    for description, occurrences, severity in seen.patterns:
        if occurrences >= limits.pattern_occurrences:
            level = Severity.CRITICAL if severity >= 0.7 else Severity.WARNING
            detail = f"{description} ({occurrences} times, severity {severity:.2f})"
            signals.append(Signal(PATTERN, occurrences, limits.pattern_occurrences, level, detail))
    return signals


def recommend(signals: Sequence[Signal], past: Sequence[Intervention]) -> Recommendation:
    """The action the signals call for, stepped up past an action that just failed."""
    if not signals:
        return Recommendation(CONTINUE, ("no signal over its threshold",))
    failures = sum(1 for i in past if i.outcome is Outcome.FAILURE)
    action, reasons = CONTINUE, []
    for signal in signals:
        wanted = _ACTION_OF[(signal.name, signal.severity.value)]
        if (
            signal.severity is Severity.CRITICAL
            and signal.name in (ERROR_RATE, PATTERN)
            and failures >= FAILURES_BEFORE_ESCALATION
        ):
            wanted = ESCALATE
        action = max(action, wanted, key=ACTIONS.index)
        reasons.append(f"{signal.name}: {signal.detail}")
    last = next((i for i in past if i.intervention_type == action), None)
    if last is not None and last.outcome is Outcome.FAILURE and action != ESCALATE:
        stronger = ACTIONS[ACTIONS.index(action) + 1]
        reasons.append(f"the last {action} of this task failed; stepping up to {stronger}")
        action = stronger
    return Recommendation(action, tuple(reasons))


def adjusted_importance(current: float, outcome: Outcome, step: float, floor: float) -> float:
    """Importance after an intervention's outcome: up by ``step`` on success, down on
    failure, unchanged when partial; always within [floor, 1]."""
    delta = {Outcome.SUCCESS: step, Outcome.PARTIAL: 0.0, Outcome.FAILURE: -step}[outcome]
    return round(min(1.0, max(floor, current + delta)), 4)


def _error_rate(seen: Observations, limits: AceThresholds) -> Signal | None:
    given = seen.metrics.get("error_rate")
    value = given if isinstance(given, int | float) else seen.observed_error_rate
    if value is None or value <= limits.error_rate:
        return None
    source = "reported" if isinstance(given, int | float) else "errors per memory of the task"
    level = Severity.CRITICAL if value >= 2 * limits.error_rate else Severity.WARNING
    detail = f"error rate {value:.2f} ({source}) over {limits.error_rate:.2f}"
    return Signal(ERROR_RATE, float(value), limits.error_rate, level, detail)


def _stalled(seen: Observations, limits: AceThresholds) -> Signal | None:
    rate = seen.metrics.get("progress_rate")
    if isinstance(rate, int | float):
        if rate >= limits.min_progress_rate:
            return None
        level = Severity.CRITICAL if rate <= 0 else Severity.WARNING
        detail = f"progress rate {rate:.3f} per step under {limits.min_progress_rate:.3f}"
        return Signal(STALLED, float(rate), limits.min_progress_rate, level, detail)
    age = seen.stage_age_seconds
    if age is None or age <= limits.stall_seconds:
        return None
    level = Severity.CRITICAL if age >= 2 * limits.stall_seconds else Severity.WARNING
    detail = f"the active stage has been open {age:.0f} s, over {limits.stall_seconds:.0f} s"
    return Signal(STALLED, age, limits.stall_seconds, level, detail)


def _coherence(metrics: Mapping[str, Any], limits: AceThresholds) -> Signal | None:
    value = metrics.get("coherence")
    if isinstance(value, int | float) and value < limits.min_coherence:
        level = Severity.CRITICAL if value < limits.min_coherence / 2 else Severity.WARNING
        detail = f"coherence {value:.2f} under {limits.min_coherence:.2f}"
        return Signal(COHERENCE, float(value), limits.min_coherence, level, detail)
    history = [v for v in metrics.get("coherence_history") or () if isinstance(v, int | float)]
    if len(history) >= 2:
        drop = max(history) - history[-1]
        if drop >= limits.coherence_drop:
            level = Severity.CRITICAL if drop >= 2 * limits.coherence_drop else Severity.WARNING
            detail = f"coherence fell by {drop:.2f} to {history[-1]:.2f}"
            return Signal(COHERENCE, drop, limits.coherence_drop, level, detail)
    return None


def _budget(seen: Observations, limits: AceThresholds) -> Signal | None:
    given = seen.metrics.get("budget_used")
    reported = float(given) if isinstance(given, int | float) else 0.0
    value = max(reported, seen.monthly_budget_used)
    if value < limits.budget_used:
        return None
    which = "task budget" if reported >= seen.monthly_budget_used else "monthly model budget"
    level = Severity.CRITICAL if value >= 1.0 else Severity.WARNING
    detail = f"{value:.0%} of the {which} used (threshold {limits.budget_used:.0%})"
    return Signal(BUDGET, value, limits.budget_used, level, detail)
