"""SQLite: the log of changed lexical documents, read by the in-memory lexical index.

Each row names a memory whose lexical document was written, rewritten or deleted, and its
scope, numbered in commit order (``AUTOINCREMENT``: numbers are never reused). See
``agentcore.adapters.db.lexical.in_memory``. PostgreSQL searches its own postings and has no log.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from agentcore.adapters.db.lexical.writer import CHANGES

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"CREATE TABLE {CHANGES} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "memory_id VARCHAR(36) NOT NULL, scope_key VARCHAR(271) NOT NULL)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TABLE {CHANGES}")
