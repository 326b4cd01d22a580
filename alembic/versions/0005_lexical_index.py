"""The lexical index of memories (BM25 with neighbouring context), filled from existing rows.

SQLite: an FTS5 table (porter stemmer) keyed by ``memory_lexical_docs``. Postgres: a table of
the document fields with a generated, weighted tsvector, and the postings (lexeme, memory,
weighted frequency) derived from it by a trigger. See ``agentcore.adapters.db.lexical.writer``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from agentcore.adapters.db.lexical.writer import (
    BODY,
    FTS_DOCS,
    FTS_TABLE,
    FTS_TERMS,
    FTS_TOKENIZER,
    META,
    NEIGHBOUR,
    PG_CONFIG,
    meta_text,
    neighbour_text,
    scope_token,
)

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 500
# Neighbours of a document: the same scope, session and layer, in time order.
_PLACE_INDEX = "scope_key, session_id, layer, created_at, memory_id"
_DOCUMENT = (
    f"setweight(to_tsvector('{PG_CONFIG}', body), 'A')"
    f" || setweight(to_tsvector('{PG_CONFIG}', meta), 'B')"
    f" || setweight(to_tsvector('{PG_CONFIG}', ctx_before || ' ' || ctx_after), 'C')"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _create_postgres()
        insert = (
            f"INSERT INTO {FTS_TABLE} (memory_id, scope_key, layer, session_id, created_at, body, "
            "ctx_before, ctx_after, meta) VALUES (:id, :scope_key, :layer, :session_id, "
            ":created_at, :body, :ctx_before, :ctx_after, :meta)"
        )
    else:
        op.execute(
            f"CREATE TABLE {FTS_DOCS} (doc_id INTEGER PRIMARY KEY, "
            "memory_id VARCHAR(36) NOT NULL UNIQUE, scope_key VARCHAR(271) NOT NULL, "
            "layer VARCHAR(16) NOT NULL, session_id VARCHAR(255), created_at DATETIME NOT NULL)"
        )
        op.execute(f"CREATE INDEX ix_{FTS_DOCS}_place ON {FTS_DOCS} ({_PLACE_INDEX})")
        op.execute(
            f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(scope, body, ctx_before, ctx_after, "
            f"meta, tokenize = '{FTS_TOKENIZER}')"
        )
        insert = (
            f"INSERT INTO {FTS_TABLE} (rowid, scope, body, ctx_before, ctx_after, meta) "
            "VALUES (:doc_id, :scope, :body, :ctx_before, :ctx_after, :meta)"
        )
    _backfill(insert, sqlite=op.get_bind().dialect.name == "sqlite")
    if op.get_bind().dialect.name == "postgresql":
        # Statistics now, so the first searches are not planned blind (autovacuum follows).
        op.execute(f"ANALYZE {FTS_TABLE}, {FTS_TERMS}")


def _create_postgres() -> None:
    """The documents, and their postings (one row per lexeme, kept by a trigger) that BM25 is
    computed from: a query reads only the postings of its terms in its scopes."""
    op.execute(
        f"""CREATE TABLE {FTS_TABLE} (
            memory_id VARCHAR(36) PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
            scope_key VARCHAR(271) NOT NULL,
            layer VARCHAR(16) NOT NULL,
            session_id VARCHAR(255),
            created_at TIMESTAMP WITH TIME ZONE NOT NULL,
            body TEXT NOT NULL,
            ctx_before TEXT NOT NULL DEFAULT '',
            ctx_after TEXT NOT NULL DEFAULT '',
            meta TEXT NOT NULL DEFAULT '',
            document tsvector GENERATED ALWAYS AS ({_DOCUMENT}) STORED,
            doc_len INTEGER GENERATED ALWAYS AS (length({_DOCUMENT})) STORED
        )"""
    )
    op.execute(f"CREATE INDEX ix_{FTS_TABLE}_place ON {FTS_TABLE} ({_PLACE_INDEX})")
    op.execute(f"CREATE INDEX ix_{FTS_TABLE}_scope_key ON {FTS_TABLE} (scope_key, doc_len)")
    op.execute(
        f"""CREATE TABLE {FTS_TERMS} (
            scope_key VARCHAR(271) NOT NULL,
            lexeme TEXT NOT NULL,
            memory_id VARCHAR(36) NOT NULL
                REFERENCES {FTS_TABLE} (memory_id) ON DELETE CASCADE,
            tf DOUBLE PRECISION NOT NULL,
            doc_len INTEGER NOT NULL,
            PRIMARY KEY (scope_key, lexeme, memory_id)
        )"""
    )
    op.execute(f"CREATE INDEX ix_{FTS_TERMS}_memory_id ON {FTS_TERMS} (memory_id)")
    # A term's frequency is the weighted count of its positions (A body, B meta, C neighbours);
    # a document's length is its number of distinct lexemes.
    weight = (
        f"CASE w WHEN 'A' THEN {BODY} WHEN 'B' THEN {META} WHEN 'C' THEN {NEIGHBOUR} ELSE 0 END"
    )
    op.execute(
        f"""CREATE FUNCTION {FTS_TERMS}_sync() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM {FTS_TERMS} WHERE memory_id = NEW.memory_id;
            INSERT INTO {FTS_TERMS} (scope_key, lexeme, memory_id, tf, doc_len)
            SELECT NEW.scope_key, u.lexeme, NEW.memory_id,
                (SELECT sum({weight}) FROM unnest(u.weights) AS w), NEW.doc_len
            FROM unnest(NEW.document) AS u;
            RETURN NULL;
        END $$"""
    )
    op.execute(
        f"CREATE TRIGGER {FTS_TERMS}_sync AFTER INSERT OR UPDATE ON {FTS_TABLE} "
        f"FOR EACH ROW EXECUTE FUNCTION {FTS_TERMS}_sync()"
    )


def _backfill(insert: str, *, sqlite: bool) -> None:
    """One document per existing memory, its neighbours taken from the same session."""
    batch: list[dict[str, Any]] = []
    for doc_id, values in enumerate(_documents(), start=1):
        if sqlite:
            values["doc_id"] = doc_id
            values["scope"] = scope_token(values["scope_key"])
        batch.append(values)
        if len(batch) >= _BATCH:
            _write(insert, batch, sqlite=sqlite)
            batch = []
    if batch:
        _write(insert, batch, sqlite=sqlite)


def _write(insert: str, batch: list[dict[str, Any]], *, sqlite: bool) -> None:
    bind = op.get_bind()
    if sqlite:
        bind.execute(
            sa.text(
                f"INSERT INTO {FTS_DOCS} (doc_id, memory_id, scope_key, layer, session_id, "
                "created_at) VALUES (:doc_id, :id, :scope_key, :layer, :session_id, :created_at)"
            ),
            batch,
        )
    bind.execute(sa.text(insert), batch)


def _documents() -> Iterator[dict[str, Any]]:
    rows = op.get_bind().execute(
        sa.text(
            "SELECT id, scope_key, layer, session_id, created_at, content, key, tags, metadata "
            "FROM memories "
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
        "scope_key": row.scope_key,
        "layer": row.layer,
        "session_id": row.session_id,
        "created_at": row.created_at,
        "body": row.content,
        "ctx_before": neighbour_text(prev.content) if same(prev) else "",
        "ctx_after": neighbour_text(nxt.content) if same(nxt) else "",
        "meta": meta_text(row.key, _json(row.tags) or [], _json(row.metadata) or {}),
    }


def _json(value: Any) -> Any:
    """SQLite returns JSON columns of a textual query as text; Postgres already decoded."""
    return json.loads(value) if isinstance(value, str) else value


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP TABLE {FTS_TERMS}")
        op.execute(f"DROP TABLE {FTS_TABLE}")
        op.execute(f"DROP FUNCTION {FTS_TERMS}_sync()")
    else:
        op.execute(f"DROP TABLE {FTS_TABLE}")
        op.execute(f"DROP TABLE {FTS_DOCS}")
