"""PostgreSQL's side of lexical search: BM25F from the postings of the query's lexemes, and the
query-term coverage of candidates, with the statistics both need cached.

A search needs, over the caller's scopes, the number of documents, their mean length and how
many documents hold each of the query's lexemes. Computed in every query they cost a scan of the
scopes' documents and of every posting of the query's lexemes, so a search of a 4,000-document
scope spent two thirds of its time counting and a scope of 100,000 several times that; under
load those scans queued behind each other in the database. They change slowly and only weigh
terms and lengths, so ``TermStats`` keeps them for a while (a second per 50 documents, at most
``ttl``; the SQLite side keeps FTS5's counts likewise), and the queries take them as
parameters. A search reads every posting of its lexemes (``_BM25_WHOLE``: exact) while they
are few, and otherwise, of each lexeme, only the best postings by impact, then every posting of
the documents they name (``_BM25``); the counts say which is cheaper (``QueryWeights.read_whole``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Float, Integer, String, bindparam, column, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import BindParameter

from agentcore.adapters.db.engine import pg_driver_rows
from agentcore.adapters.db.lexical.coverage import K1, bm25_idf, idf
from agentcore.adapters.db.lexical.writer import FTS_TABLE, FTS_TERMS, PG_CONFIG

_CACHE = 100_000  # lexemes and counts kept, each
PER_LEXEME = 2  # a lexeme's best postings read in each scope, per document a search wants
# Every posting is read (exact BM25) while the query's lexemes hold at most this many postings
# per key probe the impact-ordered read would make (one per candidate and lexeme, a candidate
# per posting it takes of each lexeme). Once the key carried each posting's tf and doc_len
# (0018), a posting read in key order cost less beside a probe, which still lands on a page
# of its own: on one store of 100,000 memories in one scope, bounds of 1, 2, 4, 8 and 16 gave
# a one-tag search (pool 480) p95 of 286-349, 169-213, 98-126, 93-96 and 97 ms, a search by
# scope alone 75-104, 75-82, 74-117, 90-95 and 102 ms (docs/benchmarks.md, production at 100k).
EVERY_POSTING_UP_TO = 4


@dataclass(frozen=True, slots=True)
class QueryWeights:
    """A query's lexemes over some scopes, each with its BM25 and coverage weight."""

    lexemes: list[str]
    bm25: list[float]
    coverage: list[float]
    average_length: float
    postings: int  # the lexemes' postings in the scopes

    def read_whole(self, prefetch: int) -> bool:
        """Whether a search for the best ``prefetch`` reads every posting of the lexemes
        (exact BM25) rather than each lexeme's best by impact (``bm25_statement``)."""
        candidates = prefetch * PER_LEXEME * len(self.lexemes)
        return self.postings <= EVERY_POSTING_UP_TO * candidates * len(self.lexemes)

    @property
    def whole(self) -> float:
        """The coverage weight of a document holding every lexeme."""
        return sum(self.coverage)


