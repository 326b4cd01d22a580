"""The lexical index: BM25 over each memory's text, its neighbours in the same session, and its
metadata; SQLite FTS5 (embedded) or PostgreSQL full-text search (production).

Each memory has one document with four weighted fields: ``body`` (its content, weight 1),
``ctx_before`` and ``ctx_after`` (the content of the previous and next memory of the same scope,
layer and session, weight 0.35 each: a reply is found by the question it answers) and ``meta``
(its key, tags and string metadata values such as a speaker or a date, weight 0.5). Documents
are written by ``LexicalWriter`` inside the memory's own transaction, so the index is never
behind the memories table; ``SqlLexicalIndex`` searches it, restricted to the caller's scope
keys and filters, and joins the memories table, so a deleted or expired memory never comes back.

The score is BM25 (k1 = 1.2, b = 0.75) with the field weights applied to term frequencies
(BM25F). FTS5 computes it itself (document frequencies over the whole table); on Postgres the
query computes it from the tsvector positions, with frequencies over the caller's scopes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Float,
    String,
    Table,
    bindparam,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
    text,
    tuple_,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql.elements import BindParameter, ColumnClause

from agentcore.adapters.db.dialect import json_array_contains_any, json_object_matches
from agentcore.adapters.db.engine import READ_ONLY
from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.types import UTCDateTime
from agentcore.domain.models import Memory
from agentcore.services.ports import VectorFilter, VectorHit

FTS_TABLE = "memory_lexical"  # SQLite: the FTS5 table; Postgres: the plain table
FTS_DOCS = "memory_lexical_docs"  # SQLite only: memory id -> FTS5 rowid
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
PG_CONFIG = "english"
# Field weights, in FTS5 column order after ``scope`` (which has weight 0).
BODY, NEIGHBOUR, META = 1.0, 0.35, 0.5
MAX_QUERY_TERMS = 32
_NEIGHBOUR_CHARS = 2_000  # context taken from each neighbour
_META_CHARS = 2_000

_MEMORIES = cast(Table, MemoryRow.__table__)
_TERM = re.compile(r"[^\W_]+")
# PostgreSQL's english stop words (the Snowball list), so both backends ignore the same words.
_STOP_WORDS_TEXT = """i me my myself we our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
what which who
whom this that these those am is are was were be been being have has had having do does did
doing a an the and but if or because as until while of at by for with about against between
into through during before after above below to from up down in out on off over under again
further then once here there when where why how all any both each few more most other some
such no nor not only own same so than too very s t can will just don should now"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def query_terms(query: str) -> list[str]:
    """The distinct words of ``query`` that are searched: lower case, stop words dropped."""
    words = [w for w in _TERM.findall(query.lower()) if w not in STOP_WORDS]
    return list(dict.fromkeys(words))[:MAX_QUERY_TERMS]


def meta_text(key: str | None, tags: Sequence[str], metadata: Mapping[str, Any]) -> str:
    """The searchable text of a memory besides its content: key, tags, string metadata."""
    parts = [key or "", *tags, *(v for v in metadata.values() if isinstance(v, str))]
    return " ".join(p for p in parts if p)[:_META_CHARS]


def scope_token(scope_key: str) -> str:
    """One FTS5 token per scope key (digits after a letter: no tokenizer or stemmer splits it),
    so a MATCH is restricted to the caller's scopes inside the index."""
    digest = hashlib.blake2b(scope_key.encode(), digest_size=8).digest()
    return f"k{int.from_bytes(digest, 'big')}"


