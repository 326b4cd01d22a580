"""The newest statement first (``newer_first``): for a question about how things are, among the
results of a search, a newer statement about the same holder is ranked right above an older
one it may have replaced.

A supersession is recorded only where the rules read the slot (``services.supersession``), so
most updates stay unrecorded ("Nina's got a Volvo these days" after "Nina drives a Golf",
"Loving the new e-bike" after "I drive to work"); and a pair that is no update reads much the
same ("I speak English at work" after "I speak German at home"). Ranking is lighter than
recording: nothing is marked, and the older statement drops one place, never out of the
results. So for a question about how things
stand, a result is moved right above the highest-ranked older result it ``may_follow`` (same
scope and speaker, about the same holder, a statement of its own that adds nothing and is no
wish or plan) when the evidence that it is the newer word on what the older one said is
enough: its meaning's closeness to the older statement, plus a quarter of how well it answers
the question compared with the older one (the calibrated cosines). Neither is enough alone.
An update said in other words is often far from the older statement ("Took my Model 3 on its
first road trip" after "I drive a 2014 Honda Civic") and from the question's words; and the
question cannot tell an update from another fact of the same person: "I booked a table for
Friday" is as close to "What am I allergic to?" as "I'm allergic to penicillin" is, in a third
of such pairs. Over the first-person update cases of ``benchmarks/knowledge_updates.py`` (sets
A-E) and as many pairs of statements about different attributes, the sum at ``EVIDENCE``
passes 85% of the updates and 11% of the others (the question's share alone: 99% and 83%; the
statements' closeness alone at 85% of the updates: 25%); fitted on four sets, the fifth gets
75-98% and 6-20%.
A question about the past ("Where did Jo live in 2019?", "When did ...?") or a phrase that is
no question ranks as it is (``questions.asks_present``).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeVar

from agentcore.domain.fact_text import stem, terms
from agentcore.domain.models import Memory
from agentcore.domain.records import FACT_LAYERS, speaker_of
from agentcore.domain.updates import cues
from agentcore.domain.updates.subjects import subject_of
from agentcore.domain.updates.vocabulary import opening

T = TypeVar("T")

# Below this calibrated cosine to the question a statement answers it no better than unrelated
# text does (0 is the model's background): it neither moves nor is passed.
CLOSE = 0.1
# How much a newer statement answering the question counts (its closeness to the question as a
# share of the older one's, at most 1) beside its closeness to the older statement, and the sum
# a move needs (module doc: measured, not tuned per set).
ANSWERS = 0.25
EVIDENCE = 0.53
# How close two statements of the speaker about different things are (the median over the
# first-person pairs of sets A-E, calibrated). A name both statements carry brings them closer
# whatever they say ("Alice is allergic to penicillin", "Alice started learning the cello":
# 0.48, where "I'm allergic ..." and "I started ..." are 0.22): for a named holder the pair's
# closeness counts above what the older statement shares with that holder's other statements
# among the results (when at least ``OTHERS`` are there), on the speaker's scale.
HOLDER_BACKGROUND = 0.275
OTHERS = 2


def newer_first(
    results: Sequence[T],
    memory: Callable[[T], Memory],
    closeness: Callable[[T], float],
    related: Callable[[T, T], float | None],
    *,
    answers: float = ANSWERS,
    evidence: float = EVIDENCE,
) -> list[T]:
    """``results`` (best first) with each newer statement that ``may_follow`` an older one
    ranked right above the highest-ranked older one it follows (each older one is passed so
    once), when it is about what the older one said: ``related(older, newer)`` (the two
    statements' calibrated cosine; None: unknown, nothing moves) plus ``answers`` times its
    ``closeness`` to the question as a share of the older's (at most 1) is at least
    ``evidence``. Both answer the question better than unrelated text does (``CLOSE``)."""
    out = list(results)
    passed: set[int] = set()  # the older results a newer one was moved above (once each)
    for item in list(out):
        new = memory(item)
        at = out.index(item)
        for i in range(at):
            older = out[i]
            near, far = closeness(item), closeness(older)
            if id(older) in passed or min(near, far) < CLOSE or not may_follow(memory(older), new):
                continue
            similarity = related(older, item)
            if similarity is None:
                continue
            lift = similarity - _holder_background(older, item, results, memory, related)
            if lift + HOLDER_BACKGROUND + answers * min(near / far, 1.0) >= evidence:
                passed.add(id(older))
                out.insert(i, out.pop(at))
                break
    return out


def _holder_background(
    older: T,
    newer: T,
    results: Sequence[T],
    memory: Callable[[T], Memory],
    related: Callable[[T, T], float | None],
) -> float:
    """The median closeness of ``older`` to the other statements of its holder among the
    results, when the holder is named (``HOLDER_BACKGROUND`` for the speaker's and a thing's
    statements, and when fewer than ``OTHERS`` are there)."""
    old = memory(older)
    if not subject_of(old.content).holder:
        return HOLDER_BACKGROUND
    shared = []
    for other in results:
        if other is older or other is newer:
            continue
        peer = memory(other)
        if may_follow(old, peer) or may_follow(peer, old):
            value = related(older, other)
            if value is not None:
                shared.append(value)
    return statistics.median(shared) if len(shared) >= OTHERS else HOLDER_BACKGROUND


def may_reorder(memories: Sequence[Memory]) -> bool:
    """Whether a newer one of ``memories`` ``may_follow`` an older one (what ``newer_first``
    checks before it needs the statements' vectors)."""
    return any(
        may_follow(old, new)
        for old in memories
        for new in memories
        if old.created_at < new.created_at
    )


def may_follow(old: Memory, new: Memory) -> bool:
    """Whether ``new`` may be the newer statement of what ``old`` said: both unkeyed memories
    of a fact layer in one scope, said by the same speaker, ``new`` created later, each a
    statement of its own (no question, reaction, request or long story), about the same
    holder, and ``new`` adds nothing ("also", "a second"), says no wish or plan and does not
    only restate."""
    if (
        old.key is not None  # a keyed memory is updated by its key; another key is another thing
        or new.key is not None
        or old.layer not in FACT_LAYERS
        or new.layer not in FACT_LAYERS
        or old.scope_key != new.scope_key
        or old.created_at >= new.created_at
        or speaker_of(old.metadata) != speaker_of(new.metadata)
    ):
        return False
    if not _own_statement(old.content) or not _own_statement(new.content):
        return False
    if _adds_or_wishes(new.content):
        return False
    if terms(new.content).words <= terms(old.content).words:
        return False  # a restatement says nothing newer
    return _about_the_same(old.content, new.content)


@lru_cache(maxsize=8_192)  # a search reads the same results again and again
def _own_statement(text: str) -> bool:
    return not cues.asks_or_reacts(text)


@lru_cache(maxsize=8_192)
def _adds_or_wishes(text: str) -> bool:
    return cues.adds_to(text) or cues.wishes(text)


# A statement that opens on someone already named ("She's at Google now", "His new car ...").
_THIRD_PERSON = re.compile(r"(?:she|he|they)(?:'s|'re|'d|'ll|'ve)?\b|(?:her|his|their)\b", re.I)


def _about_the_same(old_text: str, new_text: str) -> bool:
    """Whether the newer statement is about the same holder as the older: both the speaker's
    (or a thing's), the same person, a person named again ("Sofia keeps sending me photos
    from Montreal" after "My daughter Sofia lives in Lyon"), or a pronoun for the person the
    older one is about ("She's at Google now"). Another person's fact is not ("My brother
    lives in York" after "I live in Leeds"). A statement that mentions someone else besides
    ("Christmas is at my sister's this year") may still be the speaker's."""
    old = subject_of(old_text)
    if _THIRD_PERSON.match(opening(new_text)):
        return bool(old.holder)
    new = subject_of(new_text)
    if old.holder == new.holder:
        return True
    if not new.holder:
        return _names(old.holder, new.words)
    return stem(new.holder) in old.words or (bool(old.holder) and _names(old.holder, new.words))


def _names(holder: str, words: frozenset[str]) -> bool:
    """Whether ``words`` name ``holder`` ("sam's brother": both parts)."""
    return all(stem(part.removesuffix("'s")) in words for part in holder.split())
