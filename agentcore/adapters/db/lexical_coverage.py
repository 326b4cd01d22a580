"""Query-term coverage of lexical documents: which of a query's terms each document contains.

BM25 lets one frequent word outscore a document that holds most of the question; multiplying
the lexical score by the share of the query's terms a document contains (its coverage, the
``coord`` factor of classic Lucene scoring) rewards the documents that answer the whole
question. Each term weighs its inverse document frequency over the caller's scopes, so a word
found everywhere in them (a speaker's name) counts for little. A document is the memory's
lexical document (its content, its neighbours' content and its metadata:
``agentcore.adapters.db.lexical``), and terms are compared as the index stems them:
PostgreSQL reads its postings; SQLite reads the documents' words and stems them with the
index's own tokenizer.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import String, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcore.adapters.db.lexical import FTS_DOCS, FTS_TABLE, FTS_TERMS, FTS_TOKENIZER, PG_CONFIG

_WORD = re.compile(r"[^\W_]+")
_COLUMNS = "body ctx_before ctx_after meta"  # the columns searched (not the scope token)
_STEM_CACHE = 100_000
_COUNT_CACHE = 100_000


class FtsStems:
    """Words → the stem FTS5's tokenizer (``FTS_TOKENIZER``) makes of each, cached. Runs an
    in-memory FTS5 table of its own: the stems are exactly the index's."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{FTS_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()  # the table is filled and read per call

    def __call__(self, words: Iterable[str]) -> list[str]:
        words = list(words)
        with self._lock:  # one table, filled and read per call: one caller at a time
            new = [word for word in dict.fromkeys(words) if word not in self._cache]
            if len(self._cache) + len(new) > _STEM_CACHE:
                self._cache.clear()
                new = list(dict.fromkeys(words))
            if new:
                self._stem(new)
            return [self._cache[word] for word in words]

    def _stem(self, new: list[str]) -> None:
        with self._db:
            self._db.execute("DELETE FROM words")
            self._db.executemany(
                "INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(new, start=1)
            )
            rows = self._db.execute("SELECT doc, term FROM tokens WHERE offset = 0")
            for doc, term in rows:
                self._cache[new[doc - 1]] = term
        for word in new:
            self._cache.setdefault(word, word)  # nothing left by the tokenizer: as is


class ScopeFrequencies:
    """How many documents of a set of scopes hold a term (FTS5 counts), and how many documents
    the scopes hold, cached for ``ttl`` seconds: they change slowly and only weigh coverage."""

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, int]] = {}

    def counts(self, conn: Connection, scopes: str, terms: Sequence[str]) -> tuple[int, list[int]]:
        """(documents in ``scopes``, documents holding each of ``terms``); ``scopes`` is an
        FTS5 expression on the scope column."""
        now = self._clock()
        keys = [(scopes, ""), *((scopes, term) for term in terms)]  # "": every document
        missing = [key for key in keys if self._cache.get(key, (now, 0))[0] <= now]
        if missing:
            if len(self._cache) + len(missing) > _COUNT_CACHE:
                self._cache.clear()
            columns = ", ".join(
                f"(SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :m{i})"
                for i in range(len(missing))
            )
            params = {f"m{i}": _counted(*key) for i, key in enumerate(missing)}
            row = conn.execute(text(f"SELECT {columns}"), params).one()
            for key, count in zip(missing, row, strict=True):
                self._cache[key] = (now + self._ttl, int(count))
        return self._cache[keys[0]][1], [self._cache[key][1] for key in keys[1:]]


def _counted(scopes: str, term: str) -> str:
    return scopes if not term else f'{scopes} AND {{{_COLUMNS}}} : "{term}"'