class LexicalWriter:
    """Keeps the lexical documents in step with memory writes, in the caller's transaction."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._pg = dialect == "postgresql"

    async def index(self, memory: Memory) -> None:
        """(Re)write ``memory``'s document, and the context of its neighbours to include it.

        Call after the memory row is inserted or updated."""
        place = _Place(
            memory.id,
            memory.scope_key,
            memory.layer.value,
            memory.scope.session_id,
            memory.created_at,
        )
        prev, nxt = await self._neighbours(place, ())
        await self._put(memory, _content(prev), _content(nxt))
        if prev is not None:
            await self._set(prev[0], "ctx_after", neighbour_text(memory.content))
        if nxt is not None:
            await self._set(nxt[0], "ctx_before", neighbour_text(memory.content))

    async def remove(self, memory_ids: Sequence[str]) -> None:
        """Drop the documents of ``memory_ids`` and link their neighbours to each other.

        Call before the memory rows are deleted (their neighbours are found through them)."""
        gone = list(dict.fromkeys(memory_ids))
        if not gone:
            return
        m = _MEMORIES.c
        stmt = select(m.id, m.scope_key, m.layer, m.session_id, m.created_at).where(
            m.id.in_(gone), m.session_id.is_not(None)
        )
        updates: dict[tuple[str, str], str] = {}
        for row in (await self._session.execute(stmt)).all():
            place = _Place(row[0], row[1], row[2], row[3], row[4])
            prev, nxt = await self._neighbours(place, gone)
            if prev is not None:
                updates[(prev[0], "ctx_after")] = _content(nxt)
            if nxt is not None:
                updates[(nxt[0], "ctx_before")] = _content(prev)
        await self._delete(gone)
        for (memory_id, field), value in updates.items():
            await self._set(memory_id, field, value)

    async def _neighbours(
        self, place: _Place, exclude: Sequence[str]
    ) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
        """(id, content) of the memories just before and after ``place`` in its session."""
        if place.session_id is None:
            return None, None
        m = _MEMORIES.c
        own = tuple_(m.created_at, m.id)
        at = tuple_(literal(place.created_at, UTCDateTime()), literal(place.id, String()))
        base = select(m.id, m.content).where(
            m.scope_key == place.scope_key, m.layer == place.layer, m.session_id == place.session_id
        )
        if exclude:
            base = base.where(m.id.not_in(list(exclude)))
        found: list[tuple[str, str] | None] = []
        for stmt in (
            base.where(own < at).order_by(m.created_at.desc(), m.id.desc()).limit(1),
            base.where(own > at).order_by(m.created_at.asc(), m.id.asc()).limit(1),
        ):
            row = (await self._session.execute(stmt)).first()
            found.append(None if row is None else (str(row[0]), str(row[1])))
        return found[0], found[1]

    async def _put(self, memory: Memory, before: str, after: str) -> None:
        values = {
            "id": memory.id,
            "scope": memory.scope_key,
            "body": memory.content,
            "ctx_before": before,
            "ctx_after": after,
            "meta": meta_text(memory.key, memory.tags, memory.metadata),
        }
        if self._pg:
            await self._session.execute(_PG_UPSERT, values)
            return
        await self._delete([memory.id])
        await self._session.execute(
            text(f"INSERT INTO {FTS_DOCS} (memory_id) VALUES (:id)"), {"id": memory.id}
        )
        values["scope"] = scope_token(memory.scope_key)
        await self._session.execute(_FTS_INSERT, values)

    async def _set(self, memory_id: str, field: str, value: str) -> None:
        if field not in ("ctx_before", "ctx_after"):
            raise ValueError(f"not a context field: {field!r}")
        if self._pg:
            where = "memory_id = :id"
        else:
            where = f"rowid = (SELECT doc_id FROM {FTS_DOCS} WHERE memory_id = :id)"
        await self._session.execute(
            text(f"UPDATE {FTS_TABLE} SET {field} = :value WHERE {where}"),
            {"id": memory_id, "value": value},
        )

    async def _delete(self, memory_ids: Sequence[str]) -> None:
        ids: BindParameter[list[str]] = bindparam("ids", list(memory_ids), expanding=True)
        if self._pg:
            stmt = text(f"DELETE FROM {FTS_TABLE} WHERE memory_id IN :ids").bindparams(ids)
            await self._session.execute(stmt)
            return
        docs = f"SELECT doc_id FROM {FTS_DOCS} WHERE memory_id IN :ids"
        for sql in (
            f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({docs})",
            f"DELETE FROM {FTS_DOCS} WHERE memory_id IN :ids",
        ):
            await self._session.execute(text(sql).bindparams(ids))


_PG_UPSERT = text(
    f"INSERT INTO {FTS_TABLE} (memory_id, scope_key, body, ctx_before, ctx_after, meta) "
    "VALUES (:id, :scope, :body, :ctx_before, :ctx_after, :meta) "
    "ON CONFLICT (memory_id) DO UPDATE SET scope_key = excluded.scope_key, "
    "body = excluded.body, ctx_before = excluded.ctx_before, ctx_after = excluded.ctx_after, "
    "meta = excluded.meta"
)
_FTS_INSERT = text(
    f"INSERT INTO {FTS_TABLE} (rowid, scope, body, ctx_before, ctx_after, meta) "
    "SELECT doc_id, :scope, :body, :ctx_before, :ctx_after, :meta "
    f"FROM {FTS_DOCS} WHERE memory_id = :id"
)


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a memory sits: its session within a scope and layer, and its time in it."""

    id: str
    scope_key: str
    layer: str
    session_id: str | None
    created_at: datetime


def neighbour_text(content: str) -> str:
    """What a memory lends to the documents of its neighbours."""
    return content[:_NEIGHBOUR_CHARS]


def _content(found: tuple[str, str] | None) -> str:
    return "" if found is None else neighbour_text(found[1])


