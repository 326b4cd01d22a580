"""A global position for every history event, so the change stream
(``GET /openspec/v1/knowledge/stream``) can be read in order and resumed after any event.

SQLite writes one transaction at a time: an insert takes ``max(position) + 1`` (the repository
does, ``adapters/db/repositories.py``), so positions become visible in their order. PostgreSQL
draws from a sequence in a trigger, after making sure the transaction has its id: a reader
(``adapters/db/history_feed.py``) delivers a position only once every transaction that had an id
when the position was read has ended, so no lower position can commit after a higher one was
delivered. The events stored so far get positions in their order (SQLite: insertion order;
PostgreSQL: time, then memory and per-memory sequence).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PG_POSITIONS = (
    "CREATE SEQUENCE memory_history_position_seq AS bigint",
    """WITH ordered AS (
        SELECT id, row_number() OVER (ORDER BY at, memory_id, seq, id) AS n FROM memory_history
    )
    UPDATE memory_history SET position = ordered.n FROM ordered
    WHERE memory_history.id = ordered.id""",
    """SELECT setval('memory_history_position_seq', coalesce(max(position), 0) + 1, false)
    FROM memory_history""",
    """CREATE FUNCTION memory_history_position() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- The transaction's id first, then the position: a reader waits for every
        -- transaction that had an id when it read the sequence, so it must have one first.
        PERFORM pg_current_xact_id();
        NEW.position := nextval('memory_history_position_seq');
        RETURN NEW;
    END $$""",
    """CREATE TRIGGER memory_history_position BEFORE INSERT ON memory_history
    FOR EACH ROW EXECUTE FUNCTION memory_history_position()""",
)


def upgrade() -> None:
    op.add_column("memory_history", sa.Column("position", sa.BigInteger(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        for statement in _PG_POSITIONS:
            op.execute(statement)
    else:
        op.execute("UPDATE memory_history SET position = rowid")
    op.create_index("uq_memory_history_position", "memory_history", ["position"], unique=True)
    op.create_index(
        "ix_memory_history_scope_key_position", "memory_history", ["scope_key", "position"]
    )


def downgrade() -> None:
    op.drop_index("ix_memory_history_scope_key_position", table_name="memory_history")
    op.drop_index("uq_memory_history_position", table_name="memory_history")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER memory_history_position ON memory_history")
        op.execute("DROP FUNCTION memory_history_position()")
        op.execute("DROP SEQUENCE memory_history_position_seq")
    op.execute("ALTER TABLE memory_history DROP COLUMN position")
