"""The procedural layer (FR-1.4): action → outcome records aggregated into procedures.

Everything is stored as ordinary memories of layer ``procedural`` through ``MemoryManager``:

- a **record** is one observed action, the context it ran in and its outcome
  (``metadata.kind == "record"``); its content is a readable sentence, so it is searchable;
- a **procedure** summarizes every record of one *action pattern* in one scope
  (``metadata.kind == "procedure"``): occurrences, successes, success rate, recent contexts.
  It exists once the pattern has recurred ``min_occurrences`` times and is re-derived from the
  records after each new record, so it never drifts from them.

The action pattern (``action_key``) is the action with its variable parts replaced; see
``action_pattern``. Procedures are found by context similarity (``search``).

Concurrency: within a process, aggregation of one (scope, pattern) runs under one asyncio lock,
so concurrent records never create two procedures or write stale counts. Across processes the
procedure carries the memory key ``procedure:<action_key>``, which the store keeps unique per
scope: the loser of a creation race gets ``Conflict`` and updates the winner's procedure
instead. A writer that raced another process re-counts after writing and writes again when the
records changed meanwhile, so the procedure converges on the records.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentcore.domain.errors import Conflict, InvalidParams
from agentcore.domain.filters import metadata_equals
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.services.memory_manager import ListRequest, MemoryManager
from agentcore.services.retrieval import SearchQuery

RECORD = "record"
PROCEDURE = "procedure"
SOURCE = "procedural"
KEY_PREFIX = "procedure:"

MAX_ACTION_KEY = 200  # keeps ``procedure:<action_key>`` within the 255-character key column
RECENT_RECORD_IDS = 10  # record ids a procedure lists, newest first
RECENT_CONTEXTS = 3  # distinct recent contexts a procedure lists and embeds
_SNIPPET = 300  # characters of an action, context or outcome quoted in a procedure's content
_MAX_ROUNDS = 3  # re-derivations of a procedure that raced a writer in another process

# The variable parts of an action, replaced in this order (an earlier rule's match is not
# seen by a later one). Applied to the lower-cased action.
_PATTERN_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
    # Quotes count only at word edges, so the apostrophes of "don't" or "user's" are kept.
    (re.compile(r"(?<!\w)(?:\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|“[^”\n]*”|‘[^’\n]*’)(?!\w)"), "<str>"),
    (re.compile(r"(?<![\w/])[a-z]:\\\S*"), "<path>"),
    # A path starts at /, ~/, ./ or ../, or has two slashes, or ends in a file extension;
    # "and/or" stays a word.
    (re.compile(r"(?<![\w/])(?:~|\.{1,2})?/[\w.@%+~-]+(?:/[\w.@%+~-]*)*"), "<path>"),
    (re.compile(r"(?<![\w/])[\w.-]+/[\w.-]+/[\w./-]*"), "<path>"),
    (re.compile(r"(?<![\w/])[\w.-]+/[\w./-]*\.[a-z0-9]{1,5}\b"), "<path>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    # Hex digests (git shas, hashes): 7+ hex characters with both a digit and a letter.
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), "<id>"),
    # Identifiers: a word, a separator and a number (req-123, user_42), or a word starting with
    # a letter that holds 3+ digits (abc123); short names with a digit (s3, ipv4) are kept.
    (re.compile(r"\b[a-z][a-z0-9]*[-_#]\d[\w-]*|\b(?=[a-z_])(?=(?:[a-z_]*\d){3})\w+"), "<id>"),
    # Numbers, versions, times and dates, with an optional unit (3, 2.5, v1.2, 10ms, 5%).
    (re.compile(r"\bv?\d+(?:[.,:]\d+)*(?:[a-z]+\b|%)?"), "<num>"),
)
_SPACE = re.compile(r"\s+")
_EDGE_PUNCTUATION = ".,;:!?"


def action_pattern(action: str) -> str:
    """The normalized form shared by every instance of an action.

    Lower-cased; URLs, e-mail addresses, quoted strings, file paths, UUIDs, hex digests,
    identifiers with numbers (``req-123``) and numbers (with versions, times and short units
    such as ``10ms``) become ``<url>``, ``<email>``, ``<str>``, ``<path>``, ``<id>`` and
    ``<num>``; whitespace is collapsed and edge punctuation dropped. So "Retry request 3 times"
    and "retry request  5 times." share the pattern ``retry request <num> times``. A pattern
    longer than 200 characters is cut and suffixed with a hash of the whole.
    """
    text = action.lower()
    for rule, placeholder in _PATTERN_RULES:
        text = rule.sub(placeholder, text)
    text = _SPACE.sub(" ", text).strip().strip(_EDGE_PUNCTUATION).strip()
    if not text:
        raise InvalidParams(
            "action has nothing to match on", errors=[{"field": "action", "message": "blank"}]
        )
    if len(text) > MAX_ACTION_KEY:
        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        text = f"{text[: MAX_ACTION_KEY - 17]}#{digest}"
    return text


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    """A stored record, its procedure (``None`` below the threshold) and the pattern's counts."""

    record: Memory
    procedure: Memory | None
    action_key: str
    occurrences: int
    successes: int

    @property
    def success_rate(self) -> float:
        return _rate(self.successes, self.occurrences)


