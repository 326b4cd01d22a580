"""Promotion (``memory.promote``) and session close (``memory.session.close``).

A promotion writes a new memory at a broader scope (``agentcore.domain.promotion``), its text
with personal data redacted (``agentcore.domain.pii``), carrying ``promoted_from_id`` and the
session of origin; ``promote`` events go on both memories; the original stays unless the
caller asks to delete it. A memory marked sensitive (or ``metadata.sensitive``/``private``) or
holding a secret (a password, a private key, credentials) is never promoted.

Closing a session flushes its working memory into episodic memories, consolidates them into
semantic facts (``consolidation``), then promotes every
memory of the session (at the session, agent or task level) whose current importance
(``agentcore.domain.importance``) reaches the threshold, to the user scope the call or the
memory names, else the narrowest persistent scope it names (project, team, ...). A memory
promoted before is not promoted again, so closing twice promotes nothing twice.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from agentcore.domain.clock import Clock
from agentcore.domain.errors import InvalidPromotion
from agentcore.domain.importance import current_importance
from agentcore.domain.models import EventKind, Memory, ScopeIds, ScopeLevel
from agentcore.domain.pii import PiiKind, Redaction, redact, secret_in
from agentcore.domain.promotion import (
    VOLATILE,
    check_promotion,
    first_persistent,
    promoted_scope,
)
from agentcore.domain.records import NewMemory
from agentcore.domain.scopes import parse_level
from agentcore.services.lifecycle.consolidation import Consolidator
from agentcore.services.memory_manager import MemoryManager, Retire
from agentcore.services.working_memory import WorkingMemoryService


@dataclass(frozen=True, slots=True)
class PromotionSettings:
    threshold: float = 0.8  # current importance a session memory needs to be promoted
    decay_per_day: float = 0.01
    phone_region: str = "US"  # how phone numbers without a country code are read


@dataclass(frozen=True, slots=True)
class Promoted:
    memory: Memory  # the new memory at the broader scope
    source_id: str
    redacted: Counter[PiiKind]


@dataclass(slots=True)
class SessionReport:
    session_id: str
    flushed_working: int = 0
    evaluated: int = 0
    promoted: list[Promoted] = field(default_factory=list)
    already_promoted: list[str] = field(default_factory=list)  # source ids of earlier closes
    skipped_sensitive: list[str] = field(default_factory=list)
    below_threshold: int = 0
    no_persistent_scope: int = 0
    consolidated_facts: int = 0  # semantic facts stored or merged from the session
    target_scope: str | None = None

    @property
    def redacted(self) -> Counter[PiiKind]:
        total: Counter[PiiKind] = Counter()
        for promoted in self.promoted:
            total.update(promoted.redacted)
        return total


class PromotionService:
    def __init__(
        self,
        memory: MemoryManager,
        working: WorkingMemoryService,
        consolidator: Consolidator,
        clock: Clock,
        settings: PromotionSettings,
    ) -> None:
        self._memory = memory
        self._working = working
        self._consolidator = consolidator
        self._clock = clock
        self._settings = settings

    async def promote(
        self, memory_id: str, scope: ScopeIds, target: str, *, delete_original: bool = False
    ) -> Promoted:
        """Promote one memory the caller sees to the ``target`` scope level (module doc).
        ``INVALID_PROMOTION`` for a level that is not upward, or a sensitive memory."""
        [source] = await self._memory.read([memory_id], scope)
        level = parse_level(target)
        check_promotion(source.scope_level, level)
        reason = _withheld(source)
        if reason is not None:
            raise InvalidPromotion(
                f"this memory is never promoted: {reason}", memory_id=memory_id, reason=reason
            )
        return await self._promote(source, promoted_scope(source.scope, scope, level), level,
                                   delete_original)  # fmt: skip

    async def close_session(self, session_id: str, scope: ScopeIds) -> SessionReport:
        """Flush the session's working memory, then promote what matters (module doc)."""
        report = SessionReport(session_id)
        report.flushed_working = len((await self._working.flush(session_id)).memory_ids)
        memories = await self._memory.in_session(session_id, VOLATILE)
        report.consolidated_facts = len(await self._consolidator.memories(memories))
        memories = await self._memory.in_session(session_id, VOLATILE)  # with the new facts
        report.evaluated = len(memories)
        done = await self._memory.promoted_from([m.id for m in memories])
        now = self._clock()
        for memory in memories:
            if memory.id in done:
                report.already_promoted.append(memory.id)
            elif _withheld(memory) is not None:
                report.skipped_sensitive.append(memory.id)
            elif current_importance(memory, now, self._settings.decay_per_day) < (
                self._settings.threshold
            ):
                report.below_threshold += 1
            else:
                target = _session_target(memory.scope, scope)
                if target is None:  # neither the call nor the memory names a persistent scope
                    report.no_persistent_scope += 1
                    continue
                report.target_scope = target.value
                new_scope = promoted_scope(memory.scope, scope, target)
                report.promoted.append(await self._promote(memory, new_scope, target, False))
        return report

    async def _promote(
        self, source: Memory, scope: ScopeIds, level: ScopeLevel, delete_original: bool
    ) -> Promoted:
        cleaned: Redaction = redact(source.content, self._settings.phone_region)
        new = NewMemory(
            content=cleaned.text,
            scope=scope,
            layer=source.layer.value,
            scope_level=level.value,
            metadata=dict(source.metadata),
            tags=tuple(source.tags),
            critical=source.flagged,
            source=source.source,
            importance=source.importance,
            confidence=source.confidence,
            promoted_from_id=source.id,
            created_in_session_id=source.created_in_session_id,
        )
        retire = Retire.DELETE if delete_original else Retire.KEEP
        memory = await self._memory.derive(new, EventKind.PROMOTE, [source], retire=retire)
        return Promoted(memory, source.id, cleaned.counts)


def _withheld(memory: Memory) -> str | None:
    """Why a memory is never promoted, or None."""
    if memory.private:
        return "it is marked sensitive"
    secret = secret_in(memory.content)
    return None if secret is None else f"it holds a secret ({secret})"


def _session_target(memory: ScopeIds, call: ScopeIds) -> ScopeLevel | None:
    """Where a session memory goes: the user scope (from the call or the memory), else the
    narrowest persistent scope either names."""
    if call.user_id is not None or memory.user_id is not None:
        return ScopeLevel.USER
    return first_persistent(call) or first_persistent(memory)
