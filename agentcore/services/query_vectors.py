"""The vectors of recent queries: an agent asks the same question again and again (each turn
of a loop, each step of a plan), and embedding it is most of a quiet search's time (5-6 ms of
e5 on two cores). A bounded map from (model, query) to its vector, least recently used out
first; the model's name is in the key, so a store moved to another embedder never meets a
vector of the old one. Vectors are kept read-only and returned as they are."""

from __future__ import annotations

from collections import OrderedDict

from agentcore.services.ports import Embedder, Vectors

QUERIES = 2048  # about 3 MB of e5's 384-dimension float32 vectors


class QueryVectors:
    def __init__(self, embedder: Embedder, size: int = QUERIES) -> None:
        self._embedder = embedder
        self._size = size
        self._vectors: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self.hits = 0
        self.misses = 0

    async def of(self, query: str) -> Vectors:
        """``query``'s vector from the embedder's query path, or as it last gave it."""
        key = (self._embedder.model_name, query)
        found = self._vectors.get(key)
        if found is not None:
            self._vectors.move_to_end(key)
            self.hits += 1
            return found
        self.misses += 1
        vector = await self._embedder.embed_query(query)
        vector.setflags(write=False)
        if self._size > 0:
            self._vectors[key] = vector
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector
