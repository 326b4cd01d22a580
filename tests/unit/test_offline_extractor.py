"""The rule-based fact extractor: general English patterns, then real conversation turns
(LoCoMo, read at test time; skipped when the data file is absent)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentcore.adapters.extractors import RuleBasedFactExtractor
from agentcore.services.semantic import ExtractedFact, FactCategory, SourceText

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo10.json"
AT = datetime(2023, 5, 8, 13, 56)


async def _facts(content: str, speaker: str | None = "Caroline", **kw: Any) -> list[ExtractedFact]:
    text = SourceText("m1", content, speaker, kw.get("role"), kw.get("at", AT))
    return await RuleBasedFactExtractor().extract([text])


async def _one(content: str, speaker: str | None = "Caroline", **kw: Any) -> ExtractedFact:
    facts = await _facts(content, speaker, **kw)
    assert len(facts) == 1, facts
    return facts[0]


@pytest.mark.parametrize(
    ("content", "expected", "category"),
    [
        (
            "I really love hiking in the mountains",
            "Caroline loves hiking in the mountains",
            "preference",
        ),
        (
            "Hiking in the mountains is what I love most.",
            "Caroline loves hiking in the mountains",
            "preference",
        ),
        ("I prefer hiking over running.", "Caroline prefers hiking over running", "preference"),
        ("Honestly, I hate waking up early!", "Caroline hates waking up early", "preference"),
        ("I don't like horror movies.", "Caroline does not like horror movies", "preference"),
        ("My favorite food is sushi.", "Caroline's favorite food is sushi", "preference"),
        ("My sister is a nurse.", "Caroline's sister is a nurse", "fact"),
        ("I live in Paris.", "Caroline lives in Paris", "fact"),
        ("I work at Acme Corp as a designer.", "Caroline works at Acme Corp as a designer", "fact"),
        ("I have a dog named Max.", "Caroline has a dog named Max", "fact"),
        ("I'm from Sweden.", "Caroline is from Sweden", "fact"),
        ("I'm going to Japan next month!", "Caroline is going to Japan in June 2023", "fact"),
        (
            "Yesterday I went to a pottery class.",
            "Caroline went to a pottery class on 7 May 2023",
            "fact",
        ),
        (
            "Last Saturday I ran a charity race.",
            "Caroline ran a charity race on 6 May 2023",
            "fact",
        ),
        (
            "I learned that patience pays off.",
            "Caroline learned that patience pays off",
            "learning",
        ),
        (
            "I need to take my pills every morning.",
            "Caroline needs to take their pills every morning",
            "constraint",
        ),
    ],
)
async def test_general_patterns(content: str, expected: str, category: str) -> None:
    fact = await _one(content)
    assert (fact.content, fact.category) == (expected, FactCategory(category))
    assert fact.source_ids == ("m1",)
    assert 0 < fact.importance <= 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("I'm allergic to peanuts.", "Caroline is allergic to peanuts"),
        (
            "I found out recently I'm allergic to shellfish as well.",
            "Caroline is allergic to shellfish",
        ),
        ("I must finish the report by Friday.", "Caroline must finish the report by Friday"),
        ("I never eat pork.", "Caroline does not eat pork"),
        ("I'm a vegetarian.", "Caroline is vegetarian"),
        ("I always double-check my work.", "Caroline always double-checks their work"),
        ("I can't drive at night.", "Caroline cannot drive at night"),
    ],
)
async def test_constraints_are_critical(content: str, expected: str) -> None:
    fact = await _one(content)
    assert (fact.content, fact.category, fact.critical) == (expected, FactCategory.CONSTRAINT, True)
    assert fact.importance >= 0.8


@pytest.mark.parametrize(
    "content",
    [
        "Do you like pizza?",  # a question
        "I can't wait to see you!",  # an idiom
        "I'd love to see it.",  # a wish
        "I love it!",  # nothing to resolve "it" to
        "I love how you paint.",  # about the listener
        "I'm not allergic to cats.",
        "I wish I wasn't allergic!",
        "I never thought about that.",  # a memory, not a rule
        "Thanks, that's great to hear.",
    ],
)
async def test_statements_without_a_standalone_fact_yield_nothing(content: str) -> None:
    assert await _facts(content) == []


async def test_an_unknown_speaker_is_named_by_role() -> None:
    assert (await _one("My name is Anna.", None)).content == "The user's name is Anna"
    assert (await _one("I love tea", None, role="assistant")).content == "The assistant loves tea"


async def test_without_a_timestamp_relative_times_stay() -> None:
    fact = await _one("I went to a conference yesterday.", at=None)
    assert fact.content == "Caroline went to a conference yesterday"


async def test_one_text_can_state_several_facts_and_repeats_merge() -> None:
    texts = [
        SourceText("a", "I love jazz, but I'm allergic to cats.", "Tim"),
        SourceText("b", "Tim here. I love jazz!", "Tim"),
    ]
    facts = await RuleBasedFactExtractor().extract(texts)
    assert [(f.content, f.source_ids) for f in facts] == [
        ("Tim loves jazz", ("a", "b")),
        ("Tim is allergic to cats", ("a",)),
    ]


def _locomo_turns() -> list[tuple[str, SourceText]]:
    if not LOCOMO.exists():
        pytest.skip(f"{LOCOMO} is not available")
    turns = []
    for conversation in json.loads(LOCOMO.read_text()):
        sessions = conversation["conversation"]
        for name, turns_of_session in sessions.items():
            if not re.fullmatch(r"session_\d+", name):
                continue
            at = datetime.strptime(sessions[f"{name}_date_time"], "%I:%M %p on %d %B, %Y")
            for turn in turns_of_session:
                memory_id = f"{conversation['sample_id']}/{turn['dia_id']}"
                turns.append(
                    (turn["text"], SourceText(memory_id, turn["text"], turn["speaker"], at=at))
                )
    return turns


@pytest.fixture(scope="module")
def locomo() -> dict[str, SourceText]:
    return {text.memory_id: text for _, text in _locomo_turns()}


# Real turns and the facts they must yield (the turn id, then facts: content, category, critical).
KNOWN_TURNS = [
    ("conv-26/D1:3", "Caroline went to a LGBTQ support group on 7 May 2023", "fact", False),
    ("conv-26/D2:1", "Melanie ran a charity race for mental health on 20 May 2023", "fact", False),
    ("conv-26/D5:13", "Caroline is going to a transgender conference in July 2023", "fact", False),
    ("conv-30/D1:2", "Jon lost their job as a banker on 19 January 2023", "fact", False),
    (
        "conv-42/D2:23",
        "Joanna is allergic to most reptiles and animals with fur",
        "constraint",
        True,
    ),
    ("conv-42/D5:11", "Joanna is allergic to cockroaches", "constraint", True),
    ("conv-43/D12:18", "John likes to collect jerseys", "preference", False),
    ("conv-43/D27:5", "Tim is learning German", "fact", False),
    ("conv-44/D10:12", "Andrew cannot hike", "constraint", True),
    (
        "conv-47/D5:1",
        "James adopted a pup from a shelter in Stamford in the week before 12 April 2022",
        "fact",
        False,
    ),
]


@pytest.mark.parametrize(("turn_id", "content", "category", "critical"), KNOWN_TURNS)
async def test_known_locomo_turns(
    locomo: dict[str, SourceText], turn_id: str, content: str, category: str, critical: bool
) -> None:
    facts = await RuleBasedFactExtractor().extract([locomo[turn_id]])
    matching = [f for f in facts if f.content == content]
    assert matching, [f.content for f in facts]
    assert (matching[0].category, matching[0].critical) == (FactCategory(category), critical)
    assert matching[0].source_ids == (turn_id,)


async def test_all_locomo_turns(locomo: dict[str, SourceText]) -> None:
    texts = list(locomo.values())
    facts = await RuleBasedFactExtractor().extract(texts)
    speakers = {text.memory_id: text.speaker for text in texts}

    assert 500 <= len(facts) <= len(texts) // 4  # a fact in roughly one turn of eight
    for fact in facts:
        assert fact.content.startswith(str(speakers[fact.source_ids[0]])), fact
        assert not re.search(r"(?<![\w-])(?:I|I'm|my|me|myself)(?![\w-])", fact.content), fact
        assert not fact.critical or fact.category is FactCategory.CONSTRAINT
    categories = {f.category for f in facts}
    assert categories == set(FactCategory)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("I moved to Munich last month.", "The user moved to Munich in April 2023"),
        ("I grew up in Ohio.", "The user grew up in Ohio"),
        ("I was born in Lyon.", "The user was born in Lyon"),
        ("I relocated to Austin in March.", "The user relocated to Austin in March"),
        ("I live in Berlin.", "The user lives in Berlin"),
        ("I study biology at night.", "The user studies biology at night"),
        ("I teach piano to kids.", "The user teaches piano to kids"),
    ],
)
async def test_the_verb_keeps_its_tense_in_the_third_person(content: str, expected: str) -> None:
    assert (await _one(content, speaker=None)).content == expected
