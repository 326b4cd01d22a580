"""A large scope's lexical documents searched from disk: the stored arrays of its last build
(``postings``), memory-mapped, with the documents changed since held in memory.

``StoredScope`` answers for a scope as ``ScopeDocuments`` does. A document written, rewritten
or deleted after the build is masked in the stored arrays and, unless deleted, held in memory
(``delta``): a search sees every change at once, and the scope's statistics (documents,
lengths, each stem's documents) stay exact. Its best stored documents are found by MaxScore
(``maxscore``: exact BM25 without walking the frequent stems' long postings), the
changed ones as ``ScopeDocuments`` finds them.

``StoredIndexes`` keeps the builds of a database's scopes in one directory beside the SQLite
file (``<name>-<seq>``, seq: the last change of the log the build includes) and starts a build
(``builder``, a process of its own) when asked.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agentcore.adapters.db.lexical.maxscore import MaxScore, Slots
from agentcore.adapters.db.lexical.postings import META, Postings
from agentcore.adapters.db.lexical.scope import Hit, Query, ScopeDocuments, layer_codes
from agentcore.adapters.db.lexical.writer import scope_token

log = logging.getLogger(__name__)

_BUILD = re.compile(r"(k\d+)-(\d+)")
_RETRY_SECONDS = 600.0  # a failed build is tried again after this


class StoredScope:
    """A scope's stored documents plus the changes since their build (module docstring)."""

    def __init__(self, base: Postings) -> None:
        self.base = base
        self._search = MaxScore(base)
        self.delta = ScopeDocuments()
        self._masked = np.zeros(base.documents, dtype=bool)
        self._gone_holding: dict[int, int] = {}  # stem index -> masked documents holding it
        self._gone = 0
        self._gone_length = 0.0
        self._last_query: Query | None = None  # ``_terms_of``
        self._last_terms: dict[str, int] = {}

    def __len__(self) -> int:
        return self.base.documents - self._gone + len(self.delta)

    @property
    def total_length(self) -> float:
        return self.base.total_length - self._gone_length + self.delta.total_length

    @property
    def changed(self) -> int:
        """Stored documents masked plus documents held in memory: what the changes since
        the build cost (a rewritten document counts twice)."""
        return self._gone + len(self.delta)

    def holding(self, stem: str) -> int:
        term = self.base.term(stem)
        stored = 0 if term < 0 else self.base.holding(term) - self._gone_holding.get(term, 0)
        return stored + self.delta.holding(stem)

    def put(
        self, memory_id: str, layer: str, expires_at: float, stems: dict[str, float], length: int
    ) -> None:
        self._mask(memory_id)
        self.delta.put(memory_id, layer, expires_at, stems, length)

    def drop(self, memory_id: str) -> None:
        self._mask(memory_id)
        self.delta.drop(memory_id)

    def score(self, memory_id: str, query: Query) -> tuple[float, float] | None:
        found = self.delta.score(memory_id, query)
        if found is not None:
            return found
        slot = self.base.slot(memory_id)
        if slot < 0 or self._masked[slot]:
            return None
        terms, tfs = self.base.document(slot)
        held = dict(zip(terms.tolist(), tfs.tolist(), strict=True))
        frequencies = {}
        for stem, term in self._terms_of(query).items():
            tf = held.get(term)
            if tf is not None:
                frequencies[stem] = tf
        return query.score(frequencies, float(self.base.lengths[slot]))

    def _terms_of(self, query: Query) -> dict[str, int]:
        """The stored stems of ``query`` (stem -> index), found once per query: a lookup
        scores some 60 documents with the same query."""
        if self._last_query is not query:
            found = ((stem, self.base.term(stem)) for stem in query.coverage_idf)
            self._last_terms = {stem: term for stem, term in found if term >= 0}
            self._last_query = query
        return self._last_terms

    def best(
        self,
        query: Query,
        limit: int,
        layers: Sequence[str] | None,
        alive_at: float | None,
        ids: Sequence[str] | None,
    ) -> list[Hit]:
        hits = self.delta.best(query, limit, layers, alive_at, ids)
        base = self.base
        codes = None if not layers else np.array(layer_codes(layers), dtype=np.int8)
        allowed = None
        if ids is not None:
            allowed = np.unique([s for s in map(base.slot, ids) if s >= 0]).astype(np.int32)

        def keep(slots: Slots) -> npt.NDArray[np.bool_]:
            kept = ~self._masked[slots]
            if codes is not None:
                kept &= np.isin(base.layers[slots], codes)
            if alive_at is not None:
                kept &= base.expires[slots] > alive_at
            if allowed is not None:
                kept &= np.isin(slots, allowed)
            return kept

        for score, slot in self._search.best(query, limit, keep):
            hits.append((score, base.memory_id(slot)))
        return sorted(hits, key=lambda hit: (-hit[0], hit[1]))[:limit]

    def _mask(self, memory_id: str) -> None:
        slot = self.base.slot(memory_id)
        if slot < 0 or self._masked[slot]:
            return
        self._masked[slot] = True
        self._gone += 1
        self._gone_length += float(self.base.lengths[slot])
        for term in self.base.document(slot)[0].tolist():
            self._gone_holding[term] = self._gone_holding.get(term, 0) + 1


