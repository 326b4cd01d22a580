"""Contradiction detection between memories: crafted pairs that must be flagged (and how),
paraphrases and compatible facts that must not, and which memory is preferred."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentcore.domain.contradictions import (
    clauses,
    find_contradictions,
    preferred,
    resolve,
    superseded_last,
    text_conflict,
)
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def conflict(a: str, b: str) -> str | None:
    return text_conflict(clauses(a), clauses(b))


def mem(memory_id: str, content: str, **changes: Any) -> Memory:
    base = Memory(
        id=memory_id,
        content=content,
        layer=Layer.SEMANTIC,
        scope_level=ScopeLevel.USER,
        scope=ScopeIds(user_id="u", task_id="t"),
        created_at=T0,
        updated_at=T0,
    )
    return replace(base, **changes)


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("Jo lives in Paris.", "Jo lives in Berlin.", "value"),
        ("Jo works at Acme.", "Jo works at Initech.", "value"),
        ("Jo's favorite color is blue.", "Jo's favorite color is red.", "value"),
        ("Jo likes tea.", "Jo does not like tea.", "negation"),
        ("The API key is rotated weekly.", "The API key is never rotated weekly.", "negation"),
        ("The meeting is at 3pm on Friday.", "The meeting is at 5pm on Friday.", "number"),
        ("Jo has 2 kids.", "Jo has 3 kids.", "number"),
        ("Jo is 30 years old.", "Jo is 32 years old.", "number"),
        ("Sure. Jo lives in Paris, and she loves it.", "Jo lives in Berlin.", "value"),
    ],
)
def test_contradictions_are_found(a: str, b: str, kind: str) -> None:
    assert conflict(a, b) == kind
    assert conflict(b, a) == kind


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # paraphrases
        ("Jo lives in Paris.", "Jo's home is in Paris."),
        ("Jo likes tea.", "Jo enjoys tea."),
        ("Jo does not eat meat.", "Jo never eats meat."),
        ("Jo is not happy.", "Jo is unhappy."),
        ("The meeting is at 3pm on Friday.", "On Friday the meeting starts at 3pm."),
        ("No, Jo likes tea.", "Jo likes tea."),
        ("They bring so much joy.", "Yeah, they really do bring joy, don't they."),
        # different facts that can both be true
        ("Jo likes tea.", "Jo doesn't like coffee."),
        ("Jo eats meat.", "Jo does not eat fish."),
        ("Jo likes tea.", "Jo likes coffee."),
        ("Jo works hard.", "Jo works late."),
        ("Jo went to Paris.", "Jo went to Berlin."),
        ("Jo likes tea and coffee.", "Jo likes tea."),
        ("Keep going!", "Keep going and never give up!"),
        ("Max is old, he is 8 years old.", "She is younger, she is 5 years old."),
        # a question states nothing
        ("Does Jo like tea?", "Jo does not like tea."),
        ("Jo lives in Paris.", "Jo lives in Paris."),
    ],
)
def test_paraphrases_and_compatible_facts_are_not_flagged(a: str, b: str) -> None:
    assert conflict(a, b) is None
    assert conflict(b, a) is None


def test_the_more_specific_scope_wins_then_the_newer_update() -> None:
    user_old = mem("a", "Jo lives in Paris.")
    user_new = mem("b", "Jo lives in Berlin.", updated_at=T0 + timedelta(days=1))
    task_old = mem("c", "Jo lives in Rome.", scope_level=ScopeLevel.TASK)
    assert preferred(user_old, user_new) is user_new
    assert preferred(user_new, user_old) is user_new
    assert preferred(user_new, task_old) is task_old  # task beats user though older


def test_resolve_flags_both_sides_and_orders_the_superseded_after_the_preferred() -> None:
    old = mem("old", "Jo lives in Paris.")
    unrelated = mem("x", "The office opens at nine.")
    new = mem("new", "Jo lives in Berlin.", updated_at=T0 + timedelta(hours=1))
    ranked = [old, unrelated, new]
    resolution = resolve(ranked)
    assert resolution.contradicts == {"old": ["new"], "new": ["old"]}
    assert resolution.superseded_by == {"old": "new"}
    ordered = superseded_last(ranked, lambda m: m.id, resolution.superseded_by)
    assert [m.id for m in ordered] == ["x", "new", "old"]


def test_a_chain_of_supersessions_keeps_each_after_its_winner() -> None:
    items = ["a", "b", "c", "d"]
    order = superseded_last(items, lambda s: s, {"a": "b", "b": "c"})
    assert order == ["c", "b", "a", "d"]
    assert superseded_last(items, lambda s: s, {"c": "a"}) == items  # already after it


def test_only_contradicting_pairs_are_reported() -> None:
    memories = [
        mem("1", "Jo lives in Paris."),
        mem("2", "Jo lives in Paris."),  # a duplicate agrees
        mem("3", "Jo lives in Berlin."),
        mem("4", "Sam likes tea."),
    ]
    pairs = {(p.first, p.second, p.kind) for p in find_contradictions(memories)}
    assert pairs == {("1", "3", "value"), ("2", "3", "value")}
