"""The lexical index of memories (BM25 with neighbouring context), filled from existing rows.

SQLite: an FTS5 table (porter stemmer) keyed by ``memory_lexical_docs``. Postgres: a table of
the document fields with a generated, weighted tsvector and a GIN index. See
``agentcore.adapters.db.lexical``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from agentcore.adapters.db.lexical import (
    FTS_DOCS,
    FTS_TABLE,
    FTS_TOKENIZER,
    PG_CONFIG,
    meta_text,
    neighbour_text,
    scope_token,
)
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 500
_DOCUMENT = (
    f"setweight(to_tsvector('{PG_CONFIG}', body), 'A')"
    f" || setweight(to_tsvector('{PG_CONFIG}', meta), 'B')"
    f" || setweight(to_tsvector('{PG_CONFIG}', ctx_before || ' ' || ctx_after), 'C')"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"""CREATE TABLE {FTS_TABLE} (
                memory_id VARCHAR(36) PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
                scope_key VARCHAR(271) NOT NULL,
                body TEXT NOT NULL,
                ctx_before TEXT NOT NULL DEFAULT '',
                ctx_after TEXT NOT NULL DEFAULT '',
                meta TEXT NOT NULL DEFAULT '',
                document tsvector GENERATED ALWAYS AS ({_DOCUMENT}) STORED,
                doc_len INTEGER GENERATED ALWAYS AS (length({_DOCUMENT})) STORED
            )"""
        )
        op.execute(f"CREATE INDEX ix_{FTS_TABLE}_document ON {FTS_TABLE} USING gin (document)")
        op.execute(f"CREATE INDEX ix_{FTS_TABLE}_scope_key ON {FTS_TABLE} (scope_key, doc_len)")
        insert = (
            f"INSERT INTO {FTS_TABLE} (memory_id, scope_key, body, ctx_before, ctx_after, meta) "
            "VALUES (:id, :scope, :body, :ctx_before, :ctx_after, :meta)"
        )
    else:
        op.execute(
            f"CREATE TABLE {FTS_DOCS} (doc_id INTEGER PRIMARY KEY, "
            "memory_id VARCHAR(36) NOT NULL UNIQUE)"
        )
        op.execute(
            f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(scope, body, ctx_before, ctx_after, "
            f"meta, tokenize = '{FTS_TOKENIZER}')"
        )
        insert = (
            f"INSERT INTO {FTS_TABLE} (rowid, scope, body, ctx_before, ctx_after, meta) "
            "VALUES (:doc_id, :scope, :body, :ctx_before, :ctx_after, :meta)"
        )
    _backfill(insert, sqlite=op.get_bind().dialect.name == "sqlite")


def _backfill(insert: str, *, sqlite: bool) -> None:
    """One document per existing memory, its neighbours taken from the same session."""
    batch: list[dict[str, Any]] = []
    for doc_id, values in enumerate(_documents(), start=1):
        if sqlite:
            values["doc_id"] = doc_id
            values["scope"] = scope_token(values["scope"])
        batch.append(values)
        if len(batch) >= _BATCH:
            _write(insert, batch, sqlite=sqlite)
            batch = []
    if batch:
        _write(insert, batch, sqlite=sqlite)


def _write(insert: str, batch: list[dict[str, Any]], *, sqlite: bool) -> None:
    bind = op.get_bind()
    if sqlite:
        docs = [{"doc_id": v["doc_id"], "id": v["id"]} for v in batch]
        bind.execute(
            sa.text(f"INSERT INTO {FTS_DOCS} (doc_id, memory_id) VALUES (:doc_id, :id)"), docs
        )
    bind.execute(sa.text(insert), batch)


def _documents() -> Iterator[dict[str, Any]]:
    rows = op.get_bind().execute(
        sa.text(
            "SELECT id, scope_key, layer, session_id, content, key, tags, metadata FROM memories "
            "ORDER BY scope_key, layer, session_id, created_at, id"
        )
    )
    prev = current = None
    for row in rows:
        if current is not None:
            yield _document(prev, current, row)
        prev, current = current, row
    if current is not None:
        yield _document(prev, current, None)


def _document(prev: Any, row: Any, nxt: Any) -> dict[str, Any]:
    def same(other: Any) -> bool:
        return (
            other is not None
            and row.session_id is not None
            and (other.scope_key, other.layer, other.session_id)
            == (row.scope_key, row.layer, row.session_id)
        )

    return {
        "id": row.id,
        "scope": row.scope_key,
        "body": row.content,
        "ctx_before": neighbour_text(prev.content) if same(prev) else "",
        "ctx_after": neighbour_text(nxt.content) if same(nxt) else "",
        "meta": meta_text(row.key, _json(row.tags) or [], _json(row.metadata) or {}),
    }


def _json(value: Any) -> Any:
    """SQLite returns JSON columns of a textual query as text; Postgres already decoded."""
    return json.loads(value) if isinstance(value, str) else value


def downgrade() -> None:
    op.execute(f"DROP TABLE {FTS_TABLE}")
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TABLE {FTS_DOCS}")
