"""Compaction (``memory.compact``): several memories of one scope become one. Its content is
the caller's, or the sources' sentences merged in time order with each restatement dropped
(a sentence whose content words, numbers and negations an earlier kept sentence already
holds). The new memory carries ``compacted_from_ids``; the sources leave search and listings
but stay readable by id, each with a ``compact`` event in its history."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentcore.domain.errors import InvalidParams, InvalidScope, InvalidState
from agentcore.domain.fact_checks import covered
from agentcore.domain.fact_text import split_sentences, terms
from agentcore.domain.models import EventKind, Memory, ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.memory_manager import MemoryManager, Retire

MAX_SOURCES = 100


class CompactionService:
    def __init__(self, memory: MemoryManager) -> None:
        self._memory = memory

    async def compact(
        self, memory_ids: Sequence[str], scope: ScopeIds, content: str | None = None
    ) -> Memory:
        """The compacted memory. ``INVALID_SCOPE`` when the memories belong to different
        scopes, ``INVALID_STATE`` when one was compacted already, ``MEMORY_NOT_FOUND`` when
        one is not visible to ``scope``."""
        ids = list(dict.fromkeys(memory_ids))
        if not 2 <= len(ids) <= MAX_SOURCES:
            raise InvalidParams(
                f"compaction takes 2 to {MAX_SOURCES} different memories",
                errors=[{"field": "memory_ids", "message": f"2 to {MAX_SOURCES} ids"}],
            )
        sources = sorted(await self._memory.read(ids, scope), key=lambda m: m.created_at)
        if len({m.scope_key for m in sources}) > 1:
            raise InvalidScope(
                "memories of different scopes cannot be compacted into one",
                scopes=sorted({m.scope_key for m in sources}),
            )
        done = [m.id for m in sources if m.compacted_into_id is not None]
        if done:
            raise InvalidState("these memories were compacted already", memory_ids=done)
        first = sources[0]
        layers = {m.layer for m in sources}
        stages = {m.stage_id for m in sources}
        new = NewMemory(
            content=content if content is not None else merged(m.content for m in sources),
            scope=first.scope,
            layer=first.layer.value if len(layers) == 1 else "semantic",
            scope_level=first.scope_level.value,
            metadata={k: v for m in sources for k, v in m.metadata.items()},
            tags=tuple(dict.fromkeys(t for m in sources for t in m.tags)),
            critical=any(m.flagged for m in sources),
            stage_id=stages.pop() if len(stages) == 1 else None,
            importance=max(m.importance for m in sources),
            sensitive=any(m.sensitive for m in sources),
            compacted_from_ids=tuple(m.id for m in sources),
            source="compaction",
        )
        return await self._memory.derive(new, EventKind.COMPACT, sources, retire=Retire.HIDE)


def merged(texts: Iterable[str]) -> str:
    """The sentences of ``texts`` in order, each one that an earlier kept one restates left
    out."""
    kept: list[str] = []
    for text in texts:
        for sentence in split_sentences(text):
            if not any(_restates(k, sentence) for k in kept):
                kept.append(sentence)
    return " ".join(kept)


def _restates(kept: str, sentence: str) -> bool:
    new, old = terms(sentence), terms(kept)
    return new.negations % 2 == old.negations % 2 and covered(new, old)
