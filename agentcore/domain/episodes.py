"""Episodes: stretches of a session within one stage, and their extractive summaries."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w{4,}")
SUMMARY_RATIO = 5  # a summary keeps about 1/5 of its episode's characters
SUMMARY_FLOOR = 200  # ... but at least this many, so a short episode keeps its gist


class EpisodeStatus(StrEnum):
    OPEN = "open"  # the session's current episode: evicted items still join it
    CLOSED = "closed"
    SUMMARIZED = "summarized"  # pruned: one summary memory stands for its items


@dataclass(frozen=True, slots=True)
class Episode:
    id: str
    scope_key: str
    session_id: str | None
    task_id: str | None
    stage_id: str | None
    status: EpisodeStatus
    started_at: datetime  # time of its first item
    ended_at: datetime  # time of its last item
    memory_ids: tuple[str, ...]  # its items' memory ids, kept after pruning as the trace
    created_at: datetime
    updated_at: datetime
    summary_memory_id: str | None = None

    @property
    def item_count(self) -> int:
        return len(self.memory_ids)


def extractive_summary(lines: Sequence[tuple[str, str]], max_chars: int) -> str:
    """An extractive summary of ``(role, text)`` lines, no LLM: sentences are ranked by how
    many distinct words of 4+ characters they hold (a cheap informativeness proxy); first
    each role's best sentence, then the best remaining ones are kept while they fit in
    max(total/5, 200) characters (at most ``max_chars``), printed in their original order
    as ``role: sentence`` lines."""
    total = sum(len(text) for _, text in lines)
    budget = min(max(total // SUMMARY_RATIO, SUMMARY_FLOOR), max_chars)
    candidates = [
        (role, sentence)
        for role, text in lines
        for sentence in (s.strip() for s in _SENTENCE_END.split(text))
        if sentence
    ]
    if not candidates:
        return "(empty episode)"
    scores = [len(set(_WORD.findall(sentence.lower()))) for _, sentence in candidates]
    ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    best_per_role: dict[str, int] = {}
    for i in ranked:
        best_per_role.setdefault(candidates[i][0], i)
    chosen: set[int] = set()
    used = 0
    for i in [*best_per_role.values(), *ranked]:
        role, sentence = candidates[i]
        cost = len(role) + len(sentence) + 3
        if i not in chosen and used + cost <= budget:
            chosen.add(i)
            used += cost
    if not chosen:
        role, sentence = candidates[ranked[0]]
        return f"{role}: {sentence[: max(budget - len(role) - 3, 1)].rstrip()}…"
    return "\n".join(f"{candidates[i][0]}: {candidates[i][1]}" for i in sorted(chosen))
