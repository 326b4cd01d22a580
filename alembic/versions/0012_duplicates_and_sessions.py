"""Exact duplicates and a session's writers: each memory's ``content_hash`` (the text's
SHA-256 after Unicode and whitespace normalization, ``agentcore.domain.records.content_hash``),
computed for the stored memories here, with an index over (scope_key, content_hash) that finds
a repeat of a text in its scope; and an index over ``session_id`` for the memories of a session,
whichever level they are stored at (``memory.route_context``, closing a session).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from agentcore.domain.records import content_hash

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 2_000


def upgrade() -> None:
    op.add_column("memories", sa.Column("content_hash", sa.String(64), nullable=True))
    memories = sa.table(
        "memories",
        sa.column("id", sa.String),
        sa.column("content", sa.Text),
        sa.column("content_hash", sa.String),
    )
    connection = op.get_bind()
    while True:
        rows = connection.execute(
            sa.select(memories.c.id, memories.c.content)
            .where(memories.c.content_hash.is_(None))
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        connection.execute(
            memories.update()
            .where(memories.c.id == sa.bindparam("row_id"))
            .values(content_hash=sa.bindparam("hash")),
            [{"row_id": row.id, "hash": content_hash(row.content)} for row in rows],
        )
    op.create_index("ix_memories_same_text", "memories", ["scope_key", "content_hash"])
    op.create_index("ix_memories_session", "memories", ["session_id"])


def downgrade() -> None:
    op.drop_index("ix_memories_session", table_name="memories")
    op.drop_index("ix_memories_same_text", table_name="memories")
    # DROP COLUMN in place (SQLite 3.35+), not a batch copy that would lose the table's
    # triggers and partial indexes.
    op.execute("ALTER TABLE memories DROP COLUMN content_hash")
