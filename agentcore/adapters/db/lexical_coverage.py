"""Query-term coverage of lexical documents: which of a query's terms each document contains.

BM25 lets one frequent word outscore a document that holds most of the question; multiplying
the lexical score by the share of the query's terms a document contains (its coverage, the
``coord`` factor of classic Lucene scoring) rewards the documents that answer the whole
question. A document is the memory's lexical document (its content, its neighbours' content and
its metadata: ``agentcore.adapters.db.lexical``), and terms are compared as the index stems
them: PostgreSQL reads its postings; SQLite asks FTS5 to mark the matched words
(``highlight``) and stems them with the index's own tokenizer.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import String, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcore.adapters.db.lexical import FTS_DOCS, FTS_TABLE, FTS_TERMS, FTS_TOKENIZER, PG_CONFIG

_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"
_MARKED = re.compile(f"{_MARK_OPEN}([^{_MARK_CLOSE}]*){_MARK_CLOSE}")
_WORD = re.compile(r"[^\W_]+")
_FIELDS = (1, 2, 3, 4)  # body, ctx_before, ctx_after, meta (column 0 is the scope token)
_STEM_CACHE = 100_000


class FtsStems:
    """Words → the stem FTS5's tokenizer (``FTS_TOKENIZER``) makes of each, cached. Runs an
    in-memory FTS5 table of its own: the stems are exactly the index's."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{FTS_TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
        self._cache: dict[str, str] = {}

    def __call__(self, words: Iterable[str]) -> list[str]:
        words = list(words)
        new = [word for word in dict.fromkeys(words) if word not in self._cache]
        if new:
            if len(self._cache) + len(new) > _STEM_CACHE:
                self._cache.clear()
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
        return [self._cache[word] for word in words]


async def sqlite_coverage(
    conn: AsyncConnection, stems: FtsStems, terms: Sequence[str], memory_ids: Sequence[str]
) -> dict[str, float]:
    """Coverage in [0, 1] of each memory that holds at least one of ``terms``."""
    wanted = set(stems(terms))
    words = " OR ".join(f'"{term}"' for term in terms)
    marked = ", ".join(f"highlight({FTS_TABLE}, {column}, char(2), char(3))" for column in _FIELDS)
    stmt = text(
        f"SELECT d.memory_id, {marked} FROM {FTS_TABLE} "
        f"JOIN {FTS_DOCS} AS d ON d.doc_id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH :match AND d.memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True, type_=String()))
    match = f"{{body ctx_before ctx_after meta}} : ({words})"
    rows = (await conn.execute(stmt, {"match": match, "ids": list(memory_ids)})).all()
    coverage = {}
    for memory_id, *fields in rows:
        found = [w for f in fields if f for span in _MARKED.findall(f) for w in _words(span)]
        coverage[str(memory_id)] = len(wanted.intersection(stems(found))) / len(wanted)
    return coverage


async def pg_coverage(
    conn: AsyncConnection, terms: Sequence[str], memory_ids: Sequence[str]
) -> dict[str, float]:
    """Coverage in [0, 1] of each memory that holds at least one of ``terms``."""
    stmt = text(_PG_COVERAGE).bindparams(bindparam("ids", type_=ARRAY(String())))
    params: dict[str, Any] = {"query": " ".join(terms), "ids": list(memory_ids)}
    return {str(row[0]): float(row[1]) for row in (await conn.execute(stmt, params)).all()}


def _words(span: str) -> list[str]:
    return _WORD.findall(span.lower())


_PG_COVERAGE = f"""
WITH q AS (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('{PG_CONFIG}', :query))) AS lexeme
)
SELECT t.memory_id, count(DISTINCT t.lexeme)::float8 / greatest((SELECT count(*) FROM q), 1)
FROM {FTS_TERMS} AS t JOIN q ON q.lexeme = t.lexeme
WHERE t.memory_id = ANY(:ids)
GROUP BY t.memory_id
"""
