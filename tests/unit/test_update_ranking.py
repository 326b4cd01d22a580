"""The soft preference for the newest statement (``agentcore.domain.updates.ranking``): a
newer statement of what an older one said ranks right above it, recording nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from agentcore.domain.models import Memory, ScopeIds
from agentcore.domain.records import NewMemory, build_memory
from agentcore.domain.updates.ranking import may_follow, newer_first

START = datetime(2026, 3, 1, tzinfo=UTC)
ALICE = ScopeIds(user_id="alice")


def memories(
    *texts: str, scope: ScopeIds = ALICE, metadata: dict[str, Any] | None = None
) -> list[Memory]:
    """One memory per text, an hour apart, oldest first."""
    return [
        build_memory(
            NewMemory(text, scope, metadata=metadata or {}), START + timedelta(hours=i), 500, "m"
        )
        for i, text in enumerate(texts)
    ]


def ranked(pairs: list[tuple[Memory, float]], share: float = 0.25) -> list[str]:
    out = newer_first(pairs, lambda p: p[0], lambda p: p[1], share=share)
    return [memory.content for memory, _ in out]


OLD = "I take the ferry to the office."
NEW = "These days I cycle to the office, it's quicker."


def test_a_newer_statement_that_may_replace_an_older_one_ranks_above_it() -> None:
    old, new = memories(OLD, NEW)
    assert may_follow(old, new)
    assert ranked([(old, 0.8), (new, 0.4)]) == [NEW, OLD]


def test_statements_that_hold_together_keep_their_order() -> None:
    for second in (
        "I also cycle to the office on Fridays.",  # adds to it
        "My sister cycles to her office these days.",  # someone else's
        "I'm thinking of cycling to the office.",  # nothing current
    ):
        old, new = memories(OLD, second)
        assert not may_follow(old, new), second
        assert ranked([(old, 0.8), (new, 0.7)]) == [OLD, second]


def test_a_newer_statement_that_hardly_answers_the_question_stays_below() -> None:
    old, new = memories(OLD, NEW)
    assert ranked([(old, 0.8), (new, 0.1)]) == [OLD, NEW]  # under a quarter of 0.8


def test_a_chain_of_newer_statements_ranks_newest_first() -> None:
    third = "Most days now I walk to the office."
    old, new, newest = memories(OLD, NEW, third)
    assert ranked([(old, 0.8), (new, 0.5), (newest, 0.5)]) == [third, NEW, OLD]


def test_only_statements_of_one_scope_and_speaker_in_time_order() -> None:
    (old,) = memories(OLD)
    (other_scope,) = memories(NEW, scope=ScopeIds(user_id="bob"))
    assert not may_follow(old, other_scope)
    ana, ben = memories(OLD, NEW), memories(OLD, NEW, metadata={"speaker": "Ben"})
    assert not may_follow(ana[0], ben[1])
    old, new = memories(OLD, NEW)
    assert not may_follow(new, old)  # the older one never passes the newer
