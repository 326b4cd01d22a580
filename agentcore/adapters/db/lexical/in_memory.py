"""The lexical index searched outside FTS5 (SQLite, embedded): BM25F and query-term coverage
computed over per-scope postings, where FTS5 would rank every matching document of a search and
each candidate's document would be read and stemmed again.

SQLite stays the record: ``LexicalWriter`` writes the documents and, in the same transaction,
appends the id of every memory whose document changed (written, its neighbours' context
rewritten, deleted) to ``CHANGES``. A scope is taken up the first time it is searched (or at
start-up, ``warm``); before every search the changes after the last one applied are read and
the changed documents read again, so a search sees every committed write, whoever made it
(this process, a worker, another process on the same file). Changes are numbered in commit
order; when a reader has fallen behind what the log keeps, it drops its scopes and takes them
up again.

A scope of up to ``stored_documents`` documents is held in memory (``ScopeDocuments``): read
from SQLite, within the search when small, on a thread of its own otherwise (FTS5 answers
meanwhile); such scopes are kept up to ``max_documents`` in all, the least recently searched
dropped first. A larger scope is searched from its stored index (``stored``: arrays
on disk beside the database, memory-mapped, built by a process of its own, plus the documents
changed since the build), so it opens in milliseconds after a restart and its memory is the
kernel's page cache; until its first build is done FTS5 answers for it (``search``).
It is built again once the changes since the last build pass ``_REBUILD_SHARE`` of it (at most
``_REBUILD_MOST``). Without a directory for the stored indexes (an in-memory database), a scope
over ``max_documents`` stays on FTS5.

Documents are tokenized as ``coverage`` reads FTS5's: lower-cased words, stemmed by
the index's own tokenizer (``FtsStems``); stop words are counted in a document's length and
not kept.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import String, bindparam, text
from sqlalchemy.engine import Connection

from agentcore.adapters.db.dialect import chunks
from agentcore.adapters.db.engine import driver_rows
from agentcore.adapters.db.lexical.builder import SCOPE_DOCUMENTS
from agentcore.adapters.db.lexical.coverage import FtsStems, Matches
from agentcore.adapters.db.lexical.postings import Postings
from agentcore.adapters.db.lexical.scope import (
    Hit,
    LexicalScope,
    Query,
    ScopeDocuments,
    document_stems,
    epoch,
)
from agentcore.adapters.db.lexical.stored import StoredIndexes, StoredScope
from agentcore.adapters.db.lexical.writer import CHANGES, FTS_DOCS

_LOAD_NOW = 2_000  # scopes up to this many documents load within the search (~0.2 s)
_RECHECK_SECONDS = 60.0  # a scope too large to hold is counted again after this
_REBUILD_SHARE = 0.05  # a stored scope is built again when this share of it has changed...
_REBUILD_MOST = 20_000  # ... or this many documents

log = logging.getLogger(__name__)

_SCOPE_DOCS = text(SCOPE_DOCUMENTS.replace("?", ":key"))
_SOME_DOCS = text(SCOPE_DOCUMENTS.replace("d.scope_key = ?", "d.memory_id IN :ids")).bindparams(
    bindparam("ids", expanding=True, type_=String())
)
# Read before every search (``driver_rows``: SQLAlchemy's handling cost more than the query).
_CHANGED = f"SELECT seq, memory_id, scope_key FROM {CHANGES} WHERE seq > ? ORDER BY seq"
_LAST_CHANGE = text(f"SELECT coalesce(max(seq), 0) FROM {CHANGES}")
_OLDEST_CHANGE = text(f"SELECT min(seq) FROM {CHANGES}")
_SCOPE_SIZE = text(f"SELECT count(*) FROM {FTS_DOCS} WHERE scope_key = :key")
_LARGE_SCOPES = text(
    f"SELECT scope_key, count(*) FROM {FTS_DOCS} GROUP BY scope_key HAVING count(*) > :least"
)


class MemoryLexicon:
    """The scopes taken up and the change log's position (see the module docstring).
    Safe to call from several threads: one at a time works on it."""

    def __init__(
        self,
        stems: FtsStems,
        connect: Callable[[], AbstractContextManager[Connection]],
        max_documents: int = 200_000,
        stored: StoredIndexes | None = None,
        stored_documents: int = 20_000,
    ) -> None:
        self._stems = stems
        self._connect = connect  # a read-only connection, for loading a scope aside
        self._max_documents = max_documents
        self._stored = stored
        self._stored_documents = stored_documents
        self._scopes: OrderedDict[str, LexicalScope] = OrderedDict()  # least recent first
        self._loading: set[str] = set()
        self._too_large: dict[str, float] = {}  # scope key -> when to count it again
        # Start-up (``warm``): the large scopes not taken up yet (key -> size); None until
        # counted. Its own lock: ``warm`` is asked on the event loop and must not wait.
        self._warm_started = False
        self._warming: dict[str, int] | None = None
        self._warm_lock = threading.Lock()
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
        given; None when a scope is not taken up (search FTS5 then)."""
        with self._lock:
            scopes = self._load(conn, scope_keys)
            if scopes is None:
                return None
            query = Query.over(scopes, self._stems(terms))
            hits: list[Hit] = []
            for scope in scopes:
                hits.extend(scope.best(query, limit, layers, alive_at, ids))
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
        None when a scope is not taken up."""
        with self._lock:
            scopes = self._load(conn, scope_keys)
            if scopes is None:
                return None
            query = Query.over(scopes, self._stems(terms))
            found = Matches({}, {})
            for memory_id in memory_ids:
                for scope in scopes:
                    scored = scope.score(memory_id, query)
                    if scored is None:
                        continue
                    bm25, coverage = scored
                    if coverage > 0:
                        found.coverage[memory_id] = coverage
                        found.bm25[memory_id] = bm25
                    break
            return found

    @property
    def documents(self) -> int:
        """The documents searched here (in memory or memory-mapped), of every scope. Read
        without the lock (health asks on the event loop; a scope may be loading): the list
        of scopes is copied in one step."""
        return sum(len(scope) for scope in list(self._scopes.values()))

    def held(self, scope_key: str) -> bool:
        """Whether the scope of ``scope_key`` is taken up."""
        with self._lock:
            return scope_key in self._scopes

    def stored(self, scope_key: str) -> bool:
        """Whether the scope of ``scope_key`` is searched from its stored index."""
        with self._lock:
            return isinstance(self._scopes.get(scope_key), StoredScope)

    def warm(self) -> list[str]:
        """Take up every scope over ``stored_documents``: the first call counts them and
        opens their stored indexes (with the changes since each build), or starts a build
        where there is none; it takes seconds on a large store, so call it off the event
        loop. What is still being done, one line per scope; [] once every large scope is
        taken up (or left to FTS5 after a failed build), or nothing is stored."""
        if self._stored is None or self._stored_documents <= 0:
            return []
        with self._warm_lock:
            start = not self._warm_started
            self._warm_started = True
        if start:
            self._warm()
        with self._warm_lock:
            if self._warming is None:
                return ["the lexical index's large scopes are being counted"]
            for key in [key for key in self._warming if key in self._scopes]:
                del self._warming[key]  # (a dict's membership test needs no lock)
            return [
                f"the lexical index of {key} ({size:,} documents) is being "
                + ("built" if self._stored.building(key) else "opened")
                for key, size in self._warming.items()
            ]

    def close(self) -> None:
        if self._stored is not None:
            self._stored.close()

    def _warm(self) -> None:
        stored = self._stored
        if stored is None:
            return
        try:
            with self._connect() as conn:
                least = {"least": self._stored_documents}
                large = {str(k): int(n) for k, n in conn.execute(_LARGE_SCOPES, least)}
                with self._warm_lock:
                    self._warming = dict(large)
                for key in large:
                    with self._lock:
                        self._catch_up(conn)
                        if key not in self._scopes:
                            self._start_loading(conn, key)
                    if not stored.building(key):  # taken up, or left to FTS5
                        self._warmed(key)
        except Exception:
            log.exception("opening the stored lexical indexes failed")
            with self._warm_lock:
                self._warming = {}

    def _warmed(self, key: str) -> None:
        with self._warm_lock:
            if self._warming is not None:
                self._warming.pop(key, None)

    def _load(self, conn: Connection, scope_keys: Sequence[str]) -> list[LexicalScope] | None:
        """The scopes of ``scope_keys``, brought up to date with the change log; None while
        one of them is not taken up."""
        self._catch_up(conn)
        scopes = []
        for key in dict.fromkeys(scope_keys):
            scope = self._scopes.get(key) or self._start_loading(conn, key)
            if scope is None:
                return None
            self._scopes.move_to_end(key)
            self._build_if_due(key, scope)
            scopes.append(scope)
        return scopes

    def _start_loading(self, conn: Connection, key: str) -> LexicalScope | None:
        """Open a large scope's stored index, or start its build; load a small scope now;
        start loading a larger one on a thread of its own (searches go to FTS5 meanwhile);
        remember for a while that a scope is too large to hold."""
        now = time.monotonic()
        if key in self._loading or self._too_large.get(key, now) > now:
            return None
        if self._stored is not None and self._stored.building(key):
            return None
        size = int(conn.execute(_SCOPE_SIZE, {"key": key}).scalar_one())
        if self._stored is not None and 0 < self._stored_documents < size:
            base = self._stored.latest(key)
            if base is not None and self._take_up(conn, key, base):
                return self._scopes[key]
            self._stored.build(key, self._built)
            if not self._stored.building(key):  # a build failed lately: FTS5 for a while
                self._too_large[key] = now + _RECHECK_SECONDS
            return None
        if size > self._max_documents:
            self._too_large[key] = now + _RECHECK_SECONDS
            return None
        if size <= _LOAD_NOW:
            return self._hold(key, self._read_scope(conn, key))
        self._loading.add(key)
        threading.Thread(target=self._load_aside, args=(key,), daemon=True).start()
        return None

    def _take_up(self, conn: Connection, key: str, base: Postings) -> bool:
        """Serve ``key`` from ``base`` and the changes since its build; False when the log no
        longer holds them all (build again)."""
        oldest = conn.execute(_OLDEST_CHANGE).scalar_one()
        if oldest is not None and oldest > base.seq + 1:
            return False
        scope = StoredScope(base)
        self._hold(key, scope)
        changed = driver_rows(conn, _CHANGED, [base.seq])
        since = {str(r[1]): key for r in changed if r[2] == key and r[0] <= self._applied}
        self._refresh(conn, since)
        return True

    def _built(self, key: str, ok: bool) -> None:
        """A build of ``key`` ended: serve from it (``StoredIndexes.build``'s callback). A
        failed one leaves the scope to FTS5 (or as it was held) until the next try."""
        try:
            if ok and self._stored is not None:
                with self._connect() as conn, self._lock:
                    self._catch_up(conn)
                    base = self._stored.latest(key)
                    if base is not None and self._take_up(conn, key, base):
                        self._stored.forget_older(base)
        except Exception:
            log.exception("taking up a stored lexical index failed")
        finally:
            self._warmed(key)

    def _build_if_due(self, key: str, scope: LexicalScope) -> None:
        """Start a build of a held scope grown past ``stored_documents``, or of a stored one
        changed enough since its build; it is served as it is meanwhile."""
        if self._stored is None or self._stored_documents <= 0:
            return
        if isinstance(scope, StoredScope):
            base = scope.base.documents
            due = scope.changed > min(_REBUILD_SHARE * base, _REBUILD_MOST)
        else:
            due = len(scope) > self._stored_documents
        if due:
            self._stored.build(key, self._built)

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
        read: dict[str, tuple[list[str], int]] = {}
        for part in chunks(list(changed)):
            found = set()
            for row in conn.execute(_SOME_DOCS, {"ids": part}):
                self._put(self._scopes[changed[str(row[0])]], row, read)
                found.add(str(row[0]))
            for memory_id in part:
                if memory_id not in found:  # deleted
                    self._scopes[changed[memory_id]].drop(memory_id)

    def _read_scope(self, conn: Connection, key: str) -> ScopeDocuments:
        scope = ScopeDocuments()
        read: dict[str, tuple[list[str], int]] = {}
        for row in conn.execute(_SCOPE_DOCS, {"key": key}):
            self._put(scope, row, read)
        return scope

    def _hold(self, key: str, scope: LexicalScope) -> LexicalScope:
        """Keep ``scope``; the least recently searched scopes make room."""
        self._scopes.pop(key, None)
        held = sum(_in_memory(s) for s in self._scopes.values())
        while self._scopes and held + _in_memory(scope) > self._max_documents:
            held -= _in_memory(self._scopes.popitem(last=False)[1])
        self._scopes[key] = scope
        return scope

    def _put(self, scope: LexicalScope, row: Any, read: dict[str, tuple[list[str], int]]) -> None:
        memory_id, layer, expires_at, *fields = row
        stems, length = document_stems(self._stems, fields, read)
        scope.put(str(memory_id), str(layer), epoch(expires_at), stems, length)


def _in_memory(scope: LexicalScope) -> int:
    """The documents of ``scope`` held in memory (a stored scope's: those changed since)."""
    return len(scope.delta) if isinstance(scope, StoredScope) else len(scope)
