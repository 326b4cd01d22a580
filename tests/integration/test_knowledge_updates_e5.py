"""Knowledge updates with the real default embedder (multilingual-e5-small) on both backends
(``stack``: embedded SQLite + qdrant-edge, and PostgreSQL + Qdrant in local mode): what the
rules read is recorded at once; an update said in passing is not recorded, and ranks first
for a question about how things are; facts that hold together keep their place. Pairs
written for this test (not taken from benchmarks/data), each in a scope of its own beside a
few unrelated memories."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agentcore.adapters.embedders.local_e5 import LocalE5Embedder
from agentcore.bootstrap import Container
from agentcore.domain.models import EventKind, ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.retrieval import SearchQuery
from agentcore.services.supersession import SUPERSESSION

BESIDE = (
    "The kettle takes ages to boil.",
    "Please remind me about the dentist on Friday.",
    "My sister works as a nurse in Leeds.",
)
# Recorded: the rules read the slot with another value.
UPDATES = [
    ("I live in Lyon.", "I moved to Grenoble."),
    ("My manager is Olga.", "Tomasz is my new manager."),
    ("We run Python 3.11 in production.", "We upgraded to Python 3.12 yesterday."),
]
# Said in passing or in words of change alone: not recorded, but the newer ranks first for a
# question about how things are.
IN_PASSING = [
    (
        "I drive a Honda Civic.",
        "Finally sold the Civic, the Tesla Model 3 is a dream.",
        "What car does the user drive?",
    ),
    (
        "I use Spotify for music.",
        "I cancelled Spotify, it's Apple Music for me now.",
        "Which music service does the user use?",
    ),
    (
        "I commute to work by bike.",
        "These days I take the tram to work, my knee hates cycling.",
        "How does the user get to work?",
    ),
    (
        "Our staging cluster runs Kubernetes 1.27.",
        "We upgraded the staging cluster to 1.30.",
        "Which Kubernetes version does staging run?",
    ),
    (
        "Marta leads the data team.",
        "Marta handed the data team over to Kofi, he leads it now.",
        "Who leads the data team?",
    ),
]
# A newer statement of the same person about something else: the older one still answers.
ABOUT_ELSE = [
    ("I'm allergic to penicillin.", "I booked a table at Casa Lisboa for Friday.",
     "What is the user allergic to?"),
    ("I drive a Honda Civic.", "We adopted a rescue greyhound called Pip.",
     "What car does the user drive?"),
    ("My manager is Olga.", "I started learning the cello last week.",
     "Who is the user's manager?"),
]  # fmt: skip
NOT_UPDATES = [
    ("I live in Lyon.", "My cousin lives in Nice."),  # someone else's
    ("I play tennis on Sundays.", "I also joined a chess club."),  # adds to it
    ("Our CI runs on GitHub Actions.", "We moved the CI badge to the top of the README."),
    ("My manager is Olga.", "Olga moved our one-to-one to Thursdays."),  # about the value
    ("I drink green tea in the morning.", "I'm thinking about trying matcha next month."),
    ("I drive a Honda Civic.", "My sister sold her Civic last week."),
    ("I work at Siemens.", "My new laptop arrived today."),  # another attribute
    ("I speak Dutch at home.", "I speak English at work now."),  # only meaning relates them
]


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalE5Embedder]:
    """The default model instead of conftest's all-MiniLM-L6-v2, for ``stack``."""
    model = LocalE5Embedder(threads=2)
    yield model
    asyncio.run(model.close())


async def _pair(stack: Container, scope: ScopeIds, old: str, new: str) -> tuple[str, str]:
    for text in BESIDE:
        await stack.memory.add(NewMemory(text, scope))
    first = await stack.memory.add(NewMemory(old, scope))
    second = await stack.memory.add(NewMemory(new, scope))
    assert await stack.memory.indexed()
    return first.id, second.id


async def test_updates_the_rules_read_supersede_the_old_fact_at_once(stack: Container) -> None:
    for n, (old, new) in enumerate(UPDATES):
        scope = ScopeIds(user_id=f"update-{n}")
        first, second = await _pair(stack, scope, old, new)
        (stale,) = await stack.memory.read([first], scope)
        assert stale.superseded_by == second, (old, new)
        events = await stack.memory.history(first, scope)
        assert [(e.kind, e.actor) for e in events][-1] == (EventKind.UPDATE, SUPERSESSION)


async def test_facts_that_hold_together_stay_current(stack: Container) -> None:
    for n, (old, new) in enumerate(NOT_UPDATES):
        scope = ScopeIds(user_id=f"both-{n}")
        first, _ = await _pair(stack, scope, old, new)
        (kept,) = await stack.memory.read([first], scope)
        assert kept.superseded_by is None, (old, new)
        assert kept.valid_to is None


async def test_updates_in_passing_are_not_recorded_but_answer_first(stack: Container) -> None:
    """All but one: "Finally sold the Civic, the Tesla Model 3 is a dream" is a little short of
    the evidence the newest-first rule asks (its meaning 0.35 close to "I drive a Honda Civic",
    two thirds as close to the question: 0.52 where 0.53 is needed), as about 15% of such
    updates are (docs/retrieval.md, Knowledge that updates)."""
    first_answers = []
    for n, (old, new, question) in enumerate(IN_PASSING):
        scope = ScopeIds(user_id=f"in-passing-{n}")
        first, second = await _pair(stack, scope, old, new)
        (kept,) = await stack.memory.read([first], scope)
        assert kept.superseded_by is None, (old, new)
        found = await stack.memory.search(SearchQuery(question, scope))
        if found.results[0].memory.id == second:
            first_answers.append(new)
    assert len(first_answers) >= len(IN_PASSING) - 1, first_answers


async def test_a_newer_statement_about_something_else_stays_below(stack: Container) -> None:
    for n, (old, new, question) in enumerate(ABOUT_ELSE):
        scope = ScopeIds(user_id=f"about-else-{n}")
        first, _ = await _pair(stack, scope, old, new)
        found = await stack.memory.search(SearchQuery(question, scope))
        assert found.results[0].memory.id == first, (question, found.results[0].memory.content)


async def test_the_new_value_answers_a_question_about_now(stack: Container) -> None:
    scope = ScopeIds(user_id="now")
    old, new, _ = IN_PASSING[2]  # the commute
    first, second = await _pair(stack, scope, old, new)
    await stack.memory.add(NewMemory("My brother cycles to his office every day.", scope))
    found = await stack.memory.search(SearchQuery("How does the user get to work now?", scope))
    ids = [hit.memory.id for hit in found.results]
    assert ids[0] == second
    assert ids.index(first) > 0


async def test_what_only_meaning_relates_ranks_first_for_now_unrecorded(stack: Container) -> None:
    scope = ScopeIds(user_id="unconfirmed")
    first, second = await _pair(
        stack, scope, "Ravi coaches the juniors.", "Ravi coaches the seniors these days."
    )
    (kept,) = await stack.memory.read([first], scope)
    assert kept.superseded_by is None
    found = await stack.memory.search(SearchQuery("Who does Ravi coach now?", scope))
    ids = [hit.memory.id for hit in found.results]
    assert ids.index(second) < ids.index(first)