class TermStats:
    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._lexemes: dict[str, tuple[str, ...]] = {}  # word -> its lexemes (english)
        self._scopes: dict[tuple[str, ...], tuple[float, int, float]] = {}  # until, n, mean
        self._holding: dict[tuple[tuple[str, ...], str], tuple[float, int]] = {}  # until, df

    async def weights(
        self, conn: AsyncConnection, terms: Sequence[str], scope_keys: Sequence[str]
    ) -> QueryWeights:
        keys = tuple(sorted(set(scope_keys)))
        lexemes = list(dict.fromkeys(await self._lexemes_of(conn, terms)))
        until, documents, mean = await self._scope(conn, keys)
        holding = [
            min(n, documents) for n in await self._holding_counts(conn, keys, lexemes, until)
        ]
        return QueryWeights(
            lexemes,
            [bm25_idf(documents, n) for n in holding],
            [idf(documents, n) for n in holding],
            max(mean, 1.0),
            sum(holding),
        )

    async def _lexemes_of(self, conn: AsyncConnection, terms: Sequence[str]) -> list[str]:
        new = [term for term in dict.fromkeys(terms) if term not in self._lexemes]
        if new:
            if len(self._lexemes) + len(new) > _CACHE:
                self._lexemes.clear()
            rows = await pg_driver_rows(conn, _LEXEMES, {"words": new})
            self._lexemes.update((str(row[0]), tuple(row[1] or ())) for row in rows)
        return [lexeme for term in terms for lexeme in self._lexemes.get(term, ())]

    async def _scope(
        self, conn: AsyncConnection, keys: tuple[str, ...]
    ) -> tuple[float, int, float]:
        """(valid until, documents, mean length) of the scopes. Counting costs in proportion
        to the documents, and a small scope's counts change fastest: they are kept one second
        per 50 documents, at most ``ttl``."""
        now = self._clock()
        cached = self._scopes.get(keys)
        if cached is None or cached[0] <= now:
            (row,) = await pg_driver_rows(conn, _SCOPE_STATS, {"keys": list(keys)})
            documents = int(row[0])
            if len(self._scopes) >= _CACHE:
                self._scopes.clear()
            until = now + min(self._ttl, max(1.0, documents / 50))
            cached = self._scopes[keys] = (until, documents, float(row[1] or 1.0))
        return cached

    async def _holding_counts(
        self, conn: AsyncConnection, keys: tuple[str, ...], lexemes: list[str], until: float
    ) -> list[int]:
        """Documents of the scopes holding each lexeme, counted again when the scopes' own
        counts are (``until``), so that both describe the same moment."""
        now = self._clock()
        missing = [lx for lx in lexemes if self._holding.get((keys, lx), (now, 0))[0] <= now]
        if missing:
            counts = dict.fromkeys(missing, 0)
            params = {"keys": list(keys), "lexemes": missing}
            for row in await pg_driver_rows(conn, _HOLDING, params):
                counts[str(row[0])] = int(row[1])
            if len(self._holding) + len(missing) > _CACHE:
                self._holding.clear()
            for lexeme, count in counts.items():
                self._holding[(keys, lexeme)] = (until, count)
        return [self._holding[(keys, lexeme)][1] for lexeme in lexemes]


def bm25_statement(whole: bool) -> Any:
    """The best ``prefetch`` (memory_id, score) of the scopes by BM25F, as a text clause whose
    values are parameters (``bm25_params``): over every posting of the lexemes (``whole``,
    see ``QueryWeights.read_whole``), or of the documents among their lexemes' best
    ``prefetch`` × ``PER_LEXEME`` postings by impact."""
    params: list[BindParameter[Any]] = [
        bindparam("lexemes", type_=ARRAY(String())),
        bindparam("weights", type_=ARRAY(Float())),
        bindparam("average_length", type_=Float()),
        bindparam("keys", type_=ARRAY(String())),
        bindparam("prefetch", type_=Integer()),
    ]
    if not whole:
        params.append(bindparam("per_lexeme", type_=Integer()))
    return (
        text(_BM25_WHOLE if whole else _BM25)
        .bindparams(*params)
        .columns(column("memory_id", String()), column("score", Float()))
    )


def bm25_params(weights: QueryWeights, scope_keys: Sequence[str], prefetch: int) -> dict[str, Any]:
    """The values of ``bm25_statement``'s parameters."""
    return {
        "lexemes": weights.lexemes,
        "weights": weights.bm25,
        "average_length": weights.average_length,
        "keys": list(dict.fromkeys(scope_keys)),
        "prefetch": prefetch,
        "per_lexeme": prefetch * PER_LEXEME,
    }


async def coverage(
    conn: AsyncConnection,
    weights: QueryWeights,
    scope_keys: Sequence[str],
    memory_ids: Sequence[str],
) -> dict[str, float]:
    """Coverage in (0, 1] of each of ``memory_ids`` (memories of ``scope_keys``) that holds at
    least one lexeme."""
    whole = weights.whole
    if whole <= 0 or not memory_ids:
        return {}
    params = {
        "lexemes": weights.lexemes,
        "weights": weights.coverage,
        "keys": list(dict.fromkeys(scope_keys)),
        "ids": list(memory_ids),
    }
    rows = await pg_driver_rows(conn, _COVERAGE, params)
    return {str(row[0]): min(float(row[1]) / whole, 1.0) for row in rows}


