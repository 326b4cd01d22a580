"""Packing of the context block (agentcore.domain.context_block): the budget, the order of the
sections, the critical facts' priority, deduplication, redistribution. Tokens are counted by a
stand-in tokenizer (words and line breaks), so the tests need no BPE files."""

from __future__ import annotations

import re

import pytest

from agentcore.domain.context_block import (
    SECTIONS,
    SHARES,
    TITLES,
    Candidate,
    Section,
    normalized,
    pack,
)


def words(text: str) -> int:
    """A token per word, per bracket and per line break."""
    return len(re.findall(r"\w+|[^\w\s]|\n", text))


def memory(i: int, size: int = 8, section: str = "m") -> Candidate:
    return Candidate(
        f"{section}{i}", "memory", " ".join([f"{section}{i}w{k}" for k in range(size)])
    )


def offered(n: int = 12) -> dict[Section, list[Candidate]]:
    return {
        Section.CRITICAL: [memory(i, 6, "c") for i in range(3)],
        Section.STAGE: [Candidate("stage-1", "stage", f"stage summary {k}") for k in range(3)],
        Section.WORKING: [Candidate(f"w{i}", "working_item", f"turn {i} said") for i in range(n)],
        Section.MEMORIES: [memory(i) for i in range(n)],
        Section.PROCEDURES: [memory(i, 10, "p") for i in range(3)],
        Section.ERRORS: [Candidate(f"e{i}", "error", f"error {i} happened") for i in range(3)],
    }


@pytest.mark.parametrize("budget", [50, 51, 57, 64, 80, 99, 100, 128, 150, 200, 333, 512, 4000])
def test_the_rendered_block_never_exceeds_the_budget(budget: int) -> None:
    block = pack(offered(), budget, words)
    assert block.tokens_used == words(block.text) <= budget
    refs = [int(r) for r in re.findall(r"^\[(\d+)\]", block.text, re.MULTILINE)]
    assert refs == [i.ref for i in block.included] == list(range(1, len(refs) + 1))


def test_sections_come_in_order_with_their_titles() -> None:
    block = pack(offered(), 4000, words)
    headers = re.findall(r"^## (.+)$", block.text, re.MULTILINE)
    assert headers == [TITLES[s] for s in SECTIONS]
    assert [s.section for s in block.sections] == list(SECTIONS)
    assert block.omitted == {}
    assert not block.truncated


def test_critical_facts_are_never_displaced_and_are_truncated_most_important_first() -> None:
    many = {
        Section.CRITICAL: [memory(i, 20, "c") for i in range(10)],
        Section.MEMORIES: [memory(i, 2) for i in range(10)],
    }
    block = pack(many, 100, words)
    assert block.truncated
    assert block.text.startswith("## Critical facts and constraints (truncated)")
    kept = [i.id for i in block.included]
    assert kept == [f"c{i}" for i in range(len(kept))]  # the first ones, in order
    assert {i.section for i in block.included} == {Section.CRITICAL}  # nothing lower got in
    assert block.omitted[Section.CRITICAL] == 10 - len(kept)


def test_nothing_fits_gives_an_empty_block() -> None:
    block = pack({Section.CRITICAL: [memory(0, 200, "c")]}, 50, words)
    assert (block.text, block.tokens_used, block.included) == ("", 0, [])
    assert block.truncated
    assert block.omitted == {Section.CRITICAL: 1}


def test_items_are_never_cut_and_a_big_one_does_not_block_smaller_ones() -> None:
    block = pack({Section.MEMORIES: [memory(0, 200), memory(1, 5), memory(2, 5)]}, 60, words)
    assert [i.id for i in block.included] == ["m1", "m2"]
    assert memory(1, 5).text in block.text
    assert block.omitted == {Section.MEMORIES: 1}


def test_duplicates_stay_in_their_highest_section() -> None:
    fact = Candidate("x", "memory", "The report must stay under two pages.")
    again = Candidate("w", "working_item", "the REPORT must stay under two pages", "user: ")
    sections = {
        Section.CRITICAL: [fact],
        Section.WORKING: [again],
        Section.MEMORIES: [
            Candidate("x", "memory", "other text, same memory"),
            Candidate("y", "memory", "Alice prefers green tea in the morning"),
            Candidate("z", "memory", "alice prefers green tea in the morning!"),
            Candidate("v", "memory", "Alice prefers green tea in the morning, always"),
        ],
    }
    block = pack(sections, 1000, words)
    assert [(i.id, i.section) for i in block.included] == [
        ("x", Section.CRITICAL),
        ("y", Section.MEMORIES),
        ("v", Section.MEMORIES),  # 7 of 8 words: not the same text
    ]
    assert block.duplicates == 3


