"""Building and changing memory records: the rules every write path shares."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from agentcore.domain.critical import states_requirement
from agentcore.domain.errors import ContentTooLong, InvalidLayer, InvalidParams
from agentcore.domain.models import Layer, Memory, ScopeIds, new_id
from agentcore.domain.scopes import owning_level

STORED_LAYERS = (Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL)
DEFAULT_LAYER = Layer.EPISODIC


def parse_layer(value: str, *, allow_working: bool = False) -> Layer:
    try:
        layer = Layer(value)
    except ValueError:
        allowed = ", ".join(layer.value for layer in Layer)
        raise InvalidLayer(f"unknown layer {value!r}; expected one of: {allowed}") from None
    if layer is Layer.WORKING and not allow_working:
        raise InvalidLayer(
            "working memory is per session and lives outside the memory store; "
            "use memory.working.* (layer must be episodic, semantic or procedural)"
        )
    return layer


def check_content(content: str, max_length: int) -> str:
    if not content.strip():
        raise InvalidParams("content is blank", errors=[{"field": "content", "message": "blank"}])
    if len(content) > max_length:
        raise ContentTooLong(
            f"content has {len(content)} characters; the limit is {max_length}",
            max_length=max_length,
        )
    return content


def expiry(now: datetime, expires_at: datetime | None, ttl_seconds: int | None) -> datetime | None:
    if expires_at is not None and ttl_seconds is not None:
        raise InvalidParams(
            "give expires_at or ttl_seconds, not both",
            errors=[{"field": "ttl_seconds", "message": "conflicts with expires_at"}],
        )
    if ttl_seconds is not None:
        return now + timedelta(seconds=ttl_seconds)
    if expires_at is not None and expires_at <= now:
        raise InvalidParams(
            "expires_at is in the past",
            errors=[{"field": "expires_at", "message": "must be in the future"}],
        )
    return expires_at


@dataclass(frozen=True, slots=True)
class NewMemory:
    """What a caller asks to store (already type-checked at the edge)."""

    content: str
    scope: ScopeIds
    layer: str | None = None
    scope_level: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    critical: bool = False
    stage_id: str | None = None
    expires_at: datetime | None = None
    ttl_seconds: int | None = None
    key: str | None = None
    source: str = "api"
    # A caller-chosen id makes a write idempotent (e.g. a working-memory item moved to the
    # episodic layer twice after a crash); None means a new random id.
    id: str | None = None
    importance: float = 0.5
    confidence: float | None = None
    compacted_from_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryChanges:
    """A partial update; ``None`` leaves a field as it is. ``metadata`` is merged shallowly."""

    content: str | None = None
    metadata: dict[str, Any] | None = None
    tags: tuple[str, ...] | None = None
    critical: bool | None = None
    expires_at: datetime | None = None


def build_memory(new: NewMemory, now: datetime, max_length: int, embedding_model: str) -> Memory:
    """Validate a request and turn it into a record. Raises before anything is stored."""
    level = owning_level(new.scope, new.scope_level)
    layer = DEFAULT_LAYER if new.layer is None else parse_layer(new.layer)
    return Memory(
        id=new.id or new_id(),
        content=check_content(new.content, max_length),
        layer=layer,
        scope_level=level,
        scope=new.scope,
        created_at=now,
        updated_at=now,
        metadata=dict(new.metadata),
        tags=list(dict.fromkeys(new.tags)),
        key=new.key,
        stage_id=new.stage_id,
        # Constraints and requirements are critical by themselves (FR-5.2).
        critical=new.critical or states_requirement(new.content),
        flagged=new.critical,
        expires_at=expiry(now, new.expires_at, new.ttl_seconds),
        source=new.source,
        importance=new.importance,
        confidence=new.confidence,
        compacted_from_ids=list(new.compacted_from_ids),
        created_in_session_id=new.scope.session_id,
        embedding_model=embedding_model,
    )


def apply_changes(
    memory: Memory, changes: MemoryChanges, now: datetime, max_length: int
) -> tuple[Memory, dict[str, Any], dict[str, Any]]:
    """The updated memory and the changed fields before and after (for the history)."""
    updates: dict[str, Any] = {}
    if changes.content is not None and changes.content != memory.content:
        updates["content"] = check_content(changes.content, max_length)
    if changes.metadata is not None:
        merged = {**memory.metadata, **changes.metadata}
        if merged != memory.metadata:
            updates["metadata"] = merged
    if changes.tags is not None and list(dict.fromkeys(changes.tags)) != memory.tags:
        updates["tags"] = list(dict.fromkeys(changes.tags))
    if changes.critical is not None and (changes.critical, changes.critical) != (
        memory.critical,
        memory.flagged,
    ):
        updates["critical"] = updates["flagged"] = changes.critical
    if changes.expires_at is not None and changes.expires_at != memory.expires_at:
        updates["expires_at"] = expiry(now, changes.expires_at, None)
    before = {name: getattr(memory, name) for name in updates}
    if not updates:
        return memory, {}, {}
    return replace(memory, updated_at=now, **updates), before, updates