def sqlite_coverage(
    conn: Connection,
    stems: FtsStems,
    frequencies: ScopeFrequencies,
    terms: Sequence[str],
    scope_tokens: Sequence[str],
    memory_ids: Sequence[str],
) -> dict[str, float]:
    """Coverage in (0, 1] of each memory that holds at least one of ``terms``."""
    by_stem = dict(zip(stems(terms), terms, strict=True))  # one term per stem, the first
    scopes = "scope : (" + " OR ".join(f'"{token}"' for token in scope_tokens) + ")"
    total, holding = frequencies.counts(conn, scopes, list(by_stem.values()))
    weights = {stem: idf(total, n) for stem, n in zip(by_stem, holding, strict=True)}
    if not weights:
        return {}
    # The documents are read by rowid (no MATCH: that would visit every matching document of
    # the scopes) and their words stemmed here, by the index's tokenizer (``stems``).
    stmt = text(
        f"SELECT d.memory_id, {_COLUMNS.replace(' ', ', ')} FROM {FTS_DOCS} AS d "
        f"JOIN {FTS_TABLE} ON {FTS_TABLE}.rowid = d.doc_id WHERE d.memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True, type_=String()))
    whole = sum(weights.values())
    starts = _stem_starts(weights)
    coverage = {}
    for memory_id, *fields in conn.execute(stmt, {"ids": list(memory_ids)}):
        document = " ".join(field for field in fields if field).lower()
        # ASCII text: only the words that begin like a query stem can stem to one.
        words = set((starts if document.isascii() else _WORD).findall(document))
        held = weights.keys() & set(stems(words))
        if held:
            coverage[str(memory_id)] = sum(weights[stem] for stem in held) / whole
    return coverage


def _stem_starts(stems: Iterable[str]) -> re.Pattern[str]:
    """The ASCII words that may stem (Porter) to one of ``stems``. Porter rewrites only a
    word's ending, after at least one letter, and changes at most the last letter of the part
    it keeps (a "y" to "i": "say" -> "sai"), so a word stemming to ``s`` begins with
    ``s[:-1]`` (or ``s`` itself when one letter long); three letters of it are enough."""
    heads = sorted({s[: max(1, min(3, len(s) - 1))] for s in stems}, key=len, reverse=True)
    return re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, heads)) + r")[^\W_]*")


def idf(documents: int, holding: int) -> float:
    """BM25's inverse document frequency, kept positive: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (documents - holding + 0.5) / (holding + 0.5))


async def pg_coverage(
    conn: AsyncConnection,
    terms: Sequence[str],
    scope_keys: Sequence[str],
    memory_ids: Sequence[str],
) -> dict[str, float]:
    """Coverage in (0, 1] of each memory that holds at least one of ``terms``."""
    stmt = text(_PG_COVERAGE).bindparams(
        bindparam("ids", type_=ARRAY(String())), bindparam("keys", type_=ARRAY(String()))
    )
    params: dict[str, Any] = {
        "query": " ".join(terms),
        "keys": list(dict.fromkeys(scope_keys)),
        "ids": list(memory_ids),
    }
    rows = (await conn.execute(stmt, params)).all()
    return {str(row[0]): float(row[1]) for row in rows if row[1] is not None}


# The query's lexemes weighted by their idf over the caller's scopes, then each candidate's
# share of the weight (its postings say which lexemes its document holds).
_PG_COVERAGE = f"""
WITH q AS (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('{PG_CONFIG}', :query))) AS lexeme
), n AS (
    SELECT count(*)::float8 AS n FROM {FTS_TABLE} WHERE scope_key = ANY(:keys)
), w AS (
    SELECT q.lexeme, ln(1 + (n.n - count(t.memory_id) + 0.5) / (count(t.memory_id) + 0.5)) AS idf
    FROM q CROSS JOIN n
    LEFT JOIN {FTS_TERMS} AS t ON t.lexeme = q.lexeme AND t.scope_key = ANY(:keys)
    GROUP BY q.lexeme, n.n
)
SELECT t.memory_id, sum(w.idf) / nullif((SELECT sum(idf) FROM w), 0)
FROM {FTS_TERMS} AS t JOIN w ON w.lexeme = t.lexeme
WHERE t.memory_id = ANY(:ids)
GROUP BY t.memory_id
"""
