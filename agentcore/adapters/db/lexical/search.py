"""Searching the lexical index (``writer`` keeps its documents): BM25 over the caller's scopes,
and the query-term coverage of candidate documents.

SQLite: the scopes searched are scored outside FTS5 (``in_memory``: held in memory, or a
large scope from its stored index); a search filtered on the memory's fields (``where``:
stage, tags, metadata, times...) takes the best 16 × its limit there and keeps those the rows
pass, 4 times more in each further round while too few pass. A scope not taken up yet
(loading, its first build under way), or a filtered search that found too few in 32,768, goes
to FTS5, which ranks with its own bm25()
(document frequencies over the whole table). The FTS5 statement of the usual filter shapes
is built once and reused with new parameters, and each call's statements run whole on a
worker thread (``ThreadedReader``). PostgreSQL: the query computes BM25 from the postings,
with frequencies over the caller's scopes (``postgres``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    FromClause,
    Integer,
    Select,
    String,
    Table,
    any_,
    bindparam,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnClause

from agentcore.adapters.db.dialect import chunks
from agentcore.adapters.db.engine import ThreadedReader, for_reads
from agentcore.adapters.db.filter_sql import filter_sql
from agentcore.adapters.db.lexical.coverage import (
    SEARCHED,
    FtsStems,
    ScopeFrequencies,
    scopes_match,
    sqlite_matches,
)
from agentcore.adapters.db.lexical.in_memory import MemoryLexicon
from agentcore.adapters.db.lexical.postgres import TermStats, bm25_read, bm25_statement
from agentcore.adapters.db.lexical.postgres import coverage as pg_coverage
from agentcore.adapters.db.lexical.stored import StoredIndexes
from agentcore.adapters.db.lexical.writer import (
    BODY,
    FTS_DOCS,
    FTS_TABLE,
    META,
    NEIGHBOUR,
    query_terms,
    scope_token,
)
from agentcore.adapters.db.memory_rows import (
    memory_from_row,
    pg_memories,
    select_by_ids,
    sqlite_memories,
)
from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.types import UTCDateTime
from agentcore.adapters.outages import DATABASE
from agentcore.domain.errors import ProviderError
from agentcore.services.candidates import Lookup
from agentcore.services.ports import VectorFilter, VectorHit

_MEMORIES = cast(Table, MemoryRow.__table__)
# SQLite: query terms held by more than this share of the scopes' documents, and by more than
# FINDING_FLOOR of them, do not find candidates (they still score them). Below the floor, FTS5
# ranks all matches in a few milliseconds.
FINDING_SHARE = 0.1
FINDING_FLOOR = 500
_PG_PREFETCH = 4  # Postgres: candidates scored per result wanted, before the row filters
_PG_PREFETCH_FILTERED = 16  # the same with a filter on the memory's fields (``where``)
_PREFETCH_FILTERED = 16  # SQLite outside FTS5: the same (``_searched_outside_fts5``)
_PREFETCH_WIDENING = 4  # too few passed: the next round ranks this many times more
_CHECKED_AT_ONCE = 256  # a filtered search's candidates checked against the rows per query
_PREFETCH_MOST = 32_768  # past this many checked, FTS5 joins the rows instead


class SqlLexicalIndex:
    """``LexicalIndex`` (agentcore.services.candidates) over the SQL database of ``engine``."""

    def __init__(
        self, engine: AsyncEngine, max_documents: int = 200_000, stored_documents: int = 20_000
    ) -> None:
        self._engine = for_reads(engine)
        # by _shape: FTS5's, or PostgreSQL's (and whether it reads every posting)
        self._statements: dict[tuple[bool, ...], Any] = {}
        self._stems = FtsStems()
        self._frequencies = ScopeFrequencies()
        self._pg_stats = TermStats()  # Postgres: documents, lengths, lexemes' frequencies
        # SQLite: the search's statements run whole on worker threads (ThreadedReader), and
        # the scopes searched are held in memory (MemoryLexicon) when they fit.
        self._reader: ThreadedReader | None = None
        self._lexicon: MemoryLexicon | None = None
        if engine.dialect.name != "postgresql":
            self._reader = ThreadedReader(engine.url)
            database = Path(str(engine.url.database)).resolve()
            stored = StoredIndexes(database.with_name(f"{database.name}.lexical"), database)
            self._lexicon = MemoryLexicon(
                self._stems, self._reader.connect, max_documents, stored, stored_documents
            )

    async def search(self, query: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        """The best ``limit`` memories matching ``flt`` by BM25 (> 0), best first. SQLite
        searches its scopes in memory (``MemoryLexicon``) when it holds them; FTS5 finds them
        by the query's rarer terms only (``_finding_terms``); ``lookup`` scores them by every
        term."""
        terms = query_terms(query)
        if not terms or not flt.scope_keys or limit <= 0:
            return []
        params = _filter_params(flt) | {"limit": limit}
        if self._reader is None:
            prefetch = limit * (_PG_PREFETCH if flt.where is None else _PG_PREFETCH_FILTERED)
            async with self._engine.connect() as conn:
                weights = await self._pg_stats.weights(conn, terms, flt.scope_keys)
                if not weights.lexemes:
                    return []
                whole, bm25 = bm25_read(weights, flt.scope_keys, prefetch)
                stmt = self._statement(flt, whole)
                rows = (await conn.execute(stmt, params | bm25)).all()
        else:
            stmt = self._statement(flt)
            scopes = scopes_match(scope_token(key) for key in dict.fromkeys(flt.scope_keys))
            lexicon = self._lexicon

            def read(conn: Connection) -> list[Any]:
                if lexicon is not None:
                    best = _searched_outside_fts5(conn, lexicon, terms, flt, limit)
                    if best is not None:
                        return best
                total, holding = self._frequencies.counts(conn, scopes, terms)
                finding = _finding_terms(terms, holding, total)
                params["match"] = f"{scopes} AND {{{SEARCHED}}} : ({_any_of(finding)})"
                return list(conn.execute(stmt, params).all())

            rows = await self._reader.run(read)
        return [VectorHit(str(row[0]), float(row[1])) for row in rows if row[1] > 0]

    async def lookup(self, query: str, flt: VectorFilter, memory_ids: Sequence[str]) -> Lookup:
        """The stored memories among ``memory_ids`` and the idf-weighted share of the query's
        terms (distinct stems) each one's document holds, in (0, 1], frequencies over
        ``flt``'s scopes; memories holding none are left out. SQLite also gives each one's
        BM25 (``coverage.sqlite_matches``); PostgreSQL does not. With ``flt.where``,
        only the memories that satisfy it are read (the database tests it)."""
        terms = query_terms(query)
        keys = list(dict.fromkeys(flt.scope_keys))
        covered = bool(terms and keys)
        if not memory_ids:
            return Lookup([], {}, None if self._reader is None else {})
        if self._reader is None:
            async with self._engine.connect() as conn:
                if flt.where is None:
                    memories = await pg_memories(conn, memory_ids)
                else:
                    memories = [
                        memory_from_row(row)
                        for stmt in select_by_ids(memory_ids)
                        for row in (await conn.execute(_where(stmt, flt, "postgresql"))).mappings()
                    ]
                found = {}
                if covered:
                    weights = await self._pg_stats.weights(conn, terms, keys)
                    found = await pg_coverage(conn, weights, keys, [m.id for m in memories])
            return Lookup(memories, found)
        tokens = [scope_token(key) for key in keys]
        lexicon = self._lexicon

        def read(conn: Connection) -> Lookup:
            wanted = memory_ids
            if flt.where is not None:
                wanted = [row[0] for stmt in _matching(wanted, flt) for row in conn.execute(stmt)]
            memories = sqlite_memories(conn, wanted)
            if not covered:
                return Lookup(memories, {}, {})
            ids = [memory.id for memory in memories]
            matches = None if lexicon is None else lexicon.matches(conn, keys, terms, ids)
            if matches is None:  # scopes too large to hold in memory
                matches = sqlite_matches(conn, self._stems, self._frequencies, terms, tokens, ids)
            return Lookup(memories, matches.coverage, matches.bm25)

        return await self._reader.run(read)

    @property
    def documents_in_memory(self) -> int:
        """SQLite: the lexical documents held in memory (``in_memory``); else 0."""
        return 0 if self._lexicon is None else self._lexicon.documents

    @property
    def stores(self) -> bool:
        """Whether large scopes are searched from stored indexes (SQLite)."""
        return self._lexicon is not None

    def warming(self) -> list[str]:
        """SQLite: what the lexical index still does before every large scope is searched
        outside FTS5 (``MemoryLexicon.warm``: the first call opens or starts building them,
        taking seconds on a large store); [] once done."""
        return [] if self._lexicon is None else self._lexicon.warm()

    async def warm(self) -> None:
        """Returns once every large scope's stored index is searched (``warming``); until
        then raises a retryable ``ProviderError`` naming what is being done. Calls are taken
        meanwhile (FTS5 answers for a scope whose first build runs)."""
        waiting = await asyncio.to_thread(self.warming)
        if waiting:
            raise ProviderError("; ".join(waiting), store=DATABASE)

    async def close(self) -> None:
        if self._lexicon is not None:
            self._lexicon.close()
        if self._reader is not None:
            await self._reader.close()

    def _statement(self, flt: VectorFilter, whole: bool = False) -> Any:
        """The FTS5 (SQLite) or BM25 (PostgreSQL; over every posting when ``whole``) query for
        ``flt``'s shape, its values left as parameters. The usual shapes (scopes, layers,
        expiry) are built once: a search pays no statement construction (building
        PostgreSQL's took a third of its lexical side's CPU)."""
        shape = _shape(flt)
        key = None if shape is None else (*shape, whole)
        if key is not None and key in self._statements:
            return self._statements[key]
        stmt = self._fts_query(flt) if self._reader is not None else self._pg_query(flt, whole)
        if key is not None:
            self._statements[key] = stmt
        return stmt

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

    def _pg_query(self, flt: VectorFilter, whole: bool) -> Any:
        """The best ``prefetch`` of the scopes by BM25 (``limit`` × ``_PG_PREFETCH``, or
        ``_PG_PREFETCH_FILTERED`` with a ``where``), then the filters on the memory rows: a
        short list to join, whatever the planner knows of the tables."""
        bm25 = (
            bm25_statement(whole)
            .cte("bm25")
            # Computed once, then joined to the memories: never re-planned per memory row.
            .prefix_with("MATERIALIZED")
        )
        # The memory rows are looked up by id alone (an index scan of a short array), never
        # joined, then filtered: a join's plan, or a lookup that carries the filters, depends
        # on table statistics, and for a scope that is new or grew since they were gathered the
        # planner scanned the whole scope by its index instead (25 of a search's 30 ms at 3,000
        # memories; benchmarks/sql_statements.py).
        ids = select(bm25.c.memory_id).scalar_subquery()
        rows = (
            select(_MEMORIES)
            .where(_MEMORIES.c.id == func.any(func.array(ids)))
            .cte("candidate_rows")
            .prefix_with("MATERIALIZED")
        )
        live = select(rows.c.id).where(*_filters("postgresql", flt, rows))
        return (
            select(bm25.c.memory_id, bm25.c.score)
            .where(bm25.c.memory_id == func.any(func.array(live.scalar_subquery())))
            .order_by(bm25.c.score.desc(), bm25.c.memory_id)
            .limit(bindparam("limit", type_=Integer()))
        )


def _searched_outside_fts5(
    conn: Connection, lexicon: MemoryLexicon, terms: Sequence[str], flt: VectorFilter, limit: int
) -> list[tuple[str, float]] | None:
    """The best ``limit`` of ``lexicon`` (None when it does not hold every scope). It applies
    every filter but ``where``; with one, its best ``limit`` × ``_PREFETCH_FILTERED`` are
    checked against the rows, in order: the first ``limit`` that pass are the best that pass.
    Candidates are checked in rank order, ``_CHECKED_AT_ONCE`` at a time, until ``limit``
    pass. When fewer pass and more matched, the next round ranks ``_PREFETCH_WIDENING`` times
    more (checking only the new ones: a longer exact top-k extends the shorter), up to
    ``_PREFETCH_MOST``; past that, None: FTS5 joins the rows instead (at 1M memories in a
    scope FTS5 costs ~300 ms a search, a round here tens of milliseconds)."""
    wanted = limit if flt.where is None else limit * _PREFETCH_FILTERED
    keys, layers, ids = flt.scope_keys, flt.layers, flt.ids
    checked = 0
    kept: list[tuple[str, float]] = []
    while True:
        best = lexicon.search(conn, keys, terms, wanted, layers, flt.alive_at, ids)
        if best is None or flt.where is None:
            return best
        # In rank order, a slice at a time, until ``limit`` pass: no more rows read than needed.
        for start in range(checked, len(best), _CHECKED_AT_ONCE):
            part = best[start : start + _CHECKED_AT_ONCE]
            fresh = [memory_id for memory_id, _ in part]
            passing = {row[0] for stmt in _matching(fresh, flt) for row in conn.execute(stmt)}
            kept += [hit for hit in part if hit[0] in passing]
            if len(kept) >= limit:
                return kept[:limit]
        checked = len(best)
        if len(best) < wanted:
            return kept
        if wanted >= _PREFETCH_MOST:
            return None
        wanted = min(wanted * _PREFETCH_WIDENING, _PREFETCH_MOST)


def _filters(
    dialect: str, flt: VectorFilter, rows: FromClause = _MEMORIES
) -> list[ColumnElement[bool]]:
    """``flt`` as conditions on the memory ``rows`` (the table, or a selection with its
    columns): the database rows decide, not the index. Scopes, layers and expiry are
    parameters (``_filter_params``)."""
    m = rows.c

    def among(column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        # PostgreSQL: one array parameter, so the statement's text is the same whatever the
        # number of values (psycopg converts and prepares it once).
        if dialect == "postgresql":
            return column == any_(bindparam(name, type_=ARRAY(String())))
        return column.in_(bindparam(name, expanding=True, type_=String()))

    conditions = [among(m.scope_key, "scope_keys")]
    if flt.layers:
        conditions.append(among(m.layer, "layers"))
    if flt.where is not None:
        conditions.append(filter_sql(dialect, rows, flt.where))
    if flt.alive_at is not None:
        alive = bindparam("alive", type_=UTCDateTime())
        conditions.append(or_(m.expires_at.is_(None), m.expires_at > alive))
    if flt.ids is not None:
        conditions.append(among(m.id, "ids"))
    return conditions


def _filter_params(flt: VectorFilter) -> dict[str, Any]:
    """The parameter values of ``_filters(flt)``."""
    params: dict[str, Any] = {"scope_keys": list(dict.fromkeys(flt.scope_keys))}
    if flt.layers:
        params["layers"] = list(flt.layers)
    if flt.alive_at is not None:
        params["alive"] = datetime.fromtimestamp(flt.alive_at, UTC)
    if flt.ids is not None:
        params["ids"] = list(flt.ids)
    return params


def _shape(flt: VectorFilter) -> tuple[bool, bool] | None:
    """What decides the statement of a search with ``flt``: whether it filters by layer and by
    expiry; None for a rarer shape (a ``where`` or ids: built for the search)."""
    if flt.where is not None or flt.ids:
        return None
    return bool(flt.layers), flt.alive_at is not None


def _where(stmt: Select[Any], flt: VectorFilter, dialect: str) -> Select[Any]:
    """``stmt`` (a select of memory rows) kept to the rows that satisfy ``flt.where``."""
    return stmt if flt.where is None else stmt.where(filter_sql(dialect, _MEMORIES, flt.where))


def _matching(memory_ids: Sequence[str], flt: VectorFilter) -> list[Select[Any]]:
    """SQLite: the statements that read which of ``memory_ids`` satisfy ``flt.where``."""
    return [
        _where(select(_MEMORIES.c.id).where(_MEMORIES.c.id.in_(part)), flt, "sqlite")
        for part in chunks(list(dict.fromkeys(memory_ids)))
    ]


def _any_of(terms: Sequence[str]) -> str:
    return " OR ".join(f'"{term}"' for term in terms)


def _finding_terms(terms: Sequence[str], holding: Sequence[int], total: int) -> list[str]:
    """The terms that find the candidates (MaxScore's "essential" terms): those held by at
    most ``FINDING_SHARE`` of the scopes' documents or ``FINDING_FLOOR`` documents, or the
    rarest term if none is. FTS5 ranks
    every document it matches, and the frequent terms bring most of them; a document holding
    only frequent terms can rarely beat the best ones, and ``lookup`` scores each candidate
    with every term."""
    most = max(FINDING_SHARE * total, FINDING_FLOOR)
    finding = [term for term, n in zip(terms, holding, strict=True) if n <= most]
    return finding or [min(zip(holding, terms, strict=True))[1]]
