"""The generated conversations (benchmarks/conversations) are training data for a ranker of
memory search results, so they must keep LoCoMo's shape and their evidence must be right:
these tests check the guarantees on a few seeds."""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import cache
from itertools import pairwise
from typing import Any

import pytest

from benchmarks.conversations import generate_conversations

_SESSION = re.compile(r"session_(\d+)")
_STOP = frozenset(
    " ".join(
        (
            "a an the and or but of to in on at for with from by about as is are was were be",
            "been do does did has have had i you he she it we they me my your his her its our",
            "their him them this that what which who whom when where why how would could should",
            "will can may might not no so if than then there into over after before up out off",
            "just very really also too some any all more most much many such only own same",
            "other each both",
        )
    ).split()
)


@cache
def _samples(seed: int, count: int) -> list[dict[str, Any]]:
    return generate_conversations(seed, count)


def _sessions(sample: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    conversation = sample["conversation"]
    found = []
    for key, turns in conversation.items():
        match = _SESSION.fullmatch(key)
        if match:
            found.append((int(match.group(1)), conversation[f"{key}_date_time"], turns))
    return sorted(found)


def _turns(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [turn for _, _, turns in _sessions(sample) for turn in turns]


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in _STOP}


def test_the_same_seed_gives_the_same_output() -> None:
    first = json.dumps(generate_conversations(7, 2), sort_keys=True)
    again = json.dumps(generate_conversations(7, 2), sort_keys=True)

    assert first == again


def test_different_seeds_differ_and_a_longer_list_extends_a_shorter_one() -> None:
    assert _samples(1, 2) != _samples(2, 2)
    assert generate_conversations(1, 1) == _samples(1, 2)[:1]


def test_the_output_has_locomo_s_shape() -> None:
    for index, sample in enumerate(_samples(1, 3)):
        assert sample["sample_id"] == f"gen-1-{index}"
        conversation = sample["conversation"]
        speakers = {conversation["speaker_a"], conversation["speaker_b"]}
        assert len(speakers) == 2
        sessions = _sessions(sample)
        assert [number for number, _, _ in sessions] == list(range(1, len(sessions) + 1))
        assert 15 <= len(sessions) <= 30
        for number, _, turns in sessions:
            assert [turn["dia_id"] for turn in turns] == [
                f"D{number}:{n}" for n in range(1, len(turns) + 1)
            ]
            assert {turn["speaker"] for turn in turns} <= speakers
            assert all(set(turn) <= {"speaker", "dia_id", "text", "blip_caption"} for turn in turns)
        assert 60 <= len(sample["qa"]) <= 150
        for qa in sample["qa"]:
            assert set(qa) == {"question", "answer", "evidence", "category"}
            assert qa["question"].endswith("?")
            assert qa["answer"]


def test_every_evidence_id_exists_in_its_conversation() -> None:
    for sample in _samples(1, 3):
        known = {turn["dia_id"] for turn in _turns(sample)}
        for qa in sample["qa"]:
            assert qa["evidence"], qa
            assert set(qa["evidence"]) <= known, qa


def test_every_category_is_present_in_about_the_asked_shares() -> None:
    questions = [qa for sample in _samples(1, 3) for qa in sample["qa"]]
    shares = {
        category: sum(qa["category"] == category for qa in questions) / len(questions)
        for category in (1, 2, 3, 4)
    }

    assert all(share > 0 for share in shares.values())
    assert 0.38 <= shares[4] <= 0.55
    assert 0.12 <= shares[1] <= 0.25
    assert 0.12 <= shares[2] <= 0.25
    assert 0.08 <= shares[3] <= 0.2


def test_session_dates_parse_and_increase() -> None:
    for sample in _samples(1, 3):
        moments = [
            datetime.strptime(stamp, "%I:%M %p on %d %B, %Y") for _, stamp, _ in _sessions(sample)
        ]
        assert all(later > earlier for earlier, later in pairwise(moments))
        span = (moments[-1] - moments[0]).days
        assert 150 <= span <= 560


def test_turns_stay_within_the_word_bounds_and_speakers_alternate() -> None:
    counts = []
    for sample in _samples(1, 3):
        for _, _, turns in _sessions(sample):
            assert 12 <= len(turns) <= 35
            for before, after in pairwise(turns):
                assert before["speaker"] != after["speaker"]
            counts += [len(turn["text"].split()) for turn in turns]
    assert min(counts) >= 5
    assert max(counts) <= 45
    assert 15 <= sum(counts) / len(counts) <= 25


def test_most_turns_are_filler_or_context() -> None:
    for sample in _samples(1, 3):
        turns = _turns(sample)
        evidence = {dia for qa in sample["qa"] for dia in qa["evidence"]}
        assert 1 - len(evidence) / len(turns) >= 0.4


def test_no_question_repeats_within_a_conversation() -> None:
    for sample in _samples(1, 3):
        questions = [qa["question"].lower() for qa in sample["qa"]]
        assert len(set(questions)) == len(questions)


def test_single_hop_questions_rarely_give_their_answer_away() -> None:
    single = [qa for sample in _samples(1, 3) for qa in sample["qa"] if qa["category"] == 4]
    given = sum(bool(_words(qa["answer"]) & _words(qa["question"])) for qa in single)

    assert given / len(single) < 0.5


def test_evidence_turns_state_the_answer_of_single_hop_questions() -> None:
    # Evidence comes from the story timeline, not from text search; still, for most single-hop
    # questions some answer word should appear in the evidence turns themselves.
    single = [
        (qa, {turn["dia_id"]: turn["text"] for turn in _turns(sample)})
        for sample in _samples(1, 3)
        for qa in sample["qa"]
        if qa["category"] == 4
    ]
    found = sum(
        bool(_words(qa["answer"]) & _words(" ".join(texts[dia] for dia in qa["evidence"])))
        for qa, texts in single
    )

    assert found / len(single) > 0.9


def test_photos_are_shared_now_and_then() -> None:
    turns = [turn for sample in _samples(1, 3) for turn in _turns(sample)]
    shared = sum("blip_caption" in turn for turn in turns) / len(turns)

    assert 0.02 <= shared <= 0.1


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        generate_conversations(0, -1)
