"""The semantic layer (FR-1.3): facts, preferences, constraints and learnings drawn from memories.

A ``FactExtractor`` turns source texts into standalone third-person statements; the
``SemanticMemoryService`` stores them as semantic memories in the scope of their source, merges
near-duplicates into one fact that keeps every source id, and holds each scope to its capacity
by pruning the least important, least used facts (critical facts are never pruned).
"""

from __future__ import annotations

import contextlib
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from agentcore.domain.clock import Clock
from agentcore.domain.errors import InvalidParams, MemoryNotFound
from agentcore.domain.models import Layer, Memory, ScopeIds
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.scopes import visible_scope_keys
from agentcore.domain.updates import Statement
from agentcore.domain.usage import TokenUsage
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import ListQuery, UnitOfWorkFactory
from agentcore.services.retrieval import SearchQuery


class FactCategory(StrEnum):
    PREFERENCE = "preference"
    CONSTRAINT = "constraint"
    FACT = "fact"
    LEARNING = "learning"


@dataclass(frozen=True, slots=True)
class SourceText:
    """One text to extract from: the memory it is, and who said it when (if known)."""

    memory_id: str
    content: str
    speaker: str | None = None  # a name ("Caroline"); first person resolves to it
    role: str | None = None  # user, assistant, agent...; used when the speaker is unknown
    at: datetime | None = None  # resolves "yesterday", "next month"...


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """A standalone statement in the third person with its subject named.

    ``critical`` marks constraints and requirements ("must", "never", allergies...): they are
    never pruned. ``importance`` is in [0, 1]. ``source_ids`` name the source memories.
    """

    content: str
    category: FactCategory
    importance: float
    critical: bool
    source_ids: tuple[str, ...]
    statement: Statement | None = None  # the slot it fills, when the extractor named it

    def __post_init__(self) -> None:
        if not self.content.strip():
            raise ValueError("a fact needs content")
        if not 0.0 <= self.importance <= 1.0:
            raise ValueError("importance must be in [0, 1]")
        if not self.source_ids:
            raise ValueError("a fact needs at least one source id")


class Extraction(list[ExtractedFact]):
    """The facts of one extraction (a list) plus the tokens spent on them, when an LLM ran.

    A list subclass so that every extractor can return a plain list and callers that care about
    cost read ``usage`` where it exists. Equality compares the facts only.
    """

    def __init__(self, facts: Iterable[ExtractedFact] = (), usage: TokenUsage | None = None):
        super().__init__(facts)
        self.usage = usage


class FactExtractor(Protocol):
    """Turns texts into facts. Never drops output silently: a provider that cannot produce a
    valid answer raises ``ProviderError`` (or a more specific ``AgentCoreError``)."""

    async def extract(self, texts: Sequence[SourceText]) -> list[ExtractedFact]: ...


EXTRACTION_SOURCE = "extraction"  # Memory.source of the facts this service stores

_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}’‘“”]")
_SPACES = re.compile(r"\s+")


def normalize_fact(text: str) -> str:
    """The form two facts are compared in: lowercase, no punctuation, single spaces."""
    return _SPACES.sub(" ", _PUNCTUATION.sub(" ", text.lower())).strip()


def source_text(memory: Memory) -> SourceText:
    """A memory as extractor input: ``metadata.speaker`` (or ``name``) and ``metadata.role``
    say who spoke, ``metadata.at`` (ISO time) when; else the memory's creation time."""
    meta = memory.metadata
    speaker = _text(meta.get("speaker")) or _text(meta.get("name"))
    at = memory.created_at
    if isinstance(meta.get("at"), str):
        # A malformed optional hint is not an error: the creation time stands.
        with contextlib.suppress(ValueError):
            at = datetime.fromisoformat(meta["at"])
    return SourceText(memory.id, memory.content, speaker, _text(meta.get("role")), at)


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass
class _Stored:
    """Facts this call stored or merged, by id, in the order first touched."""

    facts: dict[str, Memory] = field(default_factory=dict)
    scopes: dict[str, Memory] = field(default_factory=dict)  # scope key -> one fact of it