@dataclass(frozen=True, slots=True)
class ProcedureMatch:
    """A procedure found for a context. ``relevant``: its similarity is within the relevance
    band of the best match (see ``ProceduralMemoryService.search``)."""

    procedure: Memory
    similarity: float
    action: str
    occurrences: int
    successes: int
    success_rate: float
    relevant: bool


@dataclass(frozen=True, slots=True)
class _Stats:
    occurrences: int
    successes: int
    recent: list[Memory]  # the newest records of the pattern, newest first


def _rate(successes: int, occurrences: int) -> float:
    return round(successes / occurrences, 4) if occurrences else 0.0


def _clip(text: str, limit: int = _SNIPPET) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _record_content(action: str, context: str, outcome: str, success: bool) -> str:
    result = "succeeded" if success else "failed"
    return f"Action: {action.strip()}. Context: {context.strip()}. It {result}: {outcome.strip()}"


class ProceduralMemoryService:
    """Records actions with their outcomes and finds the procedures that worked in a context."""

    def __init__(
        self,
        memory: MemoryManager,
        min_occurrences: int,
        *,
        relevance_band: float = 0.1,
        candidates: int = 20,
        max_content_length: int = 10_000,
    ) -> None:
        """``min_occurrences``: records of a pattern before it becomes a procedure
        (PROCEDURAL_MEMORY_MIN_OCCURRENCES). ``relevance_band``: how far below the best
        match's similarity a procedure still counts as relevant. ``candidates``: procedures
        compared per search, at least ``limit``. ``max_content_length``: the store's limit
        (MEMORY_MAX_CONTEXT_LENGTH); a procedure's generated content is cut to fit it."""
        if min_occurrences < 1:
            raise ValueError("min_occurrences must be at least 1")
        self._memory = memory
        self._min_occurrences = min_occurrences
        self._band = relevance_band
        self._candidates = candidates
        self._max_content = max_content_length
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def record(
        self,
        action: str,
        context: str,
        outcome: str,
        success: bool,
        scope: ScopeIds,
        *,
        scope_level: str | None = None,
        stage_id: str | None = None,
    ) -> RecordOutcome:
        """Store one action → outcome record and bring its pattern's procedure up to date.

        The record is stored at ``scope_level`` (default: the most specific id in ``scope``);
        procedures aggregate the records of that one scope.
        """
        key = action_pattern(action)
        for name, value in (("context", context), ("outcome", outcome)):
            if not value.strip():
                raise InvalidParams(
                    f"{name} is blank", errors=[{"field": name, "message": "blank"}]
                )
        stored = await self._memory.add(
            NewMemory(
                content=_record_content(action, context, outcome, success),
                scope=scope,
                layer=Layer.PROCEDURAL.value,
                scope_level=scope_level,
                metadata={
                    "kind": RECORD,
                    "action": action.strip(),
                    "action_key": key,
                    "context": context.strip(),
                    "outcome": outcome.strip(),
                    "success": success,
                },
                stage_id=stage_id,
                source=SOURCE,
            )
        )
        owner = _owner_scope(stored)
        async with self._lock(stored.scope_key, key):
            stats, procedure = await self._aggregate(owner, stored.scope_level, key)
        return RecordOutcome(stored, procedure, key, stats.occurrences, stats.successes)

    async def search(
        self,
        context: str,
        scope: ScopeIds,
        *,
        scopes: Sequence[str] | None = None,
        limit: int = 5,
    ) -> list[ProcedureMatch]:
        """The procedures for ``context``, best success rate first among the relevant ones.

        The ``max(limit, candidates)`` procedures most similar to the context (cosine, clipped
        to [0, 1]) are compared. Relevant are those whose similarity is at least the best
        similarity minus the relevance band (0.1 by default): they come first, by success rate,
        ties by similarity. The others follow by similarity. At most ``limit`` are returned.
        """
        outcome = await self._memory.search(
            SearchQuery(
                query=context,
                scope=scope,
                layers=[Layer.PROCEDURAL.value],
                scopes=scopes,
                limit=max(limit, self._candidates),
                where=metadata_equals({"kind": PROCEDURE}),
            )
        )
        if not outcome.results:
            return []
        floor = max(hit.similarity for hit in outcome.results) - self._band
        matches = [
            _match(hit.memory, hit.similarity, hit.similarity >= floor) for hit in outcome.results
        ]
        matches.sort(
            key=lambda m: (m.relevant, m.success_rate if m.relevant else 0.0, m.similarity),
            reverse=True,
        )
        return matches[:limit]

    def _lock(self, scope_key: str, action_key: str) -> asyncio.Lock:
        """One lock per (scope, pattern), dropped once no coroutine holds or awaits it."""
        lock = self._locks.get((scope_key, action_key))
        if lock is None:
            lock = asyncio.Lock()
            self._locks[(scope_key, action_key)] = lock
        return lock

    async def _aggregate(
        self, owner: ScopeIds, level: ScopeLevel, key: str
    ) -> tuple[_Stats, Memory | None]:
        stats = await self._stats(owner, level, key)
        procedure = await self._write_procedure(owner, level, key, stats)
        for _ in range(_MAX_ROUNDS - 1):
            if procedure is None or await self._count(owner, level, key) == stats.occurrences:
                break
            # Another process added a record between our count and our write.
            stats = await self._stats(owner, level, key)
            procedure = await self._write_procedure(owner, level, key, stats)
        return stats, procedure

    async def _stats(self, owner: ScopeIds, level: ScopeLevel, key: str) -> _Stats:
        records = self._filter(key, RECORD)
        page = await self._memory.list_page(
            self._list(owner, level, records, limit=RECENT_RECORD_IDS)
        )
        successes = await self._memory.list_page(
            self._list(owner, level, {**records, "success": True}, limit=1)
        )
        return _Stats(page.total_count, successes.total_count, page.memories)

    async def _count(self, owner: ScopeIds, level: ScopeLevel, key: str) -> int:
        page = await self._memory.list_page(
            self._list(owner, level, self._filter(key, RECORD), limit=1)
        )
        return page.total_count

    async def _find_procedure(self, owner: ScopeIds, level: ScopeLevel, key: str) -> Memory | None:
        page = await self._memory.list_page(
            self._list(owner, level, self._filter(key, PROCEDURE), limit=1)
        )
        return page.memories[0] if page.memories else None

    async def _write_procedure(
        self, owner: ScopeIds, level: ScopeLevel, key: str, stats: _Stats
    ) -> Memory | None:
        """Create or update the pattern's procedure; ``None`` while below the threshold."""
        existing = await self._find_procedure(owner, level, key)
        if existing is None and stats.occurrences < self._min_occurrences:
            return None
        content, metadata = _procedure_body(key, stats)
        content = _clip(content, self._max_content)
        if existing is None:
            try:
                return await self._memory.add(
                    NewMemory(
                        content=content,
                        scope=owner,
                        layer=Layer.PROCEDURAL.value,
                        scope_level=level.value,
                        metadata=metadata,
                        key=KEY_PREFIX + key,
                        source=SOURCE,
                    )
                )
            except Conflict:
                # Another process created it first; ours becomes an update of theirs.
                existing = await self._find_procedure(owner, level, key)
                if existing is None:
                    raise Conflict(
                        f"the key {KEY_PREFIX + key!r} is taken by a memory that is not a "
                        "procedure in this scope"
                    ) from None
        changes = MemoryChanges(content=content, metadata=metadata)
        return await self._memory.update(existing.id, owner, changes)

    @staticmethod
    def _filter(key: str, kind: str) -> dict[str, str | int | bool]:
        return {"kind": kind, "action_key": key}

    @staticmethod
    def _list(
        owner: ScopeIds, level: ScopeLevel, metadata: dict[str, str | int | bool], limit: int
    ) -> ListRequest:
        return ListRequest(
            scope=owner,
            layer=Layer.PROCEDURAL.value,
            scope_level=level.value,
            metadata=metadata,
            limit=limit,
        )


