"""The six-factor retrieval score: factors, weights and their validation, and the ranking
EnhancedRetrieval builds from them (stage-aware, criticality, precedence, contradictions)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcore.domain.critical import states_requirement
from agentcore.domain.errors import InvalidParams
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel, StageType
from agentcore.domain.records import NewMemory
from agentcore.domain.scoring import (
    FACTORS,
    FREQUENCY_SATURATION,
    ScoreContext,
    Weights,
    combine,
    criticality,
    factors,
    frequency,
    parse_current_stage,
    recency,
    stage_relevance,
)
from agentcore.services.access import AccessRecorder
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery
from agentcore.services.vector_sync import VectorSync
from tests.fakes import FakeEmbedder, FakeStore, FakeVectorStore
from tests.unit.conftest import FakeClock

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ALICE = ScopeIds(user_id="alice")


def mem(content: str = "a memory", **changes: Any) -> Memory:
    base = Memory(
        id=changes.pop("id", "m1"),
        content=content,
        layer=Layer.EPISODIC,
        scope_level=ScopeLevel.USER,
        scope=ALICE,
        created_at=T0,
        updated_at=T0,
    )
    return replace(base, **changes)


def field_names(exc: pytest.ExceptionInfo[InvalidParams]) -> set[str]:
    return {e["field"] for e in exc.value.details["errors"]}


# --- weights -------------------------------------------------------------------------------


def test_default_weights_are_design_s_and_settings_names_map_to_factors() -> None:
    assert Weights().as_dict() == {
        "similarity": 0.35,
        "recency": 0.15,
        "frequency": 0.10,
        "stage_relevance": 0.20,
        "criticality": 0.10,
        "error_correction": 0.10,
    }
    settings_style = {"relevance": 0.5, "recency": 0.1, "frequency": 0.1}
    settings_style |= {"stage_relevance": 0.1, "criticality": 0.1, "error_correction": 0.1}
    assert Weights.from_settings(settings_style).similarity == 0.5


def test_a_full_override_replaces_every_weight() -> None:
    full = dict.fromkeys(FACTORS, 0.0) | {"similarity": 0.4, "recency": 0.6}
    assert Weights().override(full).as_dict() == full


def test_a_partial_override_scales_the_other_defaults_to_fill_up_to_one() -> None:
    weights = Weights().override({"recency": 0.0, "criticality": 0.25})
    values = weights.as_dict()
    assert values["recency"] == 0.0
    assert values["criticality"] == 0.25
    assert sum(values.values()) == pytest.approx(1.0)
    # the unnamed ones keep their proportions: similarity / stage_relevance = 0.35 / 0.20
    assert values["similarity"] / values["stage_relevance"] == pytest.approx(0.35 / 0.20)
    assert values["similarity"] == pytest.approx(0.35 * 0.75 / 0.75)


@pytest.mark.parametrize(
    ("override", "fields"),
    [
        ({"similarity": -0.1}, {"scoring_weights.similarity"}),
        ({"relevance": 0.5}, {"scoring_weights.relevance"}),
        ({"recency": 1.5}, {"scoring_weights.recency"}),
        ({"recency": float("nan")}, {"scoring_weights.recency"}),
        ({"recency": 0.7, "similarity": 0.6}, {"scoring_weights"}),  # partial over 1
        (dict.fromkeys(FACTORS, 0.1), {"scoring_weights"}),  # full set summing to 0.6
        ({"bogus": 0.1, "frequency": -1.0}, {"scoring_weights.bogus", "scoring_weights.frequency"}),
    ],
)
def test_invalid_overrides_name_the_failing_fields(
    override: dict[str, float], fields: set[str]
) -> None:
    with pytest.raises(InvalidParams) as exc:
        Weights().override(override)
    assert field_names(exc) == fields


def test_a_partial_override_cannot_leave_a_gap_the_defaults_cannot_fill() -> None:
    only_similarity = Weights.of(dict.fromkeys(FACTORS, 0.0) | {"similarity": 1.0})
    with pytest.raises(InvalidParams) as exc:
        only_similarity.override({"similarity": 0.5})
    assert field_names(exc) == {"scoring_weights"}
    assert only_similarity.override({"similarity": 0.0, "recency": 1.0}).recency == 1.0


def test_weights_from_settings_are_checked_too() -> None:
    with pytest.raises(InvalidParams) as exc:
        Weights.of({"similarity": 1.0})
    assert "weights.recency" in field_names(exc)


# --- factors -------------------------------------------------------------------------------


def test_recency_halves_every_half_life_from_the_last_update_or_access() -> None:
    memory = mem(updated_at=T0)
    assert recency(memory, T0, 24) == 1.0
    assert recency(memory, T0 + timedelta(hours=24), 24) == pytest.approx(0.5)
    assert recency(memory, T0 + timedelta(hours=72), 24) == pytest.approx(0.125)
    used = replace(memory, last_accessed_at=T0 + timedelta(hours=48))
    assert recency(used, T0 + timedelta(hours=72), 24) == pytest.approx(0.5)
    assert recency(memory, T0 - timedelta(hours=1), 24) == 1.0  # clock skew: never above 1


def test_frequency_is_log_scaled_and_saturates() -> None:
    values = [frequency(n) for n in (0, 1, 2, 5, 10, FREQUENCY_SATURATION, 1_000)]
    assert values[0] == 0.0
    assert values == sorted(values)
    assert values[-2] == values[-1] == 1.0
    # the first accesses count most
    assert values[1] - values[0] > values[4] - values[3]


def test_criticality_of_a_critical_memory_is_double_a_plain_one_s() -> None:
    plain, critical = mem(), mem(critical=True)
    assert criticality(critical) == 2 * criticality(plain) == 1.0
    ctx = ScoreContext(now=T0)
    gain = combine(factors(critical, 0.6, ctx), ctx.weights) - combine(
        factors(plain, 0.6, ctx), ctx.weights
    )
    assert gain == pytest.approx(0.10 * 0.5)


def test_the_score_is_the_weighted_sum_of_six_factors_in_unit_range() -> None:
    ctx = ScoreContext(
        now=T0 + timedelta(hours=168),
        current_stage=StageType.EXECUTION,
        error_correction={"m1": 0.8},
    )
    memory = mem(access_count=3, critical=True, metadata={"kind": "tool_call"})
    values = factors(memory, 1.7, ctx)  # relevance above 1 is clipped
    assert set(values) == set(FACTORS)
    assert all(0.0 <= v <= 1.0 for v in values.values())
    assert values["similarity"] == 1.0
    assert values["recency"] == pytest.approx(0.5)
    assert values["error_correction"] == 0.8
    expected = sum(w * values[name] for name, w in ctx.weights.as_dict().items())
    assert combine(values, ctx.weights) == pytest.approx(expected)


def test_without_a_current_stage_stage_relevance_is_neutral_for_everyone() -> None:
    memories = [
        mem(metadata={"kind": "plan"}),
        mem(layer=Layer.PROCEDURAL),
        mem("Lesson learned: always pin versions"),
        mem(),
    ]
    assert {stage_relevance(m, None, {}) for m in memories} == {0.5}


def test_stage_relevance_follows_the_memory_s_stage_kind_layer_and_cues() -> None:
    stage_types = {"s-plan": StageType.PLANNING}
    in_planning = mem(stage_id="s-plan")
    assert stage_relevance(in_planning, StageType.PLANNING, stage_types) == 1.0
    assert stage_relevance(in_planning, StageType.EXECUTION, stage_types) == 0.0
    tool = mem(metadata={"kind": "tool_call"})
    assert stage_relevance(tool, StageType.EXECUTION, {}) > 0.9
    assert stage_relevance(tool, StageType.PLANNING, {}) < 0.1
    procedure = mem(layer=Layer.PROCEDURAL)
    assert stage_relevance(procedure, StageType.EXECUTION, {}) == pytest.approx(0.9)
    criteria = mem(metadata={"kind": "success_criteria"})
    assert stage_relevance(criteria, StageType.VERIFICATION, {}) > 0.9
    lesson = mem("Lesson learned: the cache must be warmed before the load test.")
    assert stage_relevance(lesson, StageType.REFLECTION, {}) > 0.8
    plain = mem("Caroline adopted a dog named Max")
    assert stage_relevance(plain, StageType.REFLECTION, {}) == 0.5


def test_an_unknown_current_stage_is_an_invalid_param() -> None:
    assert parse_current_stage("Execution ") is StageType.EXECUTION
    with pytest.raises(InvalidParams) as exc:
        parse_current_stage("dreaming")
    assert field_names(exc) == {"current_stage"}


# --- automatic criticality (keyword part of FR-5.2) ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The report must be under 500 words.",
        "Budget must not exceed $5000.",
        "All pull requests must be reviewed by two people.",
        "It must be reviewed by security.",
        "Never deploy on Fridays.",
        "Always run the test suite before merging.",
        "Do not share credentials with third parties.",
        "Approval is required before any production change.",
        "Requirement: the service answers within 100 ms.",
        "Constraint: stay within the EU region.",
        "Submit the final report by Friday.",
        "The deadline is May 3.",
        "Keep answers to no more than 3 sentences.",
        "Writes are not allowed during the freeze.",
        "The user is allergic to peanuts.",
        "Context first. Responses must be valid JSON.",
    ],
)
def test_constraints_and_requirements_are_detected(text: str) -> None:
    assert states_requirement(text)


@pytest.mark.parametrize(
    "text",
    [
        "That must be hard.",
        "You must try it!",
        "It must have felt great to finally win.",
        "Getting to meet new pups must bring so much happiness.",
        "I always cherish that.",
        "It's always fun experimenting in the kitchen.",
        "Don't worry about it.",
        "Don't give up, buddy!",
        "Never heard of it, but it sounds interesting.",
        "Is approval required?",
        "It required some time off and physical therapy.",
        "I looked at the visa requirements for some places.",
        "We went there before Friday.",
        "I ran at least 5 km.",
    ],
)
def test_chat_is_not_a_requirement(text: str) -> None:
    assert not states_requirement(text)


# --- ranking in EnhancedRetrieval ----------------------------------------------------------


@dataclass
class Rig:
    memory: MemoryManager
    store: FakeStore
    access: AccessRecorder
    clock: FakeClock


@pytest.fixture
def rig() -> Rig:
    store, vectors, embedder, clock = FakeStore(), FakeVectorStore(), FakeEmbedder(), FakeClock()
    access = AccessRecorder(store)
    retrieval = EnhancedRetrieval(store, vectors, embedder, clock, 200, access=access)
    sync = VectorSync(store, vectors, embedder, clock)
    memory = MemoryManager(store, embedder, sync, retrieval, clock, 500, 10)
    return Rig(memory, store, access, clock)


async def test_every_result_carries_six_factors_and_the_weights(rig: Rig) -> None:
    await rig.memory.add(NewMemory("alice drinks green tea", ALICE))
    outcome = await rig.memory.search(SearchQuery("green tea", ALICE))
    assert outcome.weights == Weights().as_dict()
    hit = outcome.results[0]
    assert set(hit.factors) == set(FACTORS)
    assert hit.score == pytest.approx(combine(hit.factors, Weights()))
    assert hit.contradicts == ()
    assert hit.superseded_by is None


async def test_the_memory_fitting_the_current_stage_ranks_first(rig: Rig) -> None:
    text = "deploy the billing service"
    plan = await rig.memory.add(NewMemory(text, ALICE, metadata={"kind": "plan"}))
    call = await rig.memory.add(NewMemory(text, ALICE, metadata={"kind": "tool_call"}))
    for stage, first in (("planning", plan), ("execution", call)):
        found = await rig.memory.search(SearchQuery(text, ALICE, current_stage=stage))
        assert found.results[0].memory.id == first.id
        assert found.results[0].similarity == found.results[1].similarity


async def test_a_critical_memory_ranks_above_an_equal_plain_one(rig: Rig) -> None:
    text = "the staging database password rotates monthly"
    plain = await rig.memory.add(NewMemory(text, ALICE))
    critical = await rig.memory.add(NewMemory(text, ALICE, critical=True))
    found = (await rig.memory.search(SearchQuery(text, ALICE))).results
    assert [r.memory.id for r in found] == [critical.id, plain.id]
    assert found[0].score - found[1].score == pytest.approx(0.05, abs=1e-3)


async def test_an_override_changes_the_order(rig: Rig) -> None:
    similar = await rig.memory.add(NewMemory("green tea every morning for alice", ALICE))
    critical = await rig.memory.add(NewMemory("alice hates coffee", ALICE, critical=True))
    query = "green tea every morning"
    default = await rig.memory.search(SearchQuery(query, ALICE))
    assert default.results[0].memory.id == similar.id
    weights = {"similarity": 0.0, "criticality": 1.0}
    boosted = await rig.memory.search(SearchQuery(query, ALICE, scoring_weights=weights))
    assert boosted.results[0].memory.id == critical.id
    assert boosted.weights["criticality"] == 1.0


async def test_invalid_search_params_fail_before_any_work(rig: Rig) -> None:
    bad: list[dict[str, Any]] = [
        {"scoring_weights": {"recency": -1.0}},
        {"current_stage": "dreaming"},
        {"order_by": "random"},
    ]
    for params in bad:
        with pytest.raises(InvalidParams):
            await rig.memory.search(SearchQuery("tea", ALICE, **params))


async def test_precedence_order_puts_the_most_specific_scope_first(rig: Rig) -> None:
    both = ScopeIds(user_id="alice", task_id="t1")
    broad = await rig.memory.add(
        NewMemory("release notes for version two", both, scope_level="user")
    )
    task = await rig.memory.add(NewMemory("release notes", both, scope_level="task"))
    by_score = await rig.memory.search(SearchQuery("release notes for version two", both))
    assert [r.memory.id for r in by_score.results] == [broad.id, task.id]
    query = SearchQuery("release notes for version two", both, order_by="precedence")
    by_precedence = await rig.memory.search(query)
    assert [r.memory.id for r in by_precedence.results] == [task.id, broad.id]


async def test_contradicting_results_are_flagged_and_the_newer_is_preferred(rig: Rig) -> None:
    # Two numbers for one meeting: no attribute slot (that is a knowledge update, below), a
    # contradiction between the results only.
    old = await rig.memory.add(NewMemory("The design review is at 3pm on Friday.", ALICE))
    rig.clock.advance(3600)
    new = await rig.memory.add(NewMemory("The design review is at 5pm on Friday", ALICE))
    await rig.memory.add(NewMemory("The review of the budget went well on Friday", ALICE))
    query = SearchQuery("is the design review at 3pm on Friday", ALICE)
    found = (await rig.memory.search(query)).results
    ids = [r.memory.id for r in found]
    by_id = {r.memory.id: r for r in found}
    assert ids.index(new.id) < ids.index(old.id)
    assert by_id[old.id].superseded_by == new.id
    assert by_id[new.id].superseded_by is None
    assert by_id[old.id].contradicts == (new.id,)
    assert by_id[new.id].contradicts == (old.id,)
    assert by_id[old.id].score > by_id[new.id].score  # ranked after despite the higher score


async def test_search_counts_accesses_in_the_background(rig: Rig) -> None:
    stored = await rig.memory.add(NewMemory("alice drinks green tea", ALICE))
    for _ in range(3):
        await rig.memory.search(SearchQuery("green tea", ALICE))
    assert rig.store.state.memories[stored.id].access_count == 0  # the search path wrote nothing
    assert await rig.access.flush() == 1
    flushed = rig.store.state.memories[stored.id]
    assert flushed.access_count == 3
    assert flushed.last_accessed_at is not None
    again = (await rig.memory.search(SearchQuery("green tea", ALICE))).results[0]
    assert again.factors["frequency"] == pytest.approx(frequency(3))
