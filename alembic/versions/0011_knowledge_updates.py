"""Knowledge that updates: the attribute slot a memory fills (``fact_slot``, e.g.
``user|home``) and its value (``fact_value``), and, once a newer memory of the scope fills the
slot with another value, when it stopped being current (``valid_to``) and by which memory
(``superseded_by``). A partial index finds the current memories of a slot.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CURRENT = "fact_slot IS NOT NULL AND superseded_by IS NULL"


def upgrade() -> None:
    op.add_column("memories", sa.Column("fact_slot", sa.String(120), nullable=True))
    op.add_column("memories", sa.Column("fact_value", sa.String(120), nullable=True))
    op.add_column("memories", sa.Column("valid_to", sa.DateTime(timezone=True), nullable=True))
    op.add_column("memories", sa.Column("superseded_by", sa.String(36), nullable=True))
    op.create_index(
        "ix_memories_current_slot",
        "memories",
        ["scope_key", "fact_slot"],
        postgresql_where=sa.text(_CURRENT),
        sqlite_where=sa.text(_CURRENT),
    )


def downgrade() -> None:
    op.drop_index("ix_memories_current_slot", table_name="memories")
    # DROP COLUMN in place (SQLite 3.35+), not a batch copy that would lose the table's
    # triggers and partial indexes.
    for column in ("superseded_by", "valid_to", "fact_value", "fact_slot"):
        op.execute(f"ALTER TABLE memories DROP COLUMN {column}")