class SemanticMemoryService:
    """Stores extracted facts; see the module docstring.

    ``duplicate_similarity`` is the cosine at or above which two facts of a scope are one.
    """

    def __init__(
        self,
        memory: MemoryManager,
        uow_factory: UnitOfWorkFactory,
        extractor: FactExtractor,
        clock: Clock,
        capacity: int,
        duplicate_similarity: float = 0.95,
        max_sources: int = 100,
    ) -> None:
        self._memory = memory
        self._uow_factory = uow_factory
        self._extractor = extractor
        self._clock = clock
        self._capacity = capacity
        self._duplicate_similarity = duplicate_similarity
        self._max_sources = max_sources

    async def extract(self, scope: ScopeIds, memory_ids: Sequence[str]) -> list[Memory]:
        """Extract facts from the memories with these ids (each visible to ``scope``)."""
        ids = list(dict.fromkeys(memory_ids))
        if not ids or len(ids) > self._max_sources:
            raise InvalidParams(
                f"give 1 to {self._max_sources} memory ids",
                errors=[{"field": "memory_ids", "message": f"1 to {self._max_sources} ids"}],
            )
        keys, now = visible_scope_keys(scope), self._clock()
        async with self._uow_factory(read_only=True) as uow:
            found = {m.id: m for m in await uow.memories.get_many(ids)}
        for memory_id in ids:
            memory = found.get(memory_id)
            if memory is None or memory.scope_key not in keys or memory.is_expired(now):
                raise MemoryNotFound(f"no memory {memory_id} in the given scope")
        return await self.extract_from([found[i] for i in ids])

    async def extract_from(self, memories: Sequence[Memory]) -> list[Memory]:
        """Store the facts found in ``memories``, each in the scope of its source memory.

        Returns the facts stored or merged (a merged fact is the existing one, its
        ``metadata.source_ids`` grown). Sources of different scopes are extracted separately,
        so a fact never mixes scopes.
        """
        by_scope: dict[str, list[Memory]] = {}
        for memory in memories:
            if memory.source != EXTRACTION_SOURCE:  # never extract facts from facts
                by_scope.setdefault(memory.scope_key, []).append(memory)
        stored = _Stored()
        for sources in by_scope.values():
            facts = await self._extractor.extract([source_text(m) for m in sources])
            by_id = {m.id: m for m in sources}
            for fact in facts:
                known = [i for i in dict.fromkeys(fact.source_ids) if i in by_id]
                if known:  # an id the extractor made up names nothing here
                    private = any(by_id[i].private for i in known)
                    await self._store(fact, known, by_id[known[0]], stored, private)
        pruned: set[str] = set()
        for one_of_scope in stored.scopes.values():
            pruned |= await self._prune(one_of_scope)
        return [m for m in stored.facts.values() if m.id not in pruned]

    async def _store(
        self,
        fact: ExtractedFact,
        source_ids: list[str],
        source: Memory,
        stored: _Stored,
        private: bool,
    ) -> None:
        """Store ``fact`` (or merge it into the same fact of the scope); a fact of a sensitive
        memory is sensitive too, so it is never promoted either."""
        existing = await self._duplicate_of(fact.content, source)
        if existing is None:
            memory = await self._memory.add(
                NewMemory(
                    content=fact.content,
                    scope=source.scope,
                    layer=Layer.SEMANTIC.value,
                    scope_level=source.scope_level.value,
                    metadata={"category": fact.category.value, "source_ids": source_ids},
                    critical=fact.critical,
                    importance=fact.importance,
                    source=EXTRACTION_SOURCE,
                    sensitive=private,
                    statement=fact.statement,
                )
            )
        else:
            memory = await self._merge(existing, fact, source_ids, source.scope)
        stored.facts[memory.id] = memory
        stored.scopes.setdefault(memory.scope_key, memory)

    async def _duplicate_of(self, content: str, source: Memory) -> Memory | None:
        """An existing fact of the source's scope that says the same thing, if any."""
        outcome = await self._memory.search(
            SearchQuery(
                content,
                source.scope,
                layers=[Layer.SEMANTIC.value],
                scopes=[source.scope_level.value],
                limit=3,
                dense_only=True,  # the 0.95 bar is a cosine: lexical overlap is not a paraphrase
            )
        )
        wanted = normalize_fact(content)
        for hit in outcome.results:
            same_text = normalize_fact(hit.memory.content) == wanted
            if same_text or hit.similarity >= self._duplicate_similarity:
                return hit.memory
        return None

    async def _merge(
        self, existing: Memory, fact: ExtractedFact, source_ids: list[str], scope: ScopeIds
    ) -> Memory:
        """One fact with both sources: union the source ids; a critical duplicate makes it
        critical (never prune what any source called a requirement)."""
        before = existing.metadata.get("source_ids")
        previous = [str(i) for i in before] if isinstance(before, list) else []
        union = list(dict.fromkeys([*previous, *source_ids]))
        changes = MemoryChanges(
            metadata=None if union == previous else {"source_ids": union},
            critical=True if fact.critical and not existing.critical else None,
        )
        if changes.metadata is None and changes.critical is None:
            return existing
        return await self._memory.update(existing.id, scope, changes)

    async def _prune(self, fact: Memory) -> set[str]:
        """Hold the fact's scope to capacity; returns the ids deleted."""
        key = fact.scope_key
        async with self._uow_factory(read_only=True) as uow:
            _, total = await uow.memories.page(
                ListQuery(scope_keys=[key], layer=Layer.SEMANTIC, limit=1)
            )
            if total <= self._capacity:
                return set()
            facts = await uow.memories.get_many(
                await uow.memories.ids_in_scope(key, Layer.SEMANTIC)
            )
        candidates = sorted((m for m in facts if not m.critical), key=_keep_priority)
        doomed = candidates[: max(len(facts) - self._capacity, 0)]
        for memory in doomed:
            # Deleted meanwhile by someone else: the goal is reached either way.
            with contextlib.suppress(MemoryNotFound):
                await self._memory.delete(memory.id, fact.scope)
        return {m.id for m in doomed}


def _keep_priority(memory: Memory) -> tuple[float, int, datetime]:
    """Lowest first: the least important, then least accessed, then least recently used."""
    last_used = memory.last_accessed_at or memory.updated_at
    return (memory.importance, memory.access_count, last_used)
