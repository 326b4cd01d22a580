"""How a stage was set: ``stages.origin`` (declared by a caller, or detected) and
``stages.detect_transitions`` (a declared stage whose caller lets the detector end it).

Stages from before this revision that an action or the clock started (their
``detection_reason`` says so) are marked detected; the others were declared.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN (no batch copy on SQLite, which would lose the partial unique index).
    op.add_column(
        "stages", sa.Column("origin", sa.String(16), nullable=False, server_default="declared")
    )
    op.add_column(
        "stages",
        sa.Column("detect_transitions", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.execute(
        "UPDATE stages SET origin = 'detected' "
        "WHERE detection_reason LIKE 'action:%' OR detection_reason LIKE 'time:%'"
    )


def downgrade() -> None:
    # DROP COLUMN in place (SQLite 3.35+), not a batch copy that would lose the partial index.
    op.execute("ALTER TABLE stages DROP COLUMN detect_transitions")
    op.execute("ALTER TABLE stages DROP COLUMN origin")
