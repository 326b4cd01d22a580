"""The relational schema: memories, their history, the vector outbox and the COMPASS records.

Portable across Postgres and SQLite. ``alembic/versions`` creates exactly these tables; keep
the two in step (``alembic check`` shows any drift).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from agentcore.adapters.db.types import UTCDateTime, json_type

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# 64-bit on Postgres; SQLite autoincrements only a column declared exactly INTEGER.
BIGINT_PK = BigInteger().with_variant(Integer(), "sqlite")
UUID_LEN = 36
ID_LEN = 255  # identifiers supplied by callers (scope ids, stage ids)
KEY_LEN = 256  # memory keys (the key-value contract allows 256 characters)
SLOT_LEN = 120  # a fact's slot and value (``agentcore.domain.updates.MAX_SLOT``)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _uuid_pk() -> Mapped[str]:
    return mapped_column(String(UUID_LEN), primary_key=True)


def _scope_id() -> Mapped[str | None]:
    return mapped_column(String(ID_LEN), index=True)


def _json_list() -> Mapped[list[Any]]:
    return mapped_column(json_type(), nullable=False)


def _json_dict() -> Mapped[dict[str, Any]]:
    return mapped_column(json_type(), nullable=False)


class MemoryRow(Base):
    __tablename__ = "memories"

    id: Mapped[str] = _uuid_pk()
    content: Mapped[str] = mapped_column(Text)
    layer: Mapped[str] = mapped_column(String(16))
    scope_level: Mapped[str] = mapped_column(String(16))
    # f"{scope_level}:{id at that level}"; the leading column of the keyset index below.
    scope_key: Mapped[str] = mapped_column(String(ID_LEN + 16))
    task_id: Mapped[str | None] = _scope_id()
    agent_id: Mapped[str | None] = _scope_id()
    user_id: Mapped[str | None] = _scope_id()
    session_id: Mapped[str | None] = _scope_id()
    project_id: Mapped[str | None] = _scope_id()
    team_id: Mapped[str | None] = _scope_id()
    org_id: Mapped[str | None] = _scope_id()
    company_id: Mapped[str | None] = _scope_id()
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", json_type(), nullable=False)
    tags: Mapped[list[str]] = _json_list()
    key: Mapped[str | None] = mapped_column(String(KEY_LEN))
    stage_id: Mapped[str | None] = mapped_column(String(ID_LEN), index=True)
    critical: Mapped[bool] = mapped_column(Boolean)
    flagged: Mapped[bool] = mapped_column(Boolean, server_default=false())  # 0009
    sensitive: Mapped[bool] = mapped_column(Boolean, server_default=false())  # 0010
    compacted_into_id: Mapped[str | None] = mapped_column(String(UUID_LEN))  # 0010
    fact_slot: Mapped[str | None] = mapped_column(String(SLOT_LEN))  # 0011
    fact_value: Mapped[str | None] = mapped_column(String(SLOT_LEN))  # 0011
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime())  # 0011
    superseded_by: Mapped[str | None] = mapped_column(String(UUID_LEN))  # 0011
    importance: Mapped[float] = mapped_column(Float)
    access_count: Mapped[int] = mapped_column(Integer)
    last_accessed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), index=True)
    source: Mapped[str] = mapped_column(String(64))
    confidence: Mapped[float | None] = mapped_column(Float)
    promoted_from_id: Mapped[str | None] = mapped_column(String(UUID_LEN), index=True)  # 0010
    compacted_from_ids: Mapped[list[str]] = _json_list()
    created_in_session_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    embedding_model: Mapped[str | None] = mapped_column(String(ID_LEN))
    content_hash: Mapped[str | None] = mapped_column(String(64))  # records.content_hash (0012)

    __table_args__ = (
        Index("ix_memories_keyset", "scope_key", "layer", "created_at", "id"),
        Index("ix_memories_same_text", "scope_key", "content_hash"),  # exact duplicates (0012)
        Index("ix_memories_session", "session_id"),  # a session's writers (0012)
        # A scope's pages in time or importance order, its counts, what superseded what (0015)
        Index("ix_memories_scope_time", "scope_key", "created_at", "id"),
        Index("ix_memories_scope_importance", "scope_key", "importance", "created_at", "id"),
        Index(
            "ix_memories_scope_live",
            "scope_key",
            "compacted_into_id",
            "layer",
            "updated_at",
            "expires_at",
        ),
        Index(
            "ix_memories_superseded_by",
            "superseded_by",
            postgresql_where=text("superseded_by IS NOT NULL"),
            sqlite_where=text("superseded_by IS NOT NULL"),
        ),
        Index(  # the current memories of a slot (0011)
            "ix_memories_current_slot",
            "scope_key",
            "fact_slot",
            postgresql_where=text("fact_slot IS NOT NULL AND superseded_by IS NULL"),
            sqlite_where=text("fact_slot IS NOT NULL AND superseded_by IS NULL"),
        ),
        Index(
            "uq_memories_scope_key_key",
            "scope_key",
            "key",
            unique=True,
            postgresql_where=text("key IS NOT NULL"),
            sqlite_where=text("key IS NOT NULL"),
        ),
    )


class MemoryHistoryRow(Base):
    """No foreign key to ``memories``: the history of a deleted memory outlives it."""

    __tablename__ = "memory_history"

    id: Mapped[str] = _uuid_pk()
    memory_id: Mapped[str] = mapped_column(String(UUID_LEN))
    # Insertion order within one memory: orders events that share a timestamp.
    seq: Mapped[int] = mapped_column(Integer)
    scope_key: Mapped[str] = mapped_column(String(ID_LEN + 16))
    kind: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    before: Mapped[dict[str, Any] | None] = mapped_column(json_type(none_as_null=True))
    after: Mapped[dict[str, Any] | None] = mapped_column(json_type(none_as_null=True))
    actor: Mapped[str | None] = mapped_column(String(ID_LEN))
    # The event's place among all events, in commit order (0014): the change stream's cursor.
    # Set by the database side of each insert (SQLite: the repository; PostgreSQL: a trigger).
    position: Mapped[int | None] = mapped_column(BigInteger)

    __table_args__ = (
        Index("ix_memory_history_memory_id_seq", "memory_id", "seq"),
        Index("uq_memory_history_position", "position", unique=True),
        Index("ix_memory_history_scope_key_position", "scope_key", "position"),
    )


class VectorOutboxRow(Base):
    __tablename__ = "vector_outbox"

    id: Mapped[int] = mapped_column(BIGINT_PK, primary_key=True, autoincrement=True)
    memory_id: Mapped[str] = mapped_column(String(UUID_LEN))
    op: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_error_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index(  # the failed writes the replay retries (0013)
            "ix_vector_outbox_failed",
            "id",
            postgresql_where=text("attempts > 0"),
            sqlite_where=text("attempts > 0"),
        ),
    )


class StoreSettingRow(Base):
    __tablename__ = "store_settings"

    name: Mapped[str] = mapped_column(String(ID_LEN), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class StageRow(Base):
    __tablename__ = "stages"
    __table_args__ = (  # a task has at most one active stage
        Index(
            "uq_stages_active_task",
            "task_id",
            unique=True,
            postgresql_where=text("status = 'active'"),
            sqlite_where=text("status = 'active'"),
        ),
    )

    id: Mapped[str] = _uuid_pk()
    task_id: Mapped[str] = mapped_column(String(ID_LEN), index=True)
    stage_type: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    agent_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    session_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    detection_reason: Mapped[str | None] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", json_type(), nullable=False)
    origin: Mapped[str] = mapped_column(String(16), server_default="declared")  # 0007
    detect_transitions: Mapped[bool] = mapped_column(Boolean, server_default=false())
    compression_claimed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # 0017


class StageMemoryRow(Base):
    __tablename__ = "stage_memories"

    id: Mapped[str] = _uuid_pk()
    stage_id: Mapped[str] = mapped_column(String(UUID_LEN), unique=True)
    task_id: Mapped[str] = mapped_column(String(ID_LEN), index=True)
    summary: Mapped[str] = mapped_column(Text)
    insights: Mapped[list[Any]] = _json_list()
    critical_facts: Mapped[list[Any]] = _json_list()
    raw_memory_ids: Mapped[list[str]] = _json_list()
    compression_ratio: Mapped[float | None] = mapped_column(Float)
    quality_metrics: Mapped[dict[str, Any]] = _json_dict()
    engine: Mapped[str] = mapped_column(String(64))
    fallback: Mapped[bool] = mapped_column(Boolean)
    cost_usd: Mapped[float] = mapped_column(Float)
    tokens_in: Mapped[int] = mapped_column(Integer)
    tokens_out: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class TaskContextRow(Base):
    __tablename__ = "task_contexts"

    task_id: Mapped[str] = mapped_column(String(ID_LEN), primary_key=True)
    progress_summary: Mapped[str] = mapped_column(Text)
    current_stage_id: Mapped[str | None] = mapped_column(String(UUID_LEN))
    completed_stage_ids: Mapped[list[str]] = _json_list()
    critical_constraints: Mapped[list[Any]] = _json_list()
    performance_metrics: Mapped[dict[str, Any]] = _json_dict()
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ErrorRecordRow(Base):
    __tablename__ = "error_records"

    id: Mapped[str] = _uuid_pk()
    task_id: Mapped[str] = mapped_column(String(ID_LEN), index=True)
    stage_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    agent_id: Mapped[str | None] = mapped_column(String(ID_LEN), index=True)
    error_type: Mapped[str] = mapped_column(String(32))
    description: Mapped[str] = mapped_column(Text)
    context: Mapped[dict[str, Any]] = _json_dict()
    recovery_action: Mapped[str | None] = mapped_column(Text)
    severity: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class InterventionRow(Base):
    __tablename__ = "interventions"
    __table_args__ = (Index("ix_interventions_task", "task_id", "created_at"),)

    id: Mapped[str] = _uuid_pk()
    task_id: Mapped[str] = mapped_column(String(ID_LEN))
    agent_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    intervention_type: Mapped[str] = mapped_column(String(64))
    decision_type: Mapped[str | None] = mapped_column(String(64))
    outcome: Mapped[str] = mapped_column(String(16))
    memory_ids: Mapped[list[str]] = _json_list()
    details: Mapped[dict[str, Any]] = _json_dict()
    changes: Mapped[list[Any]] = _json_list()
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class CompressionMetricRow(Base):
    __tablename__ = "compression_metrics"

    id: Mapped[str] = _uuid_pk()
    stage_id: Mapped[str | None] = mapped_column(String(UUID_LEN), index=True)
    task_id: Mapped[str] = mapped_column(String(ID_LEN), index=True)
    level: Mapped[str] = mapped_column(String(16))  # 'stage' | 'task'
    input_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    ratio: Mapped[float] = mapped_column(Float)
    retention: Mapped[float | None] = mapped_column(Float)
    engine: Mapped[str] = mapped_column(String(64))
    fallback: Mapped[bool] = mapped_column(Boolean)
    cost_usd: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class CostRecordRow(Base):
    __tablename__ = "cost_records"

    id: Mapped[str] = _uuid_pk()
    agent_id: Mapped[str | None] = mapped_column(String(ID_LEN), index=True)
    task_id: Mapped[str | None] = mapped_column(String(ID_LEN), index=True)
    operation: Mapped[str] = mapped_column(String(64))
    model: Mapped[str | None] = mapped_column(String(128))
    tokens_in: Mapped[int] = mapped_column(Integer)
    tokens_out: Mapped[int] = mapped_column(Integer)
    cost_usd: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
