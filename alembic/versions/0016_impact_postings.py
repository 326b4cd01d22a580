"""PostgreSQL: each posting's impact, and an index that reads a lexeme's postings in a scope
best first, so a search reads a few hundred postings a lexeme instead of all of them (at
100,000 memories in one scope a common lexeme has tens of thousands: 0.4-1.1 s a search).
The impact is the posting's BM25 term weight (k1 1.2, b 0.75) in a scope whose documents hold
32 distinct lexemes on average: a lexeme's postings in impact order are in BM25 order, except
where the scope's real mean length would swap two documents of different lengths. SQLite:
nothing (its large scopes are searched from a stored index, top-k).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from agentcore.adapters.db.lexical.writer import FTS_TERMS

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_IMPACT = "tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * doc_len / 32.0))"
_INDEX = f"ix_{FTS_TERMS}_impact"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"ALTER TABLE {FTS_TERMS} ADD COLUMN impact double precision "
        f"GENERATED ALWAYS AS ({_IMPACT}) STORED"
    )
    op.execute(
        # Keyed by one expression of scope and lexeme (a lexeme holds no space), which only
        # the search's read of a lexeme's best postings names: with (scope_key, lexeme) as
        # columns, a read of given documents' postings (coverage, the sum over candidates)
        # took it for the primary key when the table was not analyzed, and read every posting.
        f"CREATE INDEX {_INDEX} ON {FTS_TERMS} ((scope_key || ' ' || lexeme), impact DESC)"
    )
    op.execute(f"ANALYZE {FTS_TERMS}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP INDEX {_INDEX}")
    op.execute(f"ALTER TABLE {FTS_TERMS} DROP COLUMN impact")
