"""Failed vector writes found by an index: the replay of failed writes (every
``VECTOR_SYNC_INTERVAL`` seconds) asks for the oldest outbox rows with ``attempts > 0``, and by
the primary key alone it read every pending row when none had failed (all of a backlog, every
second). A partial index over the failed rows' ids reads only those.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FAILED = sa.text("attempts > 0")


def upgrade() -> None:
    op.create_index(
        "ix_vector_outbox_failed",
        "vector_outbox",
        ["id"],
        postgresql_where=_FAILED,
        sqlite_where=_FAILED,
    )


def downgrade() -> None:
    op.drop_index("ix_vector_outbox_failed", table_name="vector_outbox")
