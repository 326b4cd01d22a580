"""The ACE policy (pure): each signal against its threshold, calm metrics raise none, the
recommended action and its step-up after a failure, and the bounded importance feedback."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentcore.domain.ace import (
    AceThresholds,
    Intervention,
    Observations,
    Outcome,
    Severity,
    adjusted_importance,
    detect_signals,
    recommend,
)
from agentcore.services.consumers.ace import DECISIONS, policy_for

T0 = datetime(2026, 11, 1, tzinfo=UTC)
LIMITS = AceThresholds(stall_seconds=1800, pattern_occurrences=3)


def seen(
    metrics: dict[str, Any] | None = None,
    *,
    observed: float | None = None,
    age: float | None = None,
    patterns: list[tuple[str, int, float]] | None = None,
    budget: float = 0.0,
) -> Observations:
    return Observations(metrics or {}, observed, age, patterns or [], budget)


def names(observations: Observations) -> list[tuple[str, str]]:
    return [(s.name, s.severity.value) for s in detect_signals(observations, LIMITS)]


def past(*outcomes: tuple[str, Outcome]) -> list[Intervention]:
    """Newest first, as the repository returns them."""
    return [Intervention(f"i{n}", "t", kind, o, T0) for n, (kind, o) in enumerate(outcomes)]


def test_calm_metrics_raise_no_signal_and_recommend_continuing() -> None:
    calm = seen(
        {"error_rate": 0.1, "progress_rate": 0.2, "coherence": 0.9, "budget_used": 0.4},
        observed=0.05,
        age=600,
        patterns=[("timeouts", 2, 0.9)],
        budget=0.3,
    )
    assert detect_signals(calm, LIMITS) == []
    assert recommend([], []).action == "continue"


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        (seen({"error_rate": 0.4}), [("error_rate", "warning")]),
        (seen({"error_rate": 0.6}), [("error_rate", "critical")]),
        (seen(observed=0.35), [("error_rate", "warning")]),  # from the task's own records
        (seen({"error_rate": 0.1}, observed=0.9), []),  # the reported rate wins
        (seen({"progress_rate": 0.01}), [("stalled_progress", "warning")]),
        (seen({"progress_rate": 0.0}), [("stalled_progress", "critical")]),
        (seen(age=2000), [("stalled_progress", "warning")]),
        (seen(age=4000), [("stalled_progress", "critical")]),
        (seen({"progress_rate": 0.5}, age=9000), []),  # progress reported: the age is no sign
        (seen({"coherence": 0.5}), [("falling_coherence", "warning")]),
        (seen({"coherence": 0.2}), [("falling_coherence", "critical")]),
        (seen({"coherence_history": [0.9, 0.85, 0.7]}), [("falling_coherence", "warning")]),
        (seen({"coherence_history": [0.9, 0.88, 0.86]}), []),
        (seen(patterns=[("timeouts", 3, 0.5)]), [("repeated_error_pattern", "warning")]),
        (seen(patterns=[("timeouts", 4, 0.8)]), [("repeated_error_pattern", "critical")]),
        (seen({"budget_used": 0.9}), [("budget_nearly_spent", "warning")]),
        (seen(budget=1.0), [("budget_nearly_spent", "critical")]),
    ],
)
def test_each_signal_against_its_threshold(
    observations: Observations, expected: list[tuple[str, str]]
) -> None:
    assert names(observations) == expected


def test_a_signal_explains_itself() -> None:
    [signal] = detect_signals(seen({"error_rate": 0.45}), LIMITS)
    assert signal.to_dict() == {
        "name": "error_rate",
        "value": 0.45,
        "threshold": 0.3,
        "severity": "warning",
        "detail": "error rate 0.45 (reported) over 0.30",
    }


@pytest.mark.parametrize(
    ("observations", "action"),
    [
        (seen({"coherence": 0.5}), "context_refresh"),
        (seen({"error_rate": 0.4}), "context_refresh"),
        (seen({"error_rate": 0.7}), "replan"),
        (seen({"progress_rate": 0.0}), "replan"),
        (seen(patterns=[("timeouts", 3, 0.5)], metrics={"coherence": 0.5}), "replan"),
        (seen(budget=1.0), "escalate"),
    ],
)
def test_the_strongest_action_the_signals_call_for(observations: Observations, action: str) -> None:
    signals = detect_signals(observations, LIMITS)
    recommendation = recommend(signals, [])
    assert recommendation.action == action
    assert len(recommendation.reasons) == len(signals)


def test_an_action_that_just_failed_is_stepped_up() -> None:
    signals = detect_signals(seen({"coherence": 0.5}), LIMITS)
    assert recommend(signals, past(("context_refresh", Outcome.SUCCESS))).action == (
        "context_refresh"
    )
    stepped = recommend(signals, past(("context_refresh", Outcome.FAILURE)))
    assert stepped.action == "replan"
    assert (
        stepped.reasons[-1] == "the last context_refresh of this task failed; stepping up to replan"
    )


def test_critical_errors_after_two_failed_interventions_escalate() -> None:
    signals = detect_signals(seen({"error_rate": 0.7}), LIMITS)
    one = past(("replan", Outcome.SUCCESS), ("context_refresh", Outcome.FAILURE))
    assert recommend(signals, one).action == "replan"
    two = past(("replan", Outcome.FAILURE), ("context_refresh", Outcome.FAILURE))
    assert recommend(signals, two).action == "escalate"


@pytest.mark.parametrize(
    ("current", "outcome", "expected"),
    [
        (0.5, Outcome.SUCCESS, 0.6),
        (0.95, Outcome.SUCCESS, 1.0),  # bounded above
        (0.5, Outcome.FAILURE, 0.4),
        (0.15, Outcome.FAILURE, 0.1),  # bounded below by the floor
        (0.5, Outcome.PARTIAL, 0.5),
    ],
)
def test_importance_follows_the_outcome_within_bounds(
    current: float, outcome: Outcome, expected: float
) -> None:
    assert adjusted_importance(current, outcome, 0.1, 0.1) == expected


@pytest.mark.parametrize(
    ("decision_type", "policy"),
    [
        *((name, name) for name in DECISIONS),
        ("Error-Recovery", "error_recovery"),
        (" stage transition ", "stage_transition"),
        ("intervention", "general"),
        ("handoff", "general"),
    ],
)
def test_a_decision_type_is_ranked_by_its_policy_or_the_general_one(
    decision_type: str, policy: str
) -> None:
    assert policy_for(decision_type) == policy
    assert Severity.CRITICAL.value == "critical"