def _owner_scope(memory: Memory) -> ScopeIds:
    """Only the owning level's id: a procedure belongs to the scope, not to one record's
    session or task."""
    identifier = memory.scope.get(memory.scope_level)
    return ScopeIds(**{memory.scope_level.id_field: identifier})


def _text(metadata: dict[str, Any], name: str) -> str:
    value = metadata.get(name)
    return value if isinstance(value, str) else ""


def _procedure_body(key: str, stats: _Stats) -> tuple[str, dict[str, Any]]:
    """A procedure's content (what its similarity to a context is computed on) and metadata."""
    recent = [m.metadata for m in stats.recent]
    # The most frequent wording among the recent records; ties go to the newest.
    actions = Counter(a for meta in recent if (a := _text(meta, "action")))
    action = actions.most_common(1)[0][0] if actions else key
    contexts = list(dict.fromkeys(c for meta in recent if (c := _text(meta, "context"))))
    contexts = contexts[:RECENT_CONTEXTS]
    succeeded = [meta for meta in recent if meta.get("success") is True]
    typical = _text((succeeded or recent or [{}])[0], "outcome")
    content = (
        f"Procedure: {_clip(action)} — works in {stats.successes}/{stats.occurrences} cases; "
        f"typical context: {'; '.join(_clip(c) for c in contexts)}; "
        f"typical outcome: {_clip(typical)}"
    )
    metadata = {
        "kind": PROCEDURE,
        "action_key": key,
        "action": action,
        "occurrences": stats.occurrences,
        "successes": stats.successes,
        "success_rate": _rate(stats.successes, stats.occurrences),
        "record_ids": [m.id for m in stats.recent],
        "contexts": contexts,
    }
    return content, metadata


def _count_field(metadata: dict[str, Any], name: str) -> int:
    value = metadata.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _match(memory: Memory, similarity: float, relevant: bool) -> ProcedureMatch:
    meta = memory.metadata
    occurrences = _count_field(meta, "occurrences")
    successes = _count_field(meta, "successes")
    return ProcedureMatch(
        procedure=memory,
        similarity=similarity,
        action=_text(meta, "action"),
        occurrences=occurrences,
        successes=successes,
        success_rate=_rate(successes, occurrences),
        relevant=relevant,
    )
