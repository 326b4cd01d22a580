"""At most one active stage per task: a partial unique index on ``stages(task_id)``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ACTIVE = sa.text("status = 'active'")


def upgrade() -> None:
    # Both Postgres and SQLite (3.8+) support partial indexes; a concurrent second "start"
    # of a task then fails on the index instead of leaving two active stages.
    op.create_index(
        "uq_stages_active_task",
        "stages",
        ["task_id"],
        unique=True,
        postgresql_where=_ACTIVE,
        sqlite_where=_ACTIVE,
    )


def downgrade() -> None:
    op.drop_index("uq_stages_active_task", table_name="stages")
