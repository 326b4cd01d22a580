"""A soft preference for questions about now (``newer_first``): among the results of a search,
a newer statement that may give an older one's attribute a new value is ranked right above it.

The supersession reader records a replacement only when a signal besides meaning confirms it
(``replacement.confirmation``). Many updates have none ("Nina's got a Volvo these days" after
"Nina drives a Golf"), and many pairs without one are two facts that both hold ("I speak
English at work" after "I speak German at home"). For a question about now, a result is moved
above an older one when both answer the question (the newer has at least ``share`` of the
older's relevance) and the readers would let the newer replace the older by its words (same
subject and speaker, a current fact, nothing added, no veto: ``replacement.replaces``). It
moves one place at most per older result, so a fact that still holds drops a rank, never out
of the results; nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from agentcore.domain.models import Memory
from agentcore.domain.records import FACT_LAYERS, speaker_of
from agentcore.domain.updates import cues
from agentcore.domain.updates.replacement import Reading, reading_of, vetoes

T = TypeVar("T")

SHARE = 0.25  # the newer's relevance, as a share of the older's, for both to answer it


def newer_first(
    results: Sequence[T],
    memory: Callable[[T], Memory],
    relevance: Callable[[T], float],
    *,
    share: float = SHARE,
) -> list[T]:
    """``results`` (best first) with each newer statement that ``follows`` an older one
    ranked right above the highest-ranked older one it follows."""
    out = list(results)
    passed: set[int] = set()  # the older results a newer one was moved above (once each)
    for item in list(out):
        new = memory(item)
        at = out.index(item)
        for i in range(at):
            older = out[i]
            if id(older) in passed or relevance(item) < share * relevance(older):
                continue
            if follows(memory(older), new):
                passed.add(id(older))
                out.insert(i, out.pop(at))
                break
    return out


def follows(old: Memory, new: Memory) -> bool:
    """Whether ``new`` may give ``old``'s attribute a new value by its words: both current
    facts of a fact layer in one scope, said by the same speaker, ``new`` created later, and
    no veto of the readers (``replacement``)."""
    if (
        old.layer not in FACT_LAYERS
        or new.layer not in FACT_LAYERS
        or old.scope_key != new.scope_key
        or old.created_at >= new.created_at
        or speaker_of(old.metadata) != speaker_of(new.metadata)
    ):
        return False
    if not (cues.reads_as_fact(new.content) and cues.reads_as_fact(old.content)):
        return False  # what ``vetoes`` checks first, without reading the rest of either
    return vetoes(_reading(old), _reading(new)) is None


def _reading(memory: Memory) -> Reading:
    return reading_of(memory.content, memory.fact_slot, memory.fact_value)
