"""The soft preference for the newest statement (``agentcore.domain.updates.ranking``): a
newer statement of what an older one said ranks right above it, recording nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from agentcore.domain.models import Memory, ScopeIds
from agentcore.domain.records import NewMemory, build_memory
from agentcore.domain.updates.ranking import may_follow, may_reorder, newer_first

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


def ranked(pairs: list[tuple[Memory, float]], related: float | None = 0.45) -> list[str]:
    """The contents in ``newer_first``'s order; ``related``: every pair's closeness."""
    out = newer_first(pairs, lambda p: p[0], lambda p: p[1], lambda a, b: related)
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


def test_the_evidence_is_both_closenesses() -> None:
    old, new = memories(OLD, NEW)
    # 0.45 to the older statement + a quarter of 0.4 / 0.8: 0.575, enough
    assert ranked([(old, 0.8), (new, 0.4)]) == [NEW, OLD]
    # 0.35 + a quarter of 0.4 / 0.8: 0.475, not; answering as well as the older: 0.6, enough
    assert ranked([(old, 0.8), (new, 0.4)], related=0.35) == [OLD, NEW]
    assert ranked([(old, 0.8), (new, 0.8)], related=0.35) == [NEW, OLD]
    # below CLOSE to the question: no answer at all, however close to the older statement
    assert ranked([(old, 0.8), (new, 0.05)], related=0.9) == [OLD, NEW]


def test_a_newer_statement_about_something_else_stays_below() -> None:
    allergy, booking = memories(
        "I'm allergic to penicillin.", "I booked a table at Casa Lisboa for Friday."
    )
    assert may_follow(allergy, booking)  # the same person's own statement: words allow it
    pairs = [(allergy, 0.7), (booking, 0.6)]  # the question cannot tell them apart
    assert ranked(pairs, related=0.12) == [allergy.content, booking.content]
    assert ranked(pairs, related=None) == [allergy.content, booking.content]  # unknown


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


def test_vectors_are_needed_only_when_a_pair_may_be_reordered() -> None:
    old, new = memories(OLD, NEW)
    assert may_reorder([new, old])
    (bobs,) = memories(NEW, scope=ScopeIds(user_id="bob"))
    assert not may_reorder([old, bobs])
    also = memories(OLD, "I also cycle to the office on Fridays.")
    assert not may_reorder(also)


def test_a_named_holder_counts_above_what_its_statements_share() -> None:
    """Statements that open on one name are close whatever they say: for a named holder the
    pair's closeness counts above the older statement's closeness to the holder's others."""
    allergy, colour, bicycle, cello = memories(
        "Alice is allergic to penicillin.",
        "Alice's favourite colour is green.",
        "Alice once owned a red bicycle.",
        "Alice started learning the cello.",
    )
    to_allergy = {colour.id: 0.45, bicycle.id: 0.44, cello.id: 0.48}

    def order(closer: float) -> list[str]:
        pairs = [(allergy, 0.6), (cello, 0.3), (bicycle, 0.28), (colour, 0.25)]

        def related(a: tuple[Memory, float], b: tuple[Memory, float]) -> float | None:
            other = b[0] if a[0] is allergy else a[0]
            if other is cello:
                return closer
            return to_allergy.get(other.id, 0.3)

        out = newer_first(pairs, lambda p: p[0], lambda p: p[1], related)
        return [memory.content for memory, _ in out]

    assert order(0.48)[0] == allergy.content  # as close as Alice's other statements: no move
    assert order(0.8)[0] == cello.content  # far closer than those: the newer word on it
