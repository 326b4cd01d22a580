"""Memories committed whose vectors the vector store does not hold yet, and each one's vector
as soon as the indexer has embedded it.

A search never waits for the indexer (``services.indexer``): it sees every acknowledged memory
by its words at once (the lexical index is written in the add's transaction), and by its
meaning the moment its vector exists: the owed memories of the searched scopes whose vectors are
computed are compared with the query exactly here, before the vector store has them
(``CandidateGenerator``), and then rank by the same fusion and score as any other.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

import numpy as np

from agentcore.domain.models import Memory
from agentcore.services.ports import VectorHit, Vectors


class FreshVectors:
    """Owed memories by scope key (id → its vector, None until embedded). One event loop
    uses it; nothing here awaits."""

    def __init__(self) -> None:
        self._by_scope: dict[str, dict[str, Vectors | None]] = {}
        self._scope_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._scope_of)

    def owe(self, memories: Iterable[Memory]) -> None:
        """Memories just committed whose vectors are queued."""
        for memory in memories:
            self._scope_of[memory.id] = memory.scope_key
            self._by_scope.setdefault(memory.scope_key, {})[memory.id] = None

    def embedded(self, vectors: Iterable[tuple[str, Sequence[float] | Vectors]]) -> None:
        """Their vectors, computed and not yet written."""
        for memory_id, vector in vectors:
            key = self._scope_of.get(memory_id)
            if key is not None:
                self._by_scope[key][memory_id] = np.asarray(vector, dtype=np.float32)

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

    def cosines(self, query: Vectors, scope_keys: Collection[str]) -> list[VectorHit]:
        """The cosine to ``query`` of every owed memory of ``scope_keys`` already embedded
        (vectors are unit length), best first."""
        ids: list[str] = []
        rows: list[Vectors] = []
        for key in scope_keys:
            for memory_id, vector in self._by_scope.get(key, {}).items():
                if vector is not None:
                    ids.append(memory_id)
                    rows.append(vector)
        if not ids:
            return []
        scores = np.stack(rows) @ np.asarray(query, dtype=np.float32)
        hits = [VectorHit(memory_id, float(s)) for memory_id, s in zip(ids, scores, strict=True)]
        return sorted(hits, key=lambda hit: -hit.score)
