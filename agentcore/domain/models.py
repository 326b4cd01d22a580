"""Domain values: layers, scopes, stages and the memory record itself."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import Any


class Layer(StrEnum):
    """The kind of memory (DESIGN §1)."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class ScopeLevel(StrEnum):
    """Who and where a memory belongs. Declared most specific first: that order is precedence."""

    TASK = "task"
    AGENT = "agent"
    USER = "user"
    SESSION = "session"
    PROJECT = "project"
    TEAM = "team"
    ORG = "org"
    COMPANY = "company"

    @property
    def id_field(self) -> str:
        return _ID_FIELDS[self]

    @property
    def precedence(self) -> int:
        """0 for the most specific level."""
        return _PRECEDENCE[self]


# Looked up, not formatted: a search reads them for every candidate, and an enum's ``value``
# is a descriptor call.
_PRECEDENCE = {level: rank for rank, level in enumerate(ScopeLevel)}
_ID_FIELDS = {level: f"{level.value}_id" for level in ScopeLevel}
_KEY_PREFIXES = {level: f"{level.value}:" for level in ScopeLevel}


class StageType(StrEnum):
    PLANNING = "planning"
    EXECUTION = "execution"
    REFLECTION = "reflection"
    VERIFICATION = "verification"


@dataclass(frozen=True, slots=True)
class ScopeIds:
    """The scope identifiers a memory carries or a caller supplies (BR-1: at least one)."""

    task_id: str | None = None
    agent_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    project_id: str | None = None
    team_id: str | None = None
    org_id: str | None = None
    company_id: str | None = None

    def get(self, level: ScopeLevel) -> str | None:
        value: str | None = getattr(self, _ID_FIELDS[level])
        return value

    def present(self) -> dict[ScopeLevel, str]:
        """The supplied identifiers by level, most specific first."""
        return {level: value for level in ScopeLevel if (value := self.get(level)) is not None}

    def as_dict(self) -> dict[str, str | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def scope_key(level: ScopeLevel, identifier: str) -> str:
    """The single keyword a memory is filtered by: its scope level and that level's id."""
    return _KEY_PREFIXES[level] + identifier


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass(slots=True)
class Memory:
    """One stored memory. Postgres (or the embedded SQLite file) holds the truth about it."""

    id: str
    content: str
    layer: Layer
    scope_level: ScopeLevel
    scope: ScopeIds
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    key: str | None = None
    stage_id: str | None = None
    critical: bool = False  # flagged, or stating a requirement (FR-5.2)
    importance: float = 0.5
    access_count: int = 0
    last_accessed_at: datetime | None = None
    expires_at: datetime | None = None
    # Provenance (scoped-memory-store §5.7): where the memory came from and what it replaced.
    source: str = "api"
    confidence: float | None = None
    promoted_from_id: str | None = None
    compacted_from_ids: list[str] = field(default_factory=list)
    created_in_session_id: str | None = None
    embedding_model: str | None = None
    flagged: bool = False  # the caller marked it critical (not only its content)
    sensitive: bool = False  # the caller marked it sensitive: never promoted
    compacted_into_id: str | None = None  # compacted: out of search and lists, read by id
    # Knowledge that updates (``agentcore.domain.updates``): the attribute slot the memory
    # fills and its value; a newer memory of the scope with another value supersedes it.
    fact_slot: str | None = None
    fact_value: str | None = None
    valid_to: datetime | None = None  # when a newer memory superseded it
    superseded_by: str | None = None

    def current_at(self, when: datetime) -> bool:
        """Not yet superseded at ``when``."""
        return self.valid_to is None or self.valid_to > when

    @property
    def private(self) -> bool:
        """Never to be promoted: marked sensitive, or ``metadata.sensitive``/``private``."""
        flags = (self.metadata.get("sensitive"), self.metadata.get("private"))
        return self.sensitive or True in flags

    @property
    def scope_key(self) -> str:
        identifier = self.scope.get(self.scope_level)
        assert identifier is not None, "a memory always carries its own level's id"
        return scope_key(self.scope_level, identifier)

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


class EventKind(StrEnum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    PROMOTE = "promote"
    COMPACT = "compact"


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    """One change in a memory's history; ``before``/``after`` hold the changed fields.

    ``scope_key`` is kept so the owner can still read the history after a delete.
    """

    id: str
    memory_id: str
    scope_key: str
    kind: EventKind
    at: datetime
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    actor: str | None = None
