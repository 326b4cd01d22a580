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
    Integer,
    String,
    Table,
    bindparam,
    column,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    table,
    text,
    tuple_,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql.elements import BindParameter, ColumnClause
from sqlalchemy.types import Text

from agentcore.adapters.db.dialect import json_array_contains_any, json_object_matches
from agentcore.adapters.db.engine import READ_ONLY
from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.types import UTCDateTime
from agentcore.domain.models import Memory
from agentcore.services.ports import VectorFilter, VectorHit

FTS_TABLE = "memory_lexical"  # SQLite: the FTS5 table; Postgres: the plain table
FTS_DOCS = "memory_lexical_docs"  # SQLite only: memory id -> FTS5 rowid
FTS_TERMS = "memory_lexical_terms"  # Postgres only: postings, kept by a trigger
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
PG_CONFIG = "english"
# Field weights, in FTS5 column order after ``scope`` (which has weight 0).
BODY, NEIGHBOUR, META = 1.0, 0.35, 0.5
MAX_QUERY_TERMS = 32
_PG_PREFETCH = 4  # Postgres: candidates scored per result wanted, before the row filters
_NEIGHBOUR_CHARS = 2_000  # context taken from each neighbour
_META_CHARS = 2_000

_MEMORIES = cast(Table, MemoryRow.__table__)
# Where each document sits (scope, session, layer, time): neighbours are found through these
# columns and their index, never by scanning the memories of a scope.
_PLACE_COLUMNS = ("memory_id", "scope_key", "layer", "session_id")
_PLACES = table(
    FTS_DOCS,
    column("doc_id", Integer()),
    *(column(name, String()) for name in _PLACE_COLUMNS),
    column("created_at", UTCDateTime()),
)
_PLACES_PG = table(
    FTS_TABLE,
    *(column(name, String()) for name in _PLACE_COLUMNS),
    column("created_at", UTCDateTime()),
    *(column(name, Text()) for name in ("body", "ctx_before", "ctx_after", "meta")),
)
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
        """(id, content) of the documents just before and after ``place`` in its session
        (found through the index's own (scope, session, layer, time) index)."""
        if place.session_id is None:
            return None, None
        p = _PLACES_PG.c if self._pg else _PLACES.c
        own = tuple_(p.created_at, p.memory_id)
        at = tuple_(literal(place.created_at, UTCDateTime()), literal(place.id, String()))
        content = p.body if self._pg else _MEMORIES.c.content
        base = select(p.memory_id, content).where(
            p.scope_key == place.scope_key, p.session_id == place.session_id, p.layer == place.layer
        )
        if not self._pg:
            base = base.join(_MEMORIES, _MEMORIES.c.id == p.memory_id)
        if exclude:
            base = base.where(p.memory_id.not_in(list(exclude)))
        found: list[tuple[str, str] | None] = []
        for stmt in (
            base.where(own < at).order_by(p.created_at.desc(), p.memory_id.desc()).limit(1),
            base.where(own > at).order_by(p.created_at.asc(), p.memory_id.asc()).limit(1),
        ):
            row = (await self._session.execute(stmt)).first()
            found.append(None if row is None else (str(row[0]), str(row[1])))
        return found[0], found[1]

    async def _put(self, memory: Memory, before: str, after: str) -> None:
        place = {
            "memory_id": memory.id,
            "scope_key": memory.scope_key,
            "layer": memory.layer.value,
            "session_id": memory.scope.session_id,
            "created_at": memory.created_at,
        }
        fields = {
            "body": memory.content,
            "ctx_before": before,
            "ctx_after": after,
            "meta": meta_text(memory.key, memory.tags, memory.metadata),
        }
        if self._pg:
            stmt = postgresql.insert(_PLACES_PG).values(**place, **fields)
            update = {
                name: stmt.excluded[name] for name in (*place, *fields) if name != "memory_id"
            }
            await self._session.execute(
                stmt.on_conflict_do_update(index_elements=["memory_id"], set_=update)
            )
            return
        await self._delete([memory.id])
        await self._session.execute(insert(_PLACES).values(**place))
        values = {"id": memory.id, "scope": scope_token(memory.scope_key), **fields}
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
        self._fts_statements: dict[tuple[bool, bool], Any] = {}

    async def search(self, query: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """The best ``limit`` memories matching ``flt`` by BM25 (> 0), best first."""
        terms = query_terms(query)
        if not terms or not flt.scope_keys or limit <= 0:
            return []
        params = _filter_params(flt) | {"limit": limit}
        if self._pg:
            stmt = self._pg_query(terms, flt, limit, _filters("postgresql", flt))
        else:
            stmt = self._fts_statement(flt)
            params["match"] = _fts_match(terms, flt)
        async with self._engine.connect() as conn:
            rows = (await conn.execute(stmt, params)).all()
        return [VectorHit(str(row[0]), float(row[1])) for row in rows if row[1] > 0]

    def _fts_statement(self, flt: VectorFilter) -> Any:
        """The FTS5 query for ``flt``'s shape, its values left as parameters. The usual shapes
        (scopes, layers, expiry) are built once: a search pays no statement construction."""
        shape = _shape(flt)
        if shape is None:
            return self._fts_query(flt)
        if shape not in self._fts_statements:
            self._fts_statements[shape] = self._fts_query(flt)
        return self._fts_statements[shape]

    def _fts_query(self, flt: VectorFilter) -> Any:
        fts: ColumnClause[Any] = literal_column(FTS_TABLE)
        # FTS5's rank is bm25() with these column weights (lower is better). Ordering by it lets
        # FTS5 sort inside the index, so only the best rows reach the joins and filters.
        rank: ColumnClause[Any] = literal_column(f"{FTS_TABLE}.rank")
        weights = ", ".join(str(w) for w in (0.0, BODY, NEIGHBOUR, NEIGHBOUR, META))
        docs = table(FTS_DOCS, column("doc_id"), column("memory_id"))
        return (
            select(docs.c.memory_id, (-rank).label("score"))
            .select_from(table(FTS_TABLE))
            .join(docs, docs.c.doc_id == literal_column(f"{FTS_TABLE}.rowid"))
            .join(_MEMORIES, _MEMORIES.c.id == docs.c.memory_id)
            .where(fts.op("MATCH")(bindparam("match", type_=String())))
            .where(rank.op("MATCH")(literal(f"bm25({weights})", String())))
            .where(*_filters("sqlite", flt))
            .order_by(rank)
            .limit(bindparam("limit", type_=Integer()))
        )

    def _pg_query(
        self, terms: list[str], flt: VectorFilter, limit: int, filters: list[ColumnElement[bool]]
    ) -> Any:
        """The best ``limit`` × ``_PG_PREFETCH`` of the scopes by BM25, then the filters on
        the memory rows: a short list to join, whatever the planner knows of the tables."""
        bm25 = (
            text(_PG_BM25)
            .bindparams(
                bindparam("query", " ".join(terms), type_=String()),
                bindparam("keys", list(dict.fromkeys(flt.scope_keys)), type_=ARRAY(String())),
                bindparam("prefetch", limit * _PG_PREFETCH, type_=Integer()),
            )
            .columns(column("memory_id", String()), column("score", Float()))
            .cte("bm25")
            # Computed once, then joined to the memories: never re-planned per memory row.
            .prefix_with("MATERIALIZED")
        )
        # The memory rows are looked up by id (an index scan of a short array), never joined:
        # a join's plan depends on table statistics that a fresh table does not have.
        ids = select(bm25.c.memory_id).scalar_subquery()
        live = select(_MEMORIES.c.id).where(_MEMORIES.c.id == func.any(func.array(ids)))
        return (
            select(bm25.c.memory_id, bm25.c.score)
            .where(bm25.c.memory_id == func.any(func.array(live.where(*filters).scalar_subquery())))
            .order_by(bm25.c.score.desc(), bm25.c.memory_id)
            .limit(bindparam("limit", type_=Integer()))
        )


def _filters(dialect: str, flt: VectorFilter) -> list[ColumnElement[bool]]:
    """``flt`` as conditions on the memories table: the database rows decide, not the index.
    Scopes, layers, stage and expiry are parameters (``_filter_params``)."""
    m = _MEMORIES.c
    conditions: list[ColumnElement[bool]] = [
        m.scope_key.in_(bindparam("scope_keys", expanding=True, type_=String()))
    ]
    if flt.layers:
        conditions.append(m.layer.in_(bindparam("layers", expanding=True, type_=String())))
    if flt.stage_id is not None:
        conditions.append(m.stage_id == bindparam("stage_id", type_=String()))
    if flt.tags_any:
        conditions.append(json_array_contains_any(dialect, m.tags, flt.tags_any))
    if flt.metadata:
        conditions.append(json_object_matches(dialect, m.metadata, flt.metadata))
    if flt.alive_at is not None:
        alive = bindparam("alive", type_=UTCDateTime())
        conditions.append(or_(m.expires_at.is_(None), m.expires_at > alive))
    return conditions


def _filter_params(flt: VectorFilter) -> dict[str, Any]:
    """The parameter values of ``_filters(flt)``."""
    params: dict[str, Any] = {"scope_keys": list(dict.fromkeys(flt.scope_keys))}
    if flt.layers:
        params["layers"] = list(flt.layers)
    if flt.stage_id is not None:
        params["stage_id"] = flt.stage_id
    if flt.alive_at is not None:
        params["alive"] = datetime.fromtimestamp(flt.alive_at, UTC)
    return params


def _shape(flt: VectorFilter) -> tuple[bool, bool] | None:
    """What decides the statement of a search with ``flt``: whether it filters by layer and by
    expiry; None for a rarer shape (stage, tags or metadata: built for the search)."""
    if flt.stage_id is not None or flt.tags_any or flt.metadata:
        return None
    return bool(flt.layers), flt.alive_at is not None


def _fts_match(terms: list[str], flt: VectorFilter) -> str:
    """The FTS5 MATCH expression: one of the caller's scopes, and any of the terms."""
    scopes = " OR ".join(f'"{scope_token(key)}"' for key in dict.fromkeys(flt.scope_keys))
    words = " OR ".join(f'"{term}"' for term in terms)
    return f"scope : ({scopes}) AND {{body ctx_before ctx_after meta}} : ({words})"


# BM25F over the caller's scopes, from the postings of the query's lexemes (tf: the weighted
# count of a lexeme's positions; doc_len: the document's number of distinct lexemes).
_PG_BM25 = f"""
WITH stats AS (
    SELECT count(*)::float8 AS n, coalesce(avg(doc_len), 1)::float8 AS avgdl
    FROM {FTS_TABLE} WHERE scope_key = ANY(:keys)
), hits AS (
    SELECT memory_id, tf, doc_len, count(*) OVER (PARTITION BY lexeme)::float8 AS df
    FROM {FTS_TERMS}
    WHERE scope_key = ANY(:keys)
        AND lexeme = ANY(tsvector_to_array(to_tsvector('{PG_CONFIG}', :query)))
)
SELECT h.memory_id, sum(
    greatest(ln((s.n - h.df + 0.5) / (h.df + 0.5)), 1e-6)
    * h.tf * 2.2 / (h.tf + 1.2 * (0.25 + 0.75 * h.doc_len / greatest(s.avgdl, 1)))
) AS score
FROM hits AS h CROSS JOIN stats AS s
GROUP BY h.memory_id
ORDER BY score DESC
LIMIT :prefetch
"""
