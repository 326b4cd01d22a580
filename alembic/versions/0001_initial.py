"""Initial schema: memories, history, vector outbox, store settings and the COMPASS records.

Revision ID: 0001
Revises:
Create Date: 2025-11-21
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UUID = sa.String(36)
ID = sa.String(255)
SCOPE_KEY = sa.String(271)


def _json(*, none_as_null: bool = False) -> sa.types.TypeEngine[Any]:
    return sa.JSON(none_as_null=none_as_null).with_variant(
        postgresql.JSONB(none_as_null=none_as_null), "postgresql"
    )


def _time() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def _indexes(table: str, *columns: str) -> None:
    for column in columns:
        op.create_index(f"ix_{table}_{column}", table, [column])


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("id", UUID, nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("layer", sa.String(16), nullable=False),
        sa.Column("scope_level", sa.String(16), nullable=False),
        sa.Column("scope_key", SCOPE_KEY, nullable=False),
        sa.Column("task_id", ID, nullable=True),
        sa.Column("agent_id", ID, nullable=True),
        sa.Column("user_id", ID, nullable=True),
        sa.Column("session_id", ID, nullable=True),
        sa.Column("project_id", ID, nullable=True),
        sa.Column("team_id", ID, nullable=True),
        sa.Column("org_id", ID, nullable=True),
        sa.Column("company_id", ID, nullable=True),
        sa.Column("metadata", _json(), nullable=False),
        sa.Column("tags", _json(), nullable=False),
        sa.Column("key", ID, nullable=True),
        sa.Column("stage_id", ID, nullable=True),
        sa.Column("critical", sa.Boolean(), nullable=False),
        sa.Column("importance", sa.Float(), nullable=False),
        sa.Column("access_count", sa.Integer(), nullable=False),
        sa.Column("last_accessed_at", _time(), nullable=True),
        sa.Column("created_at", _time(), nullable=False),
        sa.Column("updated_at", _time(), nullable=False),
        sa.Column("expires_at", _time(), nullable=True),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("promoted_from_id", UUID, nullable=True),
        sa.Column("compacted_from_ids", _json(), nullable=False),
        sa.Column("created_in_session_id", ID, nullable=True),
        sa.Column("embedding_model", ID, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_memories"),
    )
    _indexes(
        "memories",
        "task_id",
        "agent_id",
        "user_id",
        "session_id",
        "project_id",
        "team_id",
        "org_id",
        "company_id",
        "stage_id",
        "expires_at",
    )
    op.create_index("ix_memories_keyset", "memories", ["scope_key", "layer", "created_at", "id"])
    op.create_index(
        "uq_memories_scope_key_key",
        "memories",
        ["scope_key", "key"],
        unique=True,
        postgresql_where=sa.text("key IS NOT NULL"),
        sqlite_where=sa.text("key IS NOT NULL"),
    )

    op.create_table(
        "memory_history",
        sa.Column("id", UUID, nullable=False),
        sa.Column("memory_id", UUID, nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("scope_key", SCOPE_KEY, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("at", _time(), nullable=False),
        sa.Column("before", _json(none_as_null=True), nullable=True),
        sa.Column("after", _json(none_as_null=True), nullable=True),
        sa.Column("actor", ID, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_memory_history"),
    )
    op.create_index("ix_memory_history_memory_id_seq", "memory_history", ["memory_id", "seq"])

    op.create_table(
        "vector_outbox",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("memory_id", UUID, nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.Column("last_error_at", _time(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_vector_outbox"),
    )

    op.create_table(
        "store_settings",
        sa.Column("name", ID, nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_store_settings"),
    )

    _create_compass_tables()


def _create_compass_tables() -> None:
    op.create_table(
        "stages",
        sa.Column("id", UUID, nullable=False),
        sa.Column("task_id", ID, nullable=False),
        sa.Column("stage_type", sa.String(32), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("started_at", _time(), nullable=False),
        sa.Column("completed_at", _time(), nullable=True),
        sa.Column("agent_id", ID, nullable=True),
        sa.Column("session_id", ID, nullable=True),
        sa.Column("detection_reason", sa.Text(), nullable=True),
        sa.Column("metadata", _json(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_stages"),
    )
    _indexes("stages", "task_id")

    op.create_table(
        "stage_memories",
        sa.Column("id", UUID, nullable=False),
        sa.Column("stage_id", UUID, nullable=False),
        sa.Column("task_id", ID, nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("insights", _json(), nullable=False),
        sa.Column("critical_facts", _json(), nullable=False),
        sa.Column("raw_memory_ids", _json(), nullable=False),
        sa.Column("compression_ratio", sa.Float(), nullable=True),
        sa.Column("quality_metrics", _json(), nullable=False),
        sa.Column("engine", sa.String(64), nullable=False),
        sa.Column("fallback", sa.Boolean(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_stage_memories"),
        sa.UniqueConstraint("stage_id", name="uq_stage_memories_stage_id"),
    )
    _indexes("stage_memories", "task_id")

    op.create_table(
        "task_contexts",
        sa.Column("task_id", ID, nullable=False),
        sa.Column("progress_summary", sa.Text(), nullable=False),
        sa.Column("current_stage_id", UUID, nullable=True),
        sa.Column("completed_stage_ids", _json(), nullable=False),
        sa.Column("critical_constraints", _json(), nullable=False),
        sa.Column("performance_metrics", _json(), nullable=False),
        sa.Column("updated_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("task_id", name="pk_task_contexts"),
    )

    op.create_table(
        "error_records",
        sa.Column("id", UUID, nullable=False),
        sa.Column("task_id", ID, nullable=False),
        sa.Column("stage_id", ID, nullable=True),
        sa.Column("agent_id", ID, nullable=True),
        sa.Column("error_type", sa.String(32), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("context", _json(), nullable=False),
        sa.Column("recovery_action", sa.Text(), nullable=True),
        sa.Column("severity", sa.Float(), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_error_records"),
    )
    _indexes("error_records", "task_id", "agent_id")

    op.create_table(
        "compression_metrics",
        sa.Column("id", UUID, nullable=False),
        sa.Column("stage_id", UUID, nullable=True),
        sa.Column("task_id", ID, nullable=False),
        sa.Column("level", sa.String(16), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.Column("retention", sa.Float(), nullable=True),
        sa.Column("engine", sa.String(64), nullable=False),
        sa.Column("fallback", sa.Boolean(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_compression_metrics"),
    )
    _indexes("compression_metrics", "stage_id", "task_id")

    op.create_table(
        "cost_records",
        sa.Column("id", UUID, nullable=False),
        sa.Column("agent_id", ID, nullable=True),
        sa.Column("task_id", ID, nullable=True),
        sa.Column("operation", sa.String(64), nullable=False),
        sa.Column("model", sa.String(128), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_cost_records"),
    )
    _indexes("cost_records", "agent_id", "task_id", "created_at")


def downgrade() -> None:
    for table in (
        "cost_records",
        "compression_metrics",
        "error_records",
        "task_contexts",
        "stage_memories",
        "stages",
        "store_settings",
        "vector_outbox",
        "memory_history",
        "memories",
    ):
        op.drop_table(table)
