"""Memories committed whose vectors the vector store does not hold yet, and each one's vector
as soon as it is embedded.

A search never waits for the indexer's backlog (``services.indexer``). It sees every
acknowledged memory by its words at once (the lexical index is written in the add's
transaction), and by its meaning through this registry: the owed memories of the searched
scopes are compared with the query exactly, beside the vector store's hits
(``CandidateGenerator``). Of those not embedded yet, the newest ``CLAIM`` nobody is embedding
are embedded by the search itself (their vectors then serve the indexer too), and those being
embedded (by the indexer or another search) are awaited at most ``WAIT_SECONDS``: one
embedding call, not the backlog. A write is thus found by its meaning from the first search
after it, unless thousands of newer ones in its scope are owed too; by its words always.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentcore.domain.errors import AgentCoreError
from agentcore.domain.models import Memory
from agentcore.services.ports import Embedder, VectorHit, Vectors

CLAIM = 16  # owed texts a search embeds itself, at most (the newest of its scopes)
WAIT_SECONDS = 1.0  # the most a search waits for embeddings already under way (one call)


@dataclass(slots=True)
class _Owed:
    text: str
    vector: Vectors | None = None
    embedding: asyncio.Future[Any] | None = None  # under way, by the indexer or a search


Claimed = Mapping[str, _Owed]  # what ``claim`` handed out, for ``fill``


class FreshVectors:
    """Owed memories by scope key, in commit order. One event loop uses it."""

    def __init__(self) -> None:
        self._by_scope: dict[str, dict[str, _Owed]] = {}
        self._scope_of: dict[str, str] = {}
        self._tasks: set[asyncio.Future[None]] = set()

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

    def known(self, memory_ids: Iterable[str]) -> dict[str, tuple[str, Vectors]]:
        """The vectors already computed for some of ``memory_ids``, with their texts."""
        found = {}
        for memory_id in memory_ids:
            owed = self._get(memory_id)
            if owed is not None and owed.vector is not None:
                found[memory_id] = (owed.text, owed.vector)
        return found

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

    async def complete(self, scope_keys: Collection[str], embedder: Embedder) -> None:
        """Make the owed memories of ``scope_keys`` comparable: embed the newest ``CLAIM``
        that nobody is embedding, and wait up to ``WAIT_SECONDS`` for those under way."""
        unclaimed: list[tuple[str, _Owed]] = []
        under_way: set[asyncio.Future[None]] = set()
        for key in scope_keys:
            for memory_id, owed in self._by_scope.get(key, {}).items():
                if owed.vector is not None:
                    continue
                if owed.embedding is not None and not owed.embedding.done():
                    under_way.add(owed.embedding)
                else:
                    unclaimed.append((memory_id, owed))
        mine = unclaimed[-CLAIM:]
        if mine:
            task = asyncio.ensure_future(self._embed(mine, embedder))
            self._tasks.add(task)  # it may outlive this search's wait
            task.add_done_callback(self._tasks.discard)
            under_way.add(task)
        if under_way:
            await asyncio.wait(under_way, timeout=WAIT_SECONDS)

    async def _embed(self, owed: list[tuple[str, _Owed]], embedder: Embedder) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        claimed = self.claim([memory_id for memory_id, _ in owed], done)
        try:
            vectors = await embedder.embed([item.text for item in claimed.values()])
            self.fill(claimed, dict(zip(claimed, vectors, strict=True)))
        except AgentCoreError:
            pass  # the indexer embeds them, as it would have anyway
        finally:
            done.set_result(None)

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
