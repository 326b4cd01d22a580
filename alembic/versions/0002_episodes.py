"""Episodes of the episodic layer: time range, session/task/stage links, their memories.

Revision ID: 0002
Revises: 0001
Create Date: 2026-01-10
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UUID = sa.String(36)
ID = sa.String(255)
SCOPE_KEY = sa.String(271)


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _time() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    # A new table needs no batch mode on SQLite (only ALTERs of existing tables do).
    op.create_table(
        "episodes",
        sa.Column("id", UUID, nullable=False),
        sa.Column("scope_key", SCOPE_KEY, nullable=False),
        sa.Column("session_id", ID, nullable=True),
        sa.Column("task_id", ID, nullable=True),
        sa.Column("stage_id", ID, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", _time(), nullable=False),
        sa.Column("ended_at", _time(), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("memory_ids", _json(), nullable=False),
        sa.Column("summary_memory_id", UUID, nullable=True),
        sa.Column("created_at", _time(), nullable=False),
        sa.Column("updated_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_episodes"),
    )
    op.create_index("ix_episodes_keyset", "episodes", ["scope_key", "started_at", "id"])
    op.create_index("ix_episodes_open", "episodes", ["scope_key", "session_id", "status"])
    op.create_index("ix_episodes_task_id", "episodes", ["task_id"])


def downgrade() -> None:
    op.drop_table("episodes")
