"""A soft preference for the newest statement (``newer_first``): for a question about how
things are, among the results of a search, a newer statement about the same subject is
ranked right above an older one it may have replaced.

The supersession readers record a replacement only when its words confirm it
(``replacement.confirmation``), so most updates said in passing stay unrecorded ("Nina's got
a Volvo these days" after "Nina drives a Golf", "Loving the new e-bike" after "I drive to
work"); and a pair that is no update reads much the same ("I speak English at work" after "I
speak German at home"). Ranking is lighter than recording: nothing is marked, and the older
statement drops one place, never out of the results. So for a question about how things
stand, a result is moved right above the highest-ranked older result it ``may_follow`` (same
scope and speaker, the same subject, a statement of its own that adds nothing and is no wish
or plan) when it answers the question too (at least ``share`` of the older one's relevance).
A question about the past ("Where did Jo live in 2019?", "When did ...?") or a phrase that is
no question ranks as it is (``questions.asks_present``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from agentcore.domain.fact_text import terms
from agentcore.domain.models import Memory
from agentcore.domain.records import FACT_LAYERS, speaker_of
from agentcore.domain.updates import cues
from agentcore.domain.updates.subjects import same_subject, subject_of
from agentcore.domain.updates.vocabulary import opening

T = TypeVar("T")

SHARE = 0.25  # the newer's relevance, as a share of the older's, for both to answer it
MAX_WORDS = 40  # a statement told in passing may run longer than one the readers record


def newer_first(
    results: Sequence[T],
    memory: Callable[[T], Memory],
    relevance: Callable[[T], float],
    *,
    share: float = SHARE,
) -> list[T]:
    """``results`` (best first) with each newer statement that ``may_follow`` an older one
    ranked right above the highest-ranked older one it follows (each older one is passed so
    once)."""
    out = list(results)
    passed: set[int] = set()  # the older results a newer one was moved above (once each)
    for item in list(out):
        new = memory(item)
        at = out.index(item)
        for i in range(at):
            older = out[i]
            if id(older) in passed or relevance(item) < share * relevance(older):
                continue
            if may_follow(memory(older), new):
                passed.add(id(older))
                out.insert(i, out.pop(at))
                break
    return out


def may_follow(old: Memory, new: Memory) -> bool:
    """Whether ``new`` may be the newer statement of what ``old`` said: both of a fact layer
    in one scope, said by the same speaker, ``new`` created later, each a statement of its
    own (no question, reaction, request or long story), about the same subject, and ``new``
    adds nothing ("also", "a second"), says no wish or plan and does not only restate."""
    if (
        old.layer not in FACT_LAYERS
        or new.layer not in FACT_LAYERS
        or old.scope_key != new.scope_key
        or old.created_at >= new.created_at
        or speaker_of(old.metadata) != speaker_of(new.metadata)
    ):
        return False
    if cues.asks_or_reacts(old.content, MAX_WORDS) or cues.asks_or_reacts(new.content, MAX_WORDS):
        return False
    if cues.adds_to(new.content) or cues.wishes(new.content):
        return False
    if terms(new.content).words <= terms(old.content).words:
        return False  # a restatement says nothing newer
    before = subject_of(old.content)
    if _THIRD_PERSON.match(opening(new.content)):
        return bool(before.holder)  # "She's at Google now" goes on about someone, not "I"
    return same_subject(before, subject_of(new.content))


# A statement that opens on someone already named ("She's at Google now", "His new car ...").
_THIRD_PERSON = re.compile(r"(?:she|he|they)(?:'s|'re|'d|'ll|'ve)?\b|(?:her|his|their)\b", re.I)

