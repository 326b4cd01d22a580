"""Who submits a completed stage's compression job: ``stages.compression_claimed_at``, set by
the process that completes the stage (it submits the job) or that takes it up as pending. The
periodic sweep of every serving process (``serve --workers N``, several replicas) skips a
stage claimed less than a resubmission period ago, so one stage gets one job, not one per
process.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "stages", sa.Column("compression_claimed_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    # in place (SQLite 3.35+): a batch copy would lose the table's partial unique index
    op.execute("ALTER TABLE stages DROP COLUMN compression_claimed_at")
