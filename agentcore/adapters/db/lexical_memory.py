"""The lexical index held in memory (SQLite, embedded): BM25F and query-term coverage computed
over per-scope postings, where FTS5 would rank every matching document of a search and each
candidate's document would be read and stemmed again.

SQLite stays the record: ``LexicalWriter`` writes the documents and, in the same transaction,
appends the id of every memory whose document changed (written, its neighbours' context
rewritten, deleted) to ``CHANGES``. A scope is loaded from its documents the first time it is
searched; before every search the changes after the last one applied are read and the changed
documents read again, so a search sees every committed write, whoever made it (this process,
a worker, another process on the same file). Changes are numbered in commit order; when a
reader has fallen behind what the log keeps, it drops its scopes and loads them again.

Documents are tokenized as ``lexical_coverage`` reads FTS5's: lower-cased words, stemmed by
the index's own tokenizer (``FtsStems``); stop words are counted in a document's length and
not kept. BM25 uses k1 1.2, b 0.75, term frequencies weighted by field (``BODY``,
``NEIGHBOUR``, ``META``), and document frequencies and lengths over the scopes searched.
Scopes are kept up to ``max_documents`` in all, the least recently searched dropped first; a
larger scope is searched by FTS5 (``lexical_search``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import String, bindparam, text
from sqlalchemy.engine import Connection

from agentcore.adapters.db.dialect import chunks
from agentcore.adapters.db.engine import driver_rows
from agentcore.adapters.db.lexical import (
    CHANGES,
    FTS_DOCS,
    FTS_TABLE,
    STOP_WORDS,
    WORD,
)
from agentcore.adapters.db.lexical_coverage import (
    FIELD_WEIGHTS,
    K1,
    FtsStems,
    Matches,
    bm25_idf,
    idf,
    length_norm,
)
from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.types import sqlite_datetime
from agentcore.domain.models import Layer

_LAYERS = {layer.value: code for code, layer in enumerate(Layer)}
_LOAD_NOW = 2_000  # scopes up to this many documents load within the search (~0.2 s)
_RECHECK_SECONDS = 60.0  # a scope too large to hold is counted again after this

log = logging.getLogger(__name__)

Floats = npt.NDArray[np.float64]
_SELECT_DOCS = (
    "SELECT d.memory_id, d.layer, m.expires_at, "
    "f.body, f.ctx_before, f.ctx_after, f.meta "
    f"FROM {FTS_DOCS} AS d JOIN {FTS_TABLE} AS f ON f.rowid = d.doc_id "
    f"JOIN {MemoryRow.__tablename__} AS m ON m.id = d.memory_id "
)
_SCOPE_DOCS = text(_SELECT_DOCS + "WHERE d.scope_key = :key")
_SOME_DOCS = text(_SELECT_DOCS + "WHERE d.memory_id IN :ids").bindparams(
    bindparam("ids", expanding=True, type_=String())
)
# Read before every search (``driver_rows``: SQLAlchemy's handling cost more than the query).
_CHANGED = f"SELECT seq, memory_id, scope_key FROM {CHANGES} WHERE seq > ? ORDER BY seq"
_LAST_CHANGE = text(f"SELECT coalesce(max(seq), 0) FROM {CHANGES}")
_OLDEST_CHANGE = text(f"SELECT min(seq) FROM {CHANGES}")
_SCOPE_SIZE = text(f"SELECT count(*) FROM {FTS_DOCS} WHERE scope_key = :key")


class ScopeDocuments:
    """The lexical documents of one scope: per document its stems' weighted frequencies, its
    length in words, its layer and expiry; per stem the documents holding it."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}  # memory id -> slot
        self._ids: list[str | None] = []
        self._forward: list[dict[str, float]] = []
        self._postings: dict[str, dict[int, float]] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], Floats]] = {}
        self._free: list[int] = []
        self.lengths: Floats = np.zeros(0)
        self.layers = np.zeros(0, dtype=np.int8)
        self.expires: Floats = np.zeros(0)
        self.total_length = 0.0

    def __len__(self) -> int:
        return len(self.slots)

    def put(
        self, memory_id: str, layer: str, expires_at: float, stems: dict[str, float], length: int
    ) -> None:
        """Add or replace the document of ``memory_id``."""
        self.drop(memory_id)
        slot = self._free.pop() if self._free else self._grow()
        self.slots[memory_id] = slot
        self._ids[slot] = memory_id
        self._forward[slot] = stems
        self.lengths[slot] = length
        self.layers[slot] = _LAYERS.get(layer, -1)
        self.expires[slot] = expires_at
        self.total_length += length
        for stem, tf in stems.items():
            self._postings.setdefault(stem, {})[slot] = tf
            self._arrays.pop(stem, None)

    def drop(self, memory_id: str) -> None:
        slot = self.slots.pop(memory_id, None)
        if slot is None:
            return
        for stem in self._forward[slot]:
            holding = self._postings[stem]
            del holding[slot]
            if not holding:
                del self._postings[stem]
            self._arrays.pop(stem, None)
        self.total_length -= self.lengths[slot]
        self._ids[slot] = None
        self._forward[slot] = {}
        self.lengths[slot] = 0.0
        self._free.append(slot)

    def holding(self, stem: str) -> int:
        """How many documents hold ``stem``."""
        return len(self._postings.get(stem, ()))

    def postings(self, stem: str) -> tuple[npt.NDArray[np.int64], Floats]:
        """The slots of the documents holding ``stem`` and its weighted frequency in each."""
        arrays = self._arrays.get(stem)
        if arrays is None:
            holding = self._postings.get(stem, {})
            arrays = (
                np.fromiter(holding.keys(), np.int64, len(holding)),
                np.fromiter(holding.values(), np.float64, len(holding)),
            )
            self._arrays[stem] = arrays
        return arrays

    def frequencies(self, memory_id: str) -> tuple[dict[str, float], float] | None:
        """The stems and length of ``memory_id``'s document, if held."""
        slot = self.slots.get(memory_id)
        return None if slot is None else (self._forward[slot], float(self.lengths[slot]))

    def memory_id(self, slot: int) -> str:
        memory_id = self._ids[slot]
        if memory_id is None:
            raise KeyError(slot)
        return memory_id

    def _grow(self) -> int:
        slot = len(self._ids)
        if slot == len(self.lengths):
            size = max(64, 2 * slot)
            self.lengths = np.resize(self.lengths, size)
            self.layers = np.resize(self.layers, size)
            self.expires = np.resize(self.expires, size)
        self._ids.append(None)
        self._forward.append({})
        return slot


