"""``memories.flagged``: the caller marked the memory critical. ``critical`` also holds for a
memory whose content states a requirement; compression keeps every sentence of a flagged
memory word for word, and only the requirement sentences of the others.

Existing critical memories are taken as flagged (the conservative reading: nothing they
said is dropped from a summary).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column("flagged", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.execute("UPDATE memories SET flagged = critical")


def downgrade() -> None:
    # DROP COLUMN in place (SQLite 3.35+), not a batch copy that would lose the table's
    # triggers and partial indexes.
    op.execute("ALTER TABLE memories DROP COLUMN flagged")
