"""Memories committed whose vectors the vector store does not hold yet, and each one's vector
as soon as it is embedded.

A search never waits for the indexer (``services.indexer``). It sees every acknowledged memory
by its words (the lexical index is written in the add's transaction), and by its meaning those
already embedded, compared with the query exactly here beside the vector store's hits
(``CandidateGenerator``). When its scopes owe at most ``EMBED_NOW`` vectors not yet embedded
(a caller's own recent writes: a few adds, a stage's notes) it embeds those texts itself,
beside its query, so a write is found by its meaning from the first search after it; more than
that is a backlog, left to the indexer. A text embedded so is kept here for the searches after
it, and searches at the same moment share one embedding of it (``_Owed.asked``); the indexer
embeds it again for the vector store (only while the indexer keeps up: under a stream of
writes the scope owes more and searches embed nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agentcore.domain.models import Memory
from agentcore.services.ports import VectorHit, Vectors

EMBED_NOW = 32  # owed texts a search embeds itself: a caller's recent writes, not a backlog


@dataclass(slots=True)
class _Owed:
    text: str
    vector: Vectors | None = None
    asked: asyncio.Future[None] | None = None  # a search's embedding of it, under way


Claimed = Mapping[str, _Owed]  # what ``claim`` handed out, for ``fill``


class FreshVectors:
    """Owed memories by scope key, in commit order. One event loop uses it."""

    def __init__(self) -> None:
        self._by_scope: dict[str, dict[str, _Owed]] = {}
        self._scope_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._scope_of)

    def owe(self, memories: Iterable[Memory]) -> None:
        """Memories just committed (or changed) whose vectors are queued."""
        for memory in memories:
            self._scope_of[memory.id] = memory.scope_key
            owed = self._by_scope.setdefault(memory.scope_key, {})
            owed.pop(memory.id, None)  # a changed memory goes to the end, unembedded
            owed[memory.id] = _Owed(memory.content)

    def claim(self, memory_ids: Iterable[str]) -> Claimed:
        """These are being embedded: the owed entries to ``fill``."""
        claimed = {}
        for memory_id in memory_ids:
            owed = self._get(memory_id)
            if owed is not None and owed.vector is None:
                claimed[memory_id] = owed
        return claimed

    def unembedded(self, scope_keys: Collection[str], most: int = EMBED_NOW) -> Claimed:
        """The owed entries of these scopes not embedded yet (each with its ``text``), to
        ``fill``; none when there are more than ``most`` (a backlog)."""
        found: dict[str, _Owed] = {}
        for key in scope_keys:
            for memory_id, owed in self._by_scope.get(key, {}).items():
                if owed.vector is None:
                    found[memory_id] = owed
                    if len(found) > most:
                        return {}
        return found

    def fill(self, claimed: Claimed, vectors: Mapping[str, Sequence[float] | Vectors]) -> None:
        """The vectors of claimed entries, kept while each is still owed as it was claimed (a
        memory changed meanwhile is owed again, for its new text)."""
        for memory_id, owed in claimed.items():
            if memory_id in vectors and self._get(memory_id) is owed:
                owed.vector = np.asarray(vectors[memory_id], dtype=np.float32)

    def settled(self, memory_ids: Iterable[str]) -> None:
        """Written to the vector store, or handed to its replay: no longer owed here."""
        for memory_id in memory_ids:
            key = self._scope_of.pop(memory_id, None)
            if key is None:
                continue
            owed = self._by_scope[key]
            owed.pop(memory_id, None)
            if not owed:
                del self._by_scope[key]

    def owed(self, scope_keys: Collection[str]) -> int:
        """How many vectors of these scopes are not written yet."""
        return sum(len(self._by_scope.get(key, {})) for key in scope_keys)

    def cosines(self, query: Vectors, scope_keys: Collection[str]) -> list[VectorHit]:
        """The cosine to ``query`` of every owed memory of ``scope_keys`` already embedded
        (vectors are unit length), best first."""
        ids: list[str] = []
        rows: list[Vectors] = []
        for key in scope_keys:
            for memory_id, owed in self._by_scope.get(key, {}).items():
                if owed.vector is not None:
                    ids.append(memory_id)
                    rows.append(owed.vector)
        if not ids:
            return []
        scores = np.stack(rows) @ np.asarray(query, dtype=np.float32)
        hits = [VectorHit(memory_id, float(s)) for memory_id, s in zip(ids, scores, strict=True)]
        return sorted(hits, key=lambda hit: -hit.score)

    def _get(self, memory_id: str) -> _Owed | None:
        key = self._scope_of.get(memory_id)
        return None if key is None else self._by_scope[key].get(memory_id)