@dataclass(frozen=True, slots=True)
class _Query:
    """A query's stems over some scopes: their weights for BM25 and for coverage."""

    bm25_idf: dict[str, float]
    coverage_idf: dict[str, float]
    average_length: float
    whole: float  # the sum of ``coverage_idf``: a document holding every stem

    @classmethod
    def over(cls, scopes: Sequence[ScopeDocuments], stems: Iterable[str]) -> _Query:
        documents = sum(len(scope) for scope in scopes)
        length = sum(scope.total_length for scope in scopes)
        bm25_weights, coverage_idf = {}, {}
        for stem in stems:
            n = sum(scope.holding(stem) for scope in scopes)
            if n:
                bm25_weights[stem] = bm25_idf(documents, n)
            coverage_idf[stem] = idf(documents, n)
        average = max(length / documents, 1.0) if documents else 1.0
        return cls(bm25_weights, coverage_idf, average, sum(coverage_idf.values()))

    def score(self, stems: dict[str, float], length: float) -> tuple[float, float]:
        """(BM25, coverage) of one document."""
        norm = length_norm(length, self.average_length)
        bm25 = covered = 0.0
        for stem, weight in self.bm25_idf.items():
            tf = stems.get(stem)
            if tf is not None:
                bm25 += weight * tf * (K1 + 1) / (tf + norm)
                covered += self.coverage_idf[stem]
        return bm25, (covered / self.whole if self.whole > 0 else 0.0)


