"""Memories committed whose vectors the vector store does not hold yet, and each one's vector
as soon as the indexer has embedded it.

A search never waits for the indexer's backlog (``services.indexer``). It sees every
acknowledged memory by its words at once (the lexical index is written in the add's
transaction), and by its meaning through this registry: the owed memories of the searched
scopes already embedded are compared with the query exactly, beside the vector store's hits
(``CandidateGenerator``). For those the indexer is embedding at that moment it waits at most
``WAIT_SECONDS`` (one embedding call, never the queue behind it): a write is found by its
meaning from the first search after it unless many newer writes of its scope queue before it,
and by its words always.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentcore.domain.models import Memory
from agentcore.services.ports import VectorHit, Vectors

WAIT_SECONDS = 1.0  # the most a search waits for an embedding under way (one indexer batch)


@dataclass(slots=True)
class _Owed:
    text: str
    vector: Vectors | None = None
    embedding: asyncio.Future[Any] | None = None  # under way in the indexer


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

    def claim(self, memory_ids: Iterable[str], done: asyncio.Future[Any]) -> Claimed:
        """These are being embedded (``done`` resolves when they are, or failed): the owed
        entries to ``fill``."""
        claimed = {}
        for memory_id in memory_ids:
            owed = self._get(memory_id)
            if owed is not None and owed.vector is None:
                owed.embedding = done
                claimed[memory_id] = owed
        return claimed

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

    async def settle(self, scope_keys: Collection[str]) -> None:
        """Wait up to ``WAIT_SECONDS`` for the embeddings under way of ``scope_keys``' owed
        memories (not for those still queued)."""
        under_way = {
            owed.embedding
            for key in scope_keys
            for owed in self._by_scope.get(key, {}).values()
            if owed.vector is None and owed.embedding is not None and not owed.embedding.done()
        }
        if under_way:
            await asyncio.wait(under_way, timeout=WAIT_SECONDS)

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
