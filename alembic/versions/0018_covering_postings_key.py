"""PostgreSQL: the postings' primary key (scope_key, lexeme, memory_id) carries each posting's
``tf`` and ``doc_len`` (INCLUDE), so BM25 reads a lexeme's postings, and probes a candidate's
posting, from the index alone, without a visit to the table's page for each posting: at 3,000
memories in one scope a search's exact BM25 over 4,100 postings took 6.9 ms instead of
9.4-13.8 (decisions.md, Throughput and scale). Built beside the old key and swapped for it in one
transaction. SQLite: nothing (FTS5 keeps its own postings).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from agentcore.adapters.db.lexical.writer import FTS_TERMS

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEY = f"{FTS_TERMS}_pkey"
_COLUMNS = "scope_key, lexeme, memory_id"


def _swap_key(include: str) -> None:
    op.execute(f"CREATE UNIQUE INDEX {FTS_TERMS}_key ON {FTS_TERMS} ({_COLUMNS}){include}")
    op.execute(f"ALTER TABLE {FTS_TERMS} DROP CONSTRAINT {_KEY}")
    # the index takes the constraint's name
    op.execute(
        f"ALTER TABLE {FTS_TERMS} ADD CONSTRAINT {_KEY} PRIMARY KEY USING INDEX {FTS_TERMS}_key"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _swap_key(" INCLUDE (tf, doc_len)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _swap_key("")