class MemoryLexicon:
    """The scopes held in memory and the change log's position (see the module docstring).
    Safe to call from several threads: one at a time works on it."""

    def __init__(
        self,
        stems: FtsStems,
        connect: Callable[[], AbstractContextManager[Connection]],
        max_documents: int = 200_000,
    ) -> None:
        self._stems = stems
        self._connect = connect  # a read-only connection, for loading a scope aside
        self._max_documents = max_documents
        self._scopes: OrderedDict[str, ScopeDocuments] = OrderedDict()  # least recent first
        self._loading: set[str] = set()
        self._too_large: dict[str, float] = {}  # scope key -> when to count it again
        self._applied = -1  # the last change applied; -1: none read yet
        self._lock = threading.Lock()

    def search(
        self,
        conn: Connection,
        scope_keys: Sequence[str],
        terms: Sequence[str],
        limit: int,
        layers: Sequence[str] | None,
        alive_at: float | None,
        ids: Sequence[str] | None,
    ) -> list[tuple[str, float]] | None:
        """The best ``limit`` (memory id, BM25 > 0) of ``scope_keys`` for ``terms``, best
        first, restricted to ``layers``, to those alive at ``alive_at`` and to ``ids`` when
        given; None when a scope is loading or too large to hold (search FTS5 then)."""
        with self._lock:
            scopes = self._load(conn, scope_keys)
            if scopes is None:
                return None
            query = _Query.over(scopes, self._stems(terms))
            hits: list[tuple[float, str]] = []
            for scope in scopes:
                hits.extend(_best(scope, query, limit, layers, alive_at, ids))
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        return [(memory_id, score) for score, memory_id in hits[:limit]]

    def matches(
        self,
        conn: Connection,
        scope_keys: Sequence[str],
        terms: Sequence[str],
        memory_ids: Sequence[str],
    ) -> Matches | None:
        """Coverage and BM25 of each of ``memory_ids`` (in ``scope_keys``) that holds a term;
        None when a scope is loading or too large to hold."""
        with self._lock:
            scopes = self._load(conn, scope_keys)
            if scopes is None:
                return None
            query = _Query.over(scopes, self._stems(terms))
            found = Matches({}, {})
            for memory_id in memory_ids:
                for scope in scopes:
                    document = scope.frequencies(memory_id)
                    if document is None:
                        continue
                    bm25, coverage = query.score(*document)
                    if coverage > 0:
                        found.coverage[memory_id] = coverage
                        found.bm25[memory_id] = bm25
                    break
            return found

    @property
    def documents(self) -> int:
        """The documents held in memory, of every scope."""
        with self._lock:
            return sum(len(scope) for scope in self._scopes.values())

    def held(self, scope_key: str) -> bool:
        """Whether the scope of ``scope_key`` is in memory."""
        with self._lock:
            return scope_key in self._scopes

    def _load(self, conn: Connection, scope_keys: Sequence[str]) -> list[ScopeDocuments] | None:
        """The scopes of ``scope_keys``, brought up to date with the change log; None while
        one of them is loading or if one is too large."""
        self._catch_up(conn)
        scopes = []
        for key in dict.fromkeys(scope_keys):
            scope = self._scopes.get(key) or self._start_loading(conn, key)
            if scope is None:
                return None
            self._scopes.move_to_end(key)
            scopes.append(scope)
        return scopes

    def _start_loading(self, conn: Connection, key: str) -> ScopeDocuments | None:
        """Load a small scope now; start loading a larger one on a thread of its own (searches
        go to FTS5 meanwhile); remember for a while that a scope is too large to hold."""
        now = time.monotonic()
        if key in self._loading or self._too_large.get(key, now) > now:
            return None
        size = int(conn.execute(_SCOPE_SIZE, {"key": key}).scalar_one())
        if size > self._max_documents:
            self._too_large[key] = now + _RECHECK_SECONDS
            return None
        if size <= _LOAD_NOW:
            return self._hold(key, self._read_scope(conn, key))
        self._loading.add(key)
        threading.Thread(target=self._load_aside, args=(key,), daemon=True).start()
        return None

    def _load_aside(self, key: str) -> None:
        """Read a scope without holding the lock, then apply the changes made meanwhile."""
        try:
            with self._connect() as conn:
                after = int(conn.execute(_LAST_CHANGE).scalar_one())
                scope = self._read_scope(conn, key)
                with self._lock:
                    self._catch_up(conn)
                    oldest = conn.execute(_OLDEST_CHANGE).scalar_one()
                    if oldest is not None and oldest > after + 1:
                        return  # changes since the read are forgotten: load again later
                    self._hold(key, scope)
                    changed = driver_rows(conn, _CHANGED, [after])
                    self._refresh(conn, {str(row[1]): key for row in changed if row[2] == key})
        except Exception:
            log.exception("loading the lexical documents of a scope failed")
        finally:
            with self._lock:
                self._loading.discard(key)

    def _catch_up(self, conn: Connection) -> None:
        if self._applied < 0:
            self._applied = int(conn.execute(_LAST_CHANGE).scalar_one())
            return
        changed = driver_rows(conn, _CHANGED, [self._applied])
        if not changed:
            return
        if changed[0][0] != self._applied + 1:  # the log no longer holds what was missed
            self._scopes.clear()
        else:
            self._refresh(
                conn, {str(row[1]): str(row[2]) for row in changed if row[2] in self._scopes}
            )
        self._applied = int(changed[-1][0])

    def _refresh(self, conn: Connection, changed: dict[str, str]) -> None:
        """Read the documents of ``changed`` (memory id -> its loaded scope's key) again."""
        for part in chunks(list(changed)):
            found = set()
            for row in conn.execute(_SOME_DOCS, {"ids": part}):
                self._put(self._scopes[changed[str(row[0])]], row)
                found.add(str(row[0]))
            for memory_id in part:
                if memory_id not in found:  # deleted
                    self._scopes[changed[memory_id]].drop(memory_id)

    def _read_scope(self, conn: Connection, key: str) -> ScopeDocuments:
        scope = ScopeDocuments()
        for row in conn.execute(_SCOPE_DOCS, {"key": key}):
            self._put(scope, row)
        return scope

    def _hold(self, key: str, scope: ScopeDocuments) -> ScopeDocuments:
        """Keep ``scope``; the least recently searched scopes make room."""
        held = sum(len(s) for s in self._scopes.values())
        while self._scopes and held + len(scope) > self._max_documents:
            held -= len(self._scopes.popitem(last=False)[1])
        self._scopes[key] = scope
        return scope

    def _put(self, scope: ScopeDocuments, row: Any) -> None:
        memory_id, layer, expires_at, *fields = row
        stems, length = self._document(fields)
        scope.put(str(memory_id), str(layer), _epoch(expires_at), stems, length)

    def _document(self, fields: Sequence[str | None]) -> tuple[dict[str, float], int]:
        """A document's weighted stem frequencies and its length in words."""
        frequency: dict[str, float] = {}
        length = 0
        for weight, field in zip(FIELD_WEIGHTS, fields, strict=True):
            if not field:
                continue
            words = WORD.findall(field.lower())
            length += len(words)
            for stem in self._stems([word for word in words if word not in STOP_WORDS]):
                frequency[stem] = frequency.get(stem, 0.0) + weight
        return frequency, length