# psycopg's placeholders: run through the driver (``pg_driver_rows``).
_LEXEMES = (
    f"SELECT w, tsvector_to_array(to_tsvector('{PG_CONFIG}', w)) "
    "FROM unnest(%(words)s::text[]) AS w"
)
_SCOPE_STATS = (
    f"SELECT count(*), avg(doc_len)::float8 FROM {FTS_TABLE} "
    "WHERE scope_key = ANY(%(keys)s::text[])"
)
_HOLDING = (
    f"SELECT lexeme, count(*) FROM {FTS_TERMS} "
    "WHERE scope_key = ANY(%(keys)s::text[]) AND lexeme = ANY(%(lexemes)s::text[]) GROUP BY lexeme"
)
# A posting's BM25F term score; every posting of the lexemes, summed (exact).
# Float arithmetic throughout: ``0.75 * t.doc_len`` alone is numeric (an integer column times a
# decimal constant), which doubled the time of summing an exact BM25's postings (3.0 against
# 1.6 ms for 4,100 postings).
_SCORE = (
    f"w.weight * t.tf * {K1 + 1} "
    f"/ (t.tf + {K1} * (0.25 + 0.75 * t.doc_len::float8 / :average_length))"
)
_BM25_WHOLE = f"""
SELECT t.memory_id, sum({_SCORE}) AS score
FROM {FTS_TERMS} AS t
JOIN unnest(CAST(:lexemes AS text[]), CAST(:weights AS float8[])) AS w (lexeme, weight)
    ON w.lexeme = t.lexeme
WHERE t.scope_key = ANY(:keys) AND t.lexeme = ANY(:lexemes)
GROUP BY t.memory_id
ORDER BY score DESC
LIMIT :prefetch
"""
# BM25F (tf: the weighted count of a lexeme's positions; doc_len: the document's number of
# distinct lexemes) with the idf of each lexeme given, over the candidates: in each scope, each
# lexeme's best ``per_lexeme`` postings by impact (the index of migration 0016 reads them in
# that order and stops), every posting of the candidates then read by key and summed exactly
# (picking them out of all the lexemes' postings read every posting of a common lexeme). A
# document is missed only when none of its lexemes ranks it among their best ``per_lexeme`` (a scope
# where no lexeme has more postings than that is searched exactly); reading every posting of a
# common lexeme took 0.4-1.1 s at 100,000 memories in one scope.
_BM25 = f"""
WITH w (lexeme, weight) AS (
    SELECT * FROM unnest(CAST(:lexemes AS text[]), CAST(:weights AS float8[]))
), candidates AS MATERIALIZED (
    SELECT DISTINCT best.memory_id
    FROM unnest(CAST(:keys AS text[])) AS k (scope_key)
    CROSS JOIN w
    CROSS JOIN LATERAL (
        SELECT p.memory_id FROM {FTS_TERMS} AS p
        WHERE p.scope_key || ' ' || p.lexeme = k.scope_key || ' ' || w.lexeme
        ORDER BY p.impact DESC
        LIMIT :per_lexeme
    ) AS best
)
SELECT c.memory_id, sum({_SCORE}) AS score
FROM candidates AS c
CROSS JOIN w
CROSS JOIN unnest(CAST(:keys AS text[])) AS k (scope_key)
CROSS JOIN LATERAL (
    SELECT p.tf, p.doc_len FROM {FTS_TERMS} AS p
    WHERE p.scope_key = k.scope_key AND p.lexeme = w.lexeme AND p.memory_id = c.memory_id
    LIMIT 1
) AS t
GROUP BY c.memory_id
ORDER BY score DESC
LIMIT :prefetch
"""
# One probe of the postings' primary key (scope_key, lexeme, memory_id) per candidate, lexeme
# and scope, whatever the statistics: the cost follows the candidates, not the scope (by ids
# alone a fresh table's postings were scanned; by scopes and lexemes every posting of a common
# lexeme was read). The probes here and in ``_BM25`` end in LIMIT 1 (the key is unique), which
# keeps each a subquery run per row: a plain one is merged into a join, which on a vacuumed
# table (index-only scans look cheap) read every posting of the lexemes instead, 21 ms for 45
# candidates at 100,000 memories against 1.4 ms.
_COVERAGE = f"""
SELECT c.memory_id, sum(w.weight)
FROM unnest(%(ids)s::text[]) AS c (memory_id)
CROSS JOIN unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS w (lexeme, weight)
CROSS JOIN unnest(%(keys)s::text[]) AS k (scope_key)
CROSS JOIN LATERAL (
    SELECT 1 FROM {FTS_TERMS} AS t
    WHERE t.scope_key = k.scope_key AND t.lexeme = w.lexeme AND t.memory_id = c.memory_id
    LIMIT 1
) AS held
GROUP BY c.memory_id
"""
