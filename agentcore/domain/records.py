"""Building and changing memory records: the rules every write path shares."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from agentcore.domain.critical import states_requirement
from agentcore.domain.errors import ContentTooLong, InvalidLayer, InvalidParams
from agentcore.domain.importance import score_importance
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel, new_id
from agentcore.domain.scopes import owning_level
from agentcore.domain.updates import Statement, statement_of

STORED_LAYERS = (Layer.EPISODIC, Layer.SEMANTIC, Layer.PROCEDURAL)
FACT_LAYERS = (Layer.EPISODIC, Layer.SEMANTIC)  # what a user or agent states: may update
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


def content_hash(content: str) -> str:
    """What makes two contents the same text (exact duplicates): SHA-256 of the text in NFC
    with its whitespace runs made one space and its ends trimmed. Case and punctuation count."""
    text = " ".join(unicodedata.normalize("NFC", content).split())
    return hashlib.sha256(text.encode()).hexdigest()


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
    importance: float | None = None  # None: scored from the content (``score_importance``)
    confidence: float | None = None
    compacted_from_ids: tuple[str, ...] = ()
    sensitive: bool = False  # never promoted to a broader scope
    promoted_from_id: str | None = None
    created_in_session_id: str | None = None  # default: the scope's session
    created_at: datetime | None = None  # an imported memory keeps its time; default: now
    statement: Statement | None = None  # the slot it fills, when an extractor named it
    # An exact repeat of a live memory of its scope, layer and stage answers with that memory
    # instead of storing another (services.duplicates).
    unique: bool = False


@dataclass(frozen=True, slots=True)
class MemoryChanges:
    """A partial update; ``None`` leaves a field as it is. ``metadata`` is merged shallowly;
    ``clear_expiry`` makes the memory permanent again."""

    content: str | None = None
    metadata: dict[str, Any] | None = None
    tags: tuple[str, ...] | None = None
    critical: bool | None = None
    expires_at: datetime | None = None
    ttl_seconds: int | None = None
    clear_expiry: bool = False
    importance: float | None = None
    sensitive: bool | None = None


def _importance(value: float) -> float:
    if not 0 <= value <= 1:
        raise InvalidParams(
            "importance must be between 0 and 1",
            errors=[{"field": "importance", "message": "0 to 1"}],
        )
    return value


def build_memory(
    new: NewMemory,
    now: datetime,
    max_length: int,
    embedding_model: str,
    default_ttl: Mapping[ScopeLevel, int] | None = None,
) -> Memory:
    """Validate a request and turn it into a record. Raises before anything is stored. A
    memory given no expiry gets its scope level's ``default_ttl`` (seconds), if any."""
    level = owning_level(new.scope, new.scope_level)
    layer = DEFAULT_LAYER if new.layer is None else parse_layer(new.layer)
    # Constraints and requirements are critical by themselves (FR-5.2).
    critical = new.critical or states_requirement(new.content)
    ttl = new.ttl_seconds
    if new.expires_at is None and ttl is None:
        ttl = (default_ttl or {}).get(level)
    importance = (
        score_importance(new.content, critical)
        if new.importance is None
        else _importance(new.importance)
    )
    content = check_content(new.content, max_length)
    statement = new.statement or (
        statement_of(content, speaker_of(new.metadata)) if layer in FACT_LAYERS else None
    )
    return Memory(
        id=new.id or new_id(),
        content=content,
        layer=layer,
        scope_level=level,
        scope=new.scope,
        created_at=new.created_at or now,
        updated_at=now,
        metadata=dict(new.metadata),
        tags=list(dict.fromkeys(new.tags)),
        key=new.key,
        stage_id=new.stage_id,
        critical=critical,
        flagged=new.critical,
        expires_at=expiry(now, new.expires_at, ttl),
        source=new.source,
        importance=importance,
        confidence=new.confidence,
        promoted_from_id=new.promoted_from_id,
        compacted_from_ids=list(new.compacted_from_ids),
        created_in_session_id=new.created_in_session_id or new.scope.session_id,
        embedding_model=embedding_model,
        sensitive=new.sensitive,
        fact_slot=None if statement is None else statement.slot,
        fact_value=None if statement is None else statement.value,
    )


def speaker_of(metadata: Mapping[str, Any]) -> str | None:
    """Who "I" is in a memory: ``metadata.speaker`` (a conversation turn's)."""
    speaker = metadata.get("speaker")
    return speaker if isinstance(speaker, str) and speaker.strip() else None


def apply_changes(
    memory: Memory, changes: MemoryChanges, now: datetime, max_length: int
) -> tuple[Memory, dict[str, Any], dict[str, Any]]:
    """The updated memory and the changed fields before and after (for the history)."""
    updates: dict[str, Any] = {}
    if changes.content is not None:
        updates["content"] = check_content(changes.content, max_length)
    if changes.metadata is not None:
        updates["metadata"] = {**memory.metadata, **changes.metadata}
    if "content" in updates and updates["content"] != memory.content:
        # the slot the words fill now (none when they fill none), not the one they filled
        metadata = updates.get("metadata", memory.metadata)
        statement = (
            statement_of(updates["content"], speaker_of(metadata))
            if memory.layer in FACT_LAYERS
            else None
        )
        updates["fact_slot"] = None if statement is None else statement.slot
        updates["fact_value"] = None if statement is None else statement.value
    if changes.tags is not None:
        updates["tags"] = list(dict.fromkeys(changes.tags))
    if changes.critical is not None:
        updates["critical"] = updates["flagged"] = changes.critical
    if changes.importance is not None:
        updates["importance"] = _importance(changes.importance)
    if changes.sensitive is not None:
        updates["sensitive"] = changes.sensitive
    if changes.clear_expiry:
        updates["expires_at"] = None
    elif changes.expires_at is not None or changes.ttl_seconds is not None:
        updates["expires_at"] = expiry(now, changes.expires_at, changes.ttl_seconds)
    updates = {name: value for name, value in updates.items() if value != getattr(memory, name)}
    before = {name: getattr(memory, name) for name in updates}
    if not updates:
        return memory, {}, {}
    return replace(memory, updated_at=now, **updates), before, updates
