"""Query-term coverage of lexical documents: which of a query's terms each document contains.

BM25 lets one frequent word outscore a document that holds most of the question; multiplying
the lexical score by the share of the query's terms a document contains (its coverage, the
``coord`` factor of classic Lucene scoring) rewards the documents that answer the whole
question. Each term weighs its inverse document frequency over the caller's scopes, so a word
found everywhere in them (a speaker's name) counts for little. A document is the memory's
lexical document (its content, its neighbours' content and its metadata:
``agentcore.adapters.db.lexical.writer``), and terms are compared as the index stems them:
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
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from sqlalchemy import String, bindparam, text
from sqlalchemy.engine import Connection

from agentcore.adapters.db.lexical.writer import (
    BODY,
    FTS_DOCS,
    FTS_TABLE,
    FTS_TOKENIZER,
    META,
    NEIGHBOUR,
    WORD,
)

SEARCHED = "body ctx_before ctx_after meta"  # the columns searched (not the scope token)
FIELD_WEIGHTS = (BODY, NEIGHBOUR, NEIGHBOUR, META)  # their BM25 weights, in that order
K1, B = 1.2, 0.75  # BM25's constants, as FTS5's bm25() has them
_Length = TypeVar("_Length", float, npt.NDArray[np.float64])
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
    """How many documents of a set of scopes hold a term (FTS5 counts), how many documents the
    scopes hold, and the table's tokens per document, cached for ``ttl`` seconds: they change
    slowly and only weigh terms and lengths."""

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, int]] = {}
        # (valid until, documents in the table, tokens per document)
        self._table: tuple[float, int, float] = (0.0, 0, 1.0)

    def counts(
        self, conn: Connection, scopes: str | None, terms: Sequence[str]
    ) -> tuple[int, list[int]]:
        """(documents in ``scopes``, documents holding each of ``terms``); ``scopes`` is an
        FTS5 expression on the scope column, or None for the whole table."""
        now = self._clock()
        scope = scopes or ""
        keys = [(scope, ""), *((scope, term) for term in terms)]  # term "": every document
        if scopes is None:
            self._cache[keys[0]] = (now + self._ttl, self.table(conn)[0])
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

    def table(self, conn: Connection) -> tuple[int, float]:
        """(documents in the table, tokens per document over all columns), as FTS5's bm25()
        uses them: from its averages record (the rows, then each column's tokens)."""
        now = self._clock()
        if self._table[0] <= now:
            block = conn.execute(text(f"SELECT block FROM {FTS_TABLE}_data WHERE id = 1")).scalar()
            values = varints(block or b"")
            rows, tokens = (values[0], sum(values[1:])) if values else (0, 0)
            self._table = (now + self._ttl, rows, max(tokens / rows, 1.0) if rows else 1.0)
        return self._table[1], self._table[2]


def scopes_match(scope_tokens: Iterable[str]) -> str:
    """The FTS5 expression of the documents of any of the scopes of ``scope_tokens``."""
    return "scope : (" + " OR ".join(f'"{token}"' for token in scope_tokens) + ")"


def _counted(scopes: str, term: str) -> str:
    """The FTS5 expression counted for (``scopes``, ``term``); either may be "" (all)."""
    if not term:
        return scopes
    words = f'{{{SEARCHED}}} : "{term}"'
    return f"{scopes} AND {words}" if scopes else words


@dataclass(frozen=True, slots=True)
class Matches:
    """Per memory holding a query term: its coverage in (0, 1] and its BM25 (> 0)."""

    coverage: dict[str, float]
    bm25: dict[str, float]


def sqlite_matches(
    conn: Connection,
    stems: FtsStems,
    frequencies: ScopeFrequencies,
    terms: Sequence[str],
    scope_tokens: Sequence[str],
    memory_ids: Sequence[str],
) -> Matches:
    """Coverage and BM25 of each memory whose document holds at least one of ``terms``.

    BM25 is FTS5's bm25() for the whole query, term for term: k1 1.2, b 0.75, frequencies
    weighted by column, a document's length in tokens over all columns against the table's
    average, and document frequencies over the whole table. (Frequencies over the caller's
    scopes, as coverage uses, lost 0.007 of LoCoMo recall@10.)
    """
    by_stem = dict(zip(stems(terms), terms, strict=True))  # one term per stem, the first
    if not by_stem:
        return Matches({}, {})
    total, holding = frequencies.counts(conn, scopes_match(scope_tokens), list(by_stem.values()))
    weights = {stem: idf(total, n) for stem, n in zip(by_stem, holding, strict=True)}
    rows, in_table = frequencies.counts(conn, None, list(by_stem.values()))
    bm25_weights = {stem: bm25_idf(rows, n) for stem, n in zip(by_stem, in_table, strict=True)}
    average = frequencies.table(conn)[1]
    # The documents are read by rowid (no MATCH: that would visit every matching document of
    # the scopes) and their words stemmed here, by the index's tokenizer (``stems``).
    stmt = text(
        f"SELECT d.memory_id, s.sz, {SEARCHED.replace(' ', ', ')} FROM {FTS_DOCS} AS d "
        f"JOIN {FTS_TABLE} ON {FTS_TABLE}.rowid = d.doc_id "
        f"JOIN {FTS_TABLE}_docsize AS s ON s.id = d.doc_id WHERE d.memory_id IN :ids"
    ).bindparams(bindparam("ids", expanding=True, type_=String()))
    whole = sum(weights.values())
    starts = _stem_starts(weights)
    matches = Matches({}, {})
    for memory_id, sizes, *fields in conn.execute(stmt, {"ids": list(memory_ids)}):
        frequency: dict[str, float] = {}
        for weight, field in zip(FIELD_WEIGHTS, fields, strict=True):
            if not field:
                continue
            field = field.lower()
            # ASCII text: only the words that begin like a query stem can stem to one.
            words = (starts if field.isascii() else WORD).findall(field)
            for stem in stems(words):
                if stem in weights:
                    frequency[stem] = frequency.get(stem, 0.0) + weight
        if not frequency:
            continue
        key = str(memory_id)
        matches.coverage[key] = sum(weights[stem] for stem in frequency) / whole
        norm = length_norm(sum(varints(sizes)), average)
        matches.bm25[key] = sum(
            bm25_weights[stem] * tf * (K1 + 1) / (tf + norm) for stem, tf in frequency.items()
        )
    return matches


def varints(data: bytes) -> list[int]:
    """SQLite's variable-length integers (FTS5's sizes and averages records), in order."""
    values, value, count = [], 0, 0
    for byte in data:
        if count == 8:  # the ninth byte holds 8 bits
            values.append((value << 8) | byte)
            value, count = 0, 0
            continue
        value = (value << 7) | (byte & 0x7F)
        count += 1
        if not byte & 0x80:
            values.append(value)
            value, count = 0, 0
    return values


def _stem_starts(stems: Iterable[str]) -> re.Pattern[str]:
    """The ASCII words that may stem (Porter) to one of ``stems``. Porter rewrites only a
    word's ending, after at least one letter, and changes at most the last letter of the part
    it keeps (a "y" to "i": "say" -> "sai"), so a word stemming to ``s`` begins with
    ``s[:-1]`` (or ``s`` itself when one letter long); three letters of it are enough."""
    heads = sorted({s[: max(1, min(3, len(s) - 1))] for s in stems}, key=len, reverse=True)
    return re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, heads)) + r")[^\W_]*")


def bm25_idf(documents: int, holding: int) -> float:
    """BM25's inverse document frequency as FTS5 computes it: ln((N - n + 0.5) / (n + 0.5)),
    floored at a millionth."""
    return max(math.log((documents - holding + 0.5) / (holding + 0.5)), 1e-6)


def length_norm(length: _Length, average: float) -> _Length:
    """BM25's length normalization of a document (or of each of an array of them)."""
    return K1 * (1 - B + B * length / average)


def idf(documents: int, holding: int) -> float:
    """BM25's inverse document frequency, kept positive: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (documents - holding + 0.5) / (holding + 0.5))
