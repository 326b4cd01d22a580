"""Memory keys may be 256 characters (the key-value contract), one more than other ids.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("memories") as batch:
        batch.alter_column("key", type_=sa.String(256), existing_type=sa.String(255))


def downgrade() -> None:
    with op.batch_alter_table("memories") as batch:
        batch.alter_column("key", type_=sa.String(255), existing_type=sa.String(256))
