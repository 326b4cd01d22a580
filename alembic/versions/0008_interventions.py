"""Interventions of the ACE meta-thinker: what it did for a task, the outcome, and the
importance changes the outcome made to the memories it named.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "interventions",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("task_id", sa.String(255), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=True),
        sa.Column("intervention_type", sa.String(64), nullable=False),
        sa.Column("decision_type", sa.String(64), nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("memory_ids", _json(), nullable=False),
        sa.Column("details", _json(), nullable=False),
        sa.Column("changes", _json(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_interventions"),
    )
    op.create_index("ix_interventions_task", "interventions", ["task_id", "created_at"])


def downgrade() -> None:
    op.drop_table("interventions")