class SqlLexicalIndex:
    """``LexicalIndex`` (agentcore.services.candidates) over the SQL database of ``engine``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine.execution_options(**{READ_ONLY: True})
        self._pg = engine.dialect.name == "postgresql"

    async def search(self, query: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """The best ``limit`` memories matching ``flt`` by BM25 (> 0), best first."""
        terms = query_terms(query)
        if not terms or not flt.scope_keys or limit <= 0:
            return []
        dialect = "postgresql" if self._pg else "sqlite"
        stmt = self._pg_query(terms, flt) if self._pg else self._fts_query(terms, flt)
        stmt = stmt.where(*_filters(dialect, flt)).limit(limit)
        async with self._engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [VectorHit(str(row[0]), float(row[1])) for row in rows if row[1] > 0]

    def _fts_query(self, terms: list[str], flt: VectorFilter) -> Any:
        scopes = " OR ".join(f'"{scope_token(key)}"' for key in dict.fromkeys(flt.scope_keys))
        words = " OR ".join(f'"{term}"' for term in terms)
        match = f"scope : ({scopes}) AND {{body ctx_before ctx_after meta}} : ({words})"
        fts: ColumnClause[Any] = literal_column(FTS_TABLE)
        # bm25() is lower for better matches; its arguments weight the columns in order.
        rank = func.bm25(fts, 0.0, BODY, NEIGHBOUR, NEIGHBOUR, META)
        docs = table(FTS_DOCS, column("doc_id"), column("memory_id"))
        return (
            select(docs.c.memory_id, (-rank).label("score"))
            .select_from(table(FTS_TABLE))
            .join(docs, docs.c.doc_id == literal_column(f"{FTS_TABLE}.rowid"))
            .join(_MEMORIES, _MEMORIES.c.id == docs.c.memory_id)
            .where(fts.op("MATCH")(literal(match, String())))
            .order_by(rank)
        )

    def _pg_query(self, terms: list[str], flt: VectorFilter) -> Any:
        bm25 = (
            text(_PG_BM25)
            .bindparams(
                bindparam("query", " ".join(terms), type_=String()),
                bindparam("keys", list(dict.fromkeys(flt.scope_keys)), type_=ARRAY(String())),
            )
            .columns(column("memory_id", String()), column("score", Float()))
            .subquery("bm25")
        )
        return (
            select(bm25.c.memory_id, bm25.c.score)
            .join(_MEMORIES, _MEMORIES.c.id == bm25.c.memory_id)
            .order_by(bm25.c.score.desc(), bm25.c.memory_id)
        )


def _filters(dialect: str, flt: VectorFilter) -> list[ColumnElement[bool]]:
    """``flt`` as conditions on the memories table: the database rows decide, not the index."""
    m = _MEMORIES.c
    conditions: list[ColumnElement[bool]] = [m.scope_key.in_(list(flt.scope_keys))]
    if flt.layers:
        conditions.append(m.layer.in_(list(flt.layers)))
    if flt.stage_id is not None:
        conditions.append(m.stage_id == flt.stage_id)
    if flt.tags_any:
        conditions.append(json_array_contains_any(dialect, m.tags, flt.tags_any))
    if flt.metadata:
        conditions.append(json_object_matches(dialect, m.metadata, flt.metadata))
    if flt.alive_at is not None:
        alive = datetime.fromtimestamp(flt.alive_at, UTC)
        conditions.append(or_(m.expires_at.is_(None), m.expires_at > alive))
    return conditions


# BM25F over the caller's scopes. The weight letters of the document's positions are its
# fields (A body, B meta, C neighbours, set by the generated column); a term's frequency is
# the weighted count of its positions; the document length is its number of distinct lexemes.
_PG_BM25 = f"""
WITH terms AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('{PG_CONFIG}', :query))
), q AS (
    SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS tsq FROM terms
), stats AS (
    SELECT count(*) AS n, coalesce(avg(doc_len), 1) AS avgdl
    FROM {FTS_TABLE} WHERE scope_key = ANY(:keys)
), hits AS (
    SELECT l.memory_id, l.doc_len, u.lexeme,
        (SELECT sum(CASE w WHEN 'A' THEN {BODY} WHEN 'B' THEN {META} WHEN 'C' THEN {NEIGHBOUR}
                ELSE 0 END) FROM unnest(u.weights) AS w) AS tf
    FROM {FTS_TABLE} AS l CROSS JOIN q CROSS JOIN LATERAL unnest(l.document) AS u
    WHERE l.scope_key = ANY(:keys) AND l.document @@ q.tsq
        AND u.lexeme IN (SELECT lexeme FROM terms)
), df AS (
    SELECT lexeme, count(*) AS df FROM hits GROUP BY lexeme
)
SELECT h.memory_id, sum(
    greatest(ln((s.n - df.df + 0.5) / (df.df + 0.5)), 1e-6)
    * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.doc_len / greatest(s.avgdl, 1)))
) AS score
FROM hits AS h JOIN df USING (lexeme) CROSS JOIN stats AS s
GROUP BY h.memory_id
"""