class StoredIndexes:
    """The stored lexical indexes of one SQLite database, in ``root`` (module docstring)."""

    def __init__(self, root: Path, database: Path) -> None:
        self._root = root
        self._database = database
        self._builds: dict[str, subprocess.Popen[bytes]] = {}  # running (one at a time)
        self._queued: dict[str, Callable[[str, bool], None]] = {}  # waiting, in order
        self._closed = False
        self._failed: dict[str, float] = {}  # scope key -> when a build may be tried again
        self._lock = threading.Lock()

    def latest(self, scope_key: str) -> Postings | None:
        """The newest complete build of ``scope_key``, mapped; None if there is none."""
        token = scope_token(scope_key)
        found = []
        if self._root.is_dir():
            for entry in self._root.iterdir():
                match = _BUILD.fullmatch(entry.name)
                if match and match[1] == token and (entry / META).is_file():
                    found.append((int(match[2]), entry))
        for _, directory in sorted(found, reverse=True):
            try:
                postings = Postings.open(directory)
            except (OSError, ValueError):
                log.exception("a stored lexical index could not be opened: %s", directory)
                continue
            if postings.scope_key == scope_key:
                return postings
        return None

    def building(self, scope_key: str) -> bool:
        """Whether a build of ``scope_key`` runs or waits for its turn."""
        with self._lock:
            return scope_key in self._builds or scope_key in self._queued

    def build(self, scope_key: str, done: Callable[[str, bool], None]) -> None:
        """Build ``scope_key`` in a process of its own, unless one runs or waits; ``done``
        (key, whether it succeeded) is called on a thread once it ends. One build runs at a
        time (each takes a core and, at a million documents, ~0.8 GiB); the others wait in
        order."""
        with self._lock:
            if scope_key in self._builds or scope_key in self._queued or self._closed:
                return
            if self._failed.get(scope_key, 0.0) > time.monotonic():
                return
            self._queued[scope_key] = done
            self._start_next()

    def _start_next(self) -> None:
        """Start the first waiting build if none runs (the caller holds the lock)."""
        if self._builds or not self._queued or self._closed:
            return
        key = next(iter(self._queued))
        done = self._queued.pop(key)
        self._root.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentcore.adapters.db.lexical.builder",
                str(self._database),
                key,
                str(self._root / scope_token(key)),
                f"--parent={os.getpid()}",
            ],
            stdin=subprocess.DEVNULL,
        )
        self._builds[key] = process
        threading.Thread(target=self._wait, args=(key, process, done), daemon=True).start()

    def forget_older(self, keep: Postings) -> None:
        """Remove the builds of ``keep``'s scope older than ``keep`` (a mapped file stays
        readable until unmapped), and what a killed builder of it left. Called once a build
        is taken up: no builder of the scope runs."""
        token = scope_token(keep.scope_key)
        for entry in self._root.iterdir():
            match = _BUILD.fullmatch(entry.name)
            older = match is not None and match[1] == token and int(match[2]) < keep.seq
            if older or (entry.name.startswith(f"{token}-") and ".partial-" in entry.name):
                shutil.rmtree(entry, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._queued.clear()
            builds = list(self._builds.values())
        for process in builds:
            process.terminate()
            process.wait()

    def _wait(
        self, key: str, process: subprocess.Popen[bytes], done: Callable[[str, bool], None]
    ) -> None:
        code = process.wait()
        with self._lock:
            self._builds.pop(key, None)
            if code != 0:
                self._failed[key] = time.monotonic() + _RETRY_SECONDS
            self._start_next()
        if code != 0:
            log.warning("the lexical index build of a scope failed (exit %s)", code)
        done(key, code == 0)