def test_a_memory_quoted_whole_by_a_higher_item_is_a_repeat() -> None:
    brief = Candidate("t1", "task", "Plan: move the client to v2. Releases go out on Tuesdays.")
    sections = {
        Section.STAGE: [brief],
        Section.MEMORIES: [
            Candidate("a", "memory", "Releases go out on Tuesdays only."),  # not whole: kept
            Candidate("b", "memory", "plan: move the client to v2"),  # held whole: a repeat
            Candidate("c", "memory", "to v2"),  # too short to judge: kept
        ],
    }
    block = pack(sections, 500, words)
    assert [i.id for i in block.included] == ["t1", "a", "c"]


def test_a_higher_item_added_late_takes_the_place_of_what_it_quotes() -> None:
    brief = Candidate(
        "t1", "task", " ".join(f"brief{k}" for k in range(30)) + " the plan is to ship v2"
    )
    sections = {
        Section.STAGE: [Candidate("s", "stage", "current stage execution"), brief],
        Section.MEMORIES: [Candidate("m", "memory", "The plan is to ship v2!"), memory(1)],
    }
    block = pack(sections, 120, words)  # the brief misses the stage cap, then gets back in
    assert [i.id for i in block.included] == ["s", "t1", "m1"]
    assert block.duplicates == 1


def test_a_repeat_shows_lower_down_when_its_higher_section_had_no_room() -> None:
    newest_first = [Candidate(f"w{i}", "working_item", f"turn {i} " * 10) for i in range(3)]
    repeat = Candidate("m", "memory", newest_first[2].text)  # the oldest item: no room for it
    block = pack({Section.WORKING: newest_first, Section.MEMORIES: [repeat]}, 100, words)
    assert [(i.id, i.section) for i in block.included] == [
        ("w1", Section.WORKING),
        ("w0", Section.WORKING),
        ("m", Section.MEMORIES),
    ]  # shown once, as the memory
    assert (block.duplicates, block.omitted) == (1, {})


def test_stage_and_task_ids_repeat_without_being_duplicates() -> None:
    stage = [Candidate("s1", "stage", "current stage"), Candidate("s1", "stage", "its summary")]
    block = pack({Section.STAGE: stage}, 200, words)
    assert [i.ref for i in block.included] == [1, 2]


def test_caps_keep_room_for_lower_sections_and_unused_budget_flows_back() -> None:
    sections = {
        Section.WORKING: [Candidate(f"w{i}", "working_item", f"turn {i} " * 5) for i in range(50)],
        Section.MEMORIES: [memory(i) for i in range(50)],
        Section.ERRORS: [Candidate("e", "error", "the export failed")],
    }
    block = pack(sections, 400, words)
    by_section = {s.section: s.items for s in block.sections}
    assert by_section[Section.ERRORS] == 1  # reached past two long sections
    assert by_section[Section.MEMORIES] >= 10
    assert by_section[Section.WORKING] >= 10
    assert block.tokens_used > 400 - 12  # the rest went back up: nearly full


def test_a_section_takes_its_share_when_every_section_has_plenty() -> None:
    plenty = {s: [memory(i, 8, s.value) for i in range(100)] for s in SECTIONS[1:]}
    block = pack(plenty, 2000, words)
    tokens = {s.section: s.tokens for s in block.sections}
    for section, share in SHARES.items():
        assert abs(tokens[section] - share * 2000) < 40, (section, tokens)


def test_working_memory_is_chosen_newest_first_and_shown_oldest_first() -> None:
    newest_first = [Candidate(f"w{i}", "working_item", f"turn {i}") for i in (9, 8, 7, 6)]
    block = pack({Section.WORKING: newest_first}, 20, words)
    shown = re.findall(r"turn (\d)", block.text)
    assert shown == sorted(shown)
    assert "9" in shown
    assert "6" not in shown


def test_normalized_ignores_case_spacing_and_punctuation() -> None:
    assert normalized("  Hello,   World! ") == normalized("hello world") == "hello world"
