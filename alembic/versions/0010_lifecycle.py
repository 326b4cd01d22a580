"""The memory lifecycle: ``memories.sensitive`` (never promoted to a broader scope, nor is a
memory whose ``metadata.sensitive`` or ``metadata.private`` is true), ``compacted_into_id``
(a memory compacted into another leaves search and listings but stays readable by id), and an
index on ``promoted_from_id`` (a session closed twice promotes nothing twice).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column("sensitive", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("memories", sa.Column("compacted_into_id", sa.String(36), nullable=True))
    op.create_index("ix_memories_promoted_from_id", "memories", ["promoted_from_id"])


def downgrade() -> None:
    op.drop_index("ix_memories_promoted_from_id", table_name="memories")
    # DROP COLUMN in place (SQLite 3.35+), not a batch copy that would lose the table's
    # triggers and partial indexes.
    op.execute("ALTER TABLE memories DROP COLUMN compacted_into_id")
    op.execute("ALTER TABLE memories DROP COLUMN sensitive")
