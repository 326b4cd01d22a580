"""Memories committed whose vectors the vector store does not hold yet, and each one's vector
as soon as it is embedded.

A search never waits for the indexer (``services.indexer``). It sees every acknowledged memory
by its words (the lexical index is written in the add's transaction), and by its meaning those
already embedded, compared with the query exactly here beside the vector store's hits
(``CandidateGenerator``). When its scopes owe at most ``EMBED_NOW`` vectors not yet embedded
(a caller's own recent writes: a few adds, a stage's notes), a write is found by its meaning
from the first search after it: the search embeds the texts nobody is embedding yet itself,
beside its query, and waits at most ``EMBEDDING_WAIT`` for those whose embedding is under way
(the indexer's batch, another search's). More owed than that is a backlog, left to the
indexer, and so is everything owed while calls wait for a place to run (``admission``: a
saturated service spends its cores on the calls, not on a search's owed texts). Each text is
embedded once: a vector a search computed is kept here for the searches after it and handed
to the indexer, which embeds only what nobody has (``known``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agentcore.domain.errors import AgentCoreError
from agentcore.domain.models import Memory
from agentcore.services.failures import log_failure
from agentcore.services.ports import Embedder, VectorHit, Vectors

log = logging.getLogger(__name__)

EMBED_NOW = 64  # owed texts a search embeds itself: a caller's recent writes, not a backlog
EMBEDDING_WAIT = 0.25  # seconds a search waits, at most, for an embedding under way


@dataclass(slots=True)
class _Owed:
    text: str
    vector: Vectors | None = None
    asked: asyncio.Future[None] | None = None  # its embedding under way, done at ``fill``


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
        """The indexer embeds these: those nobody has embedded or is embedding, to ``fill``."""
        claimed = {}
        for memory_id in memory_ids:
            owed = self._get(memory_id)
            if owed is not None and owed.vector is None and owed.asked is None:
                claimed[memory_id] = owed
        return self.ask(claimed)

    @staticmethod
    def ask(entries: Claimed) -> Claimed:
        """Mark entries as being embedded (searches wait for them) until ``fill``."""
        if entries:
            asked = asyncio.get_running_loop().create_future()
            for owed in entries.values():
                owed.asked = asked
        return entries

    def known(self, memory_ids: Iterable[str]) -> dict[str, tuple[str, Vectors]]:
        """The text and vector of each of these owed memories already embedded."""
        found = {}
        for memory_id in memory_ids:
            owed = self._get(memory_id)
            if owed is not None and owed.vector is not None:
                found[memory_id] = (owed.text, owed.vector)
        return found

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
        """The vectors of claimed entries (none when their embedding failed), kept while each
        is still owed as it was claimed (a memory changed meanwhile is owed again, for its new
        text); whoever waits for them is answered."""
        for memory_id, owed in claimed.items():
            if memory_id in vectors and self._get(memory_id) is owed:
                owed.vector = np.asarray(vectors[memory_id], dtype=np.float32)
            asked, owed.asked = owed.asked, None
            if asked is not None and not asked.done():
                asked.set_result(None)

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


async def embed_owed(
    fresh: FreshVectors, embedder: Embedder, owed: Claimed, wait: float = EMBEDDING_WAIT
) -> None:
    """Vectors for owed entries (``FreshVectors.unembedded``): the texts nobody is embedding
    are embedded here (``Embedder.embed_now``), those under way are waited for, at most
    ``wait`` seconds; a failure is logged and what is still missing stays unembedded."""
    under_way = {o.asked for o in owed.values() if o.asked is not None}
    mine = fresh.ask({i: o for i, o in owed.items() if o.asked is None})
    vectors: dict[str, Vectors] = {}
    try:
        if mine:
            rows = await embedder.embed_now([o.text for o in mine.values()])
            vectors = dict(zip(mine, rows, strict=True))
    except AgentCoreError as exc:
        log_failure(log, f"embedding {len(mine)} owed texts failed", exc)
    finally:
        fresh.fill(mine, vectors)
    if under_way:
        await asyncio.wait([asyncio.shield(f) for f in under_way], timeout=wait)