def _best(
    scope: ScopeDocuments,
    query: _Query,
    limit: int,
    layers: Sequence[str] | None,
    alive_at: float | None,
    ids: Sequence[str] | None,
) -> list[tuple[float, str]]:
    """The best ``limit`` (BM25, memory id) of one scope under the filters."""
    size = len(scope.lengths)
    scores = np.zeros(size)
    norm = length_norm(scope.lengths, query.average_length)
    for stem, weight in query.bm25_idf.items():
        slots, tf = scope.postings(stem)
        scores[slots] += weight * tf * (K1 + 1) / (tf + norm[slots])
    keep = scores > 0
    if layers:
        keep &= np.isin(scope.layers, [_LAYERS.get(layer, -2) for layer in layers])
    if alive_at is not None:
        keep &= scope.expires > alive_at
    if ids is not None:
        allowed = np.zeros(size, dtype=bool)
        allowed[[scope.slots[i] for i in ids if i in scope.slots]] = True
        keep &= allowed
    candidates = np.flatnonzero(keep)
    if len(candidates) > limit:
        candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
    return [(float(scores[slot]), scope.memory_id(int(slot))) for slot in candidates]


def _epoch(value: str | None) -> float:
    """An expiry as SQLite stores it, in epoch seconds (never: infinity)."""
    return math.inf if value is None else sqlite_datetime(value).timestamp()
