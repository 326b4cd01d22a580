"""``generate_conversations``: a conversation per (seed, index), checked before it is handed out."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

from .catalog import Catalog, load_catalog
from .dates import format_session, parse_session, session_dates
from .fill import Filler
from .model import Line
from .persona import draw_people
from .plan import plan
from .questions import QuestionMaker
from .session import MAX_TURNS, MAX_WORDS, MIN_TURNS, MIN_WORDS, SessionWriter

MIN_SESSIONS, MAX_SESSIONS = 15, 30
MIN_QUESTIONS, MAX_QUESTIONS = 60, 150


def _turn(speaker: str, dia: str, line: Line) -> dict[str, str]:
    turn = {"speaker": speaker, "dia_id": dia, "text": line.text}
    if line.photo:
        turn["blip_caption"] = line.photo
    return turn


def _conversation(catalog: Catalog, seed: int, index: int) -> dict[str, Any]:
    rng = random.Random(f"conversations/{seed}/{index}")
    people, names = draw_people(rng, catalog)
    dates = session_dates(rng, rng.randint(MIN_SESSIONS, MAX_SESSIONS))
    filler = Filler(rng, catalog.filler["pools"])
    instances = plan(rng, catalog, people, dates, names)
    writer = SessionWriter(rng, catalog, filler, people, dates, instances, names.taken)
    conversation: dict[str, Any] = {"speaker_a": people[0].name, "speaker_b": people[1].name}
    turns: list[tuple[str, Line]] = []
    for session in range(len(dates)):
        lines = writer.write(session)
        numbered = [(f"D{session + 1}:{n}", line) for n, line in enumerate(lines, 1)]
        conversation[f"session_{session + 1}"] = [
            _turn(people[line.speaker].name, dia, line) for dia, line in numbered
        ]
        conversation[f"session_{session + 1}_date_time"] = format_session(dates[session])
        turns += numbered
    maker = QuestionMaker(rng, catalog, filler, people, instances, turns)
    share = rng.uniform(0.17, 0.27)
    target = min(MAX_QUESTIONS, max(MIN_QUESTIONS, round(len(turns) * share)))
    questions = maker.select(maker.candidates(), target)
    sample = {
        "sample_id": f"gen-{seed}-{index}",
        "conversation": conversation,
        "qa": [
            {
                "question": q.question,
                "answer": q.answer,
                "evidence": list(q.evidence),
                "category": q.category,
            }
            for q in questions
        ],
    }
    _validate(sample, len(dates))
    return sample


def _validate(sample: dict[str, Any], sessions: int) -> None:
    """The guarantees the training data relies on; a violation is a bug in this package."""
    conversation = sample["conversation"]
    where = sample["sample_id"]
    known: set[str] = set()
    previous = None
    for number in range(1, sessions + 1):
        turns = conversation[f"session_{number}"]
        moment = parse_session(conversation[f"session_{number}_date_time"])
        if previous is not None and moment <= previous:
            raise RuntimeError(f"{where}: session {number} is not after the one before")
        previous = moment
        if not MIN_TURNS <= len(turns) <= MAX_TURNS:
            raise RuntimeError(f"{where}: session {number} has {len(turns)} turns")
        for before, turn in pairwise(turns):
            if before["speaker"] == turn["speaker"]:
                raise RuntimeError(f"{where}: {turn['dia_id']} does not alternate speakers")
        for turn in turns:
            if not MIN_WORDS <= len(turn["text"].split()) <= MAX_WORDS:
                raise RuntimeError(f"{where}: {turn['dia_id']} is {turn['text']!r}")
            known.add(turn["dia_id"])
    qa = sample["qa"]
    if not MIN_QUESTIONS <= len(qa) <= MAX_QUESTIONS:
        raise RuntimeError(f"{where}: {len(qa)} questions")
    if len({q["question"].lower() for q in qa}) != len(qa):
        raise RuntimeError(f"{where}: a question repeats")
    for q in qa:
        if not q["evidence"] or not set(q["evidence"]) <= known:
            raise RuntimeError(f"{where}: bad evidence {q['evidence']} for {q['question']!r}")


def generate_conversations(seed: int, count: int) -> list[dict[str, Any]]:
    """``count`` conversations in LoCoMo's schema; the same (seed, count) always gives the same
    list, and conversation ``i`` depends only on (seed, i), so a longer list extends a shorter
    one."""
    if count < 0:
        raise ValueError("count must not be negative")
    catalog = load_catalog()
    return [_conversation(catalog, seed, index) for index in range(count)]
