"""mem0 as the memory provider behind our ``VectorStore`` port (``VECTOR_PROVIDER=mem0``).

Points live in a Qdrant collection built and used through mem0's vector-store layer
(``mem0.vector_stores.qdrant.Qdrant``: collection layout, inserts, filtered search with mem0's
filter syntax). That layer has no count, batch delete, score threshold or collection metadata,
so those go to the Qdrant client it wraps. mem0 is synchronous: every call runs on one thread
owned by the store, so the event loop never blocks and calls keep their order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np
import numpy.typing as npt
from qdrant_client import models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from agentcore.adapters.mem0.client import Mem0Client, is_local_qdrant
from agentcore.adapters.vectors.payload import (
    BOOL_FIELDS,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    dimension_mismatch,
    point_payload,
    vector_list,
)
from agentcore.adapters.vectors.payload_filter import payload_filter
from agentcore.adapters.vectors.qdrant_server import (
    DEFAULT_COLLECTION,
    qdrant_filter,
    retrieved_vectors,
)
from agentcore.domain.errors import ConfigurationError, ProviderError
from agentcore.services.ports import VectorFilter, VectorHit, VectorPoint

logger = logging.getLogger(__name__)

T = TypeVar("T")


_INDEXES: dict[str, models.PayloadSchemaType] = {
    **dict.fromkeys(KEYWORD_FIELDS, models.PayloadSchemaType.KEYWORD),
    **dict.fromkeys(FLOAT_FIELDS, models.PayloadSchemaType.FLOAT),
    **dict.fromkeys(BOOL_FIELDS, models.PayloadSchemaType.BOOL),
}


def mem0_filters(flt: VectorFilter) -> dict[str, Any] | None:
    """``VectorFilter`` in mem0's filter syntax (keys joined by AND; of ``where``, what the
    payload can say: ``payload_filter``); None when that needs what mem0's syntax cannot say
    (a field is empty or not), for the search to ask mem0's Qdrant client itself.

    Values always use an operator (``eq``/``in``/``gt``): a bare value of ``"*"`` means "any"
    to mem0 and a bare list means "in", so a stored ``"*"`` would otherwise match everything.
    """
    filters: dict[str, Any] = {"scope_key": {"in": list(flt.scope_keys)}}
    if flt.layers:
        filters["layer"] = {"in": list(flt.layers)}
    if flt.where is not None:
        engine = Mem0Conditions()
        where = payload_filter(flt.where, engine)
        if engine.unsaid:
            return None
        if where is not None:
            filters["AND"] = [where]
    if flt.alive_at is not None:
        filters["expires_at"] = {"gt": float(flt.alive_at)}
    return filters


class Mem0Conditions:
    """Payload conditions in mem0's filter syntax (``payload_filter.PayloadConditions``);
    ``unsaid`` once asked for one it cannot say."""

    def __init__(self) -> None:
        self.unsaid = False

    def keyword(self, key: str, values: Sequence[str]) -> dict[str, Any]:
        if len(values) == 1:
            return {key: {"eq": values[0]}}
        return {key: {"in": list(values)}}

    def flag(self, key: str, value: bool) -> dict[str, Any]:
        return {key: {"eq": value}}

    def range(
        self,
        key: str,
        *,
        gt: float | None = None,
        gte: float | None = None,
        lt: float | None = None,
        lte: float | None = None,
    ) -> dict[str, Any]:
        bounds = {"gt": gt, "gte": gte, "lt": lt, "lte": lte}
        return {key: {op: bound for op, bound in bounds.items() if bound is not None}}

    def empty(self, key: str) -> dict[str, Any] | None:
        self.unsaid = True  # mem0's "*" matches everything; it has no "is empty"
        return None

    def all(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {"AND": list(parts)}

    def any(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {"OR": list(parts)}

    def none(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {"NOT": list(parts)}


@contextmanager
def _provider_errors(op: str) -> Iterator[None]:
    """Qdrant and network failures as a retryable ``ProviderError`` with a safe message."""
    try:
        yield
    except UnexpectedResponse as exc:
        logger.error("mem0 vector store %s failed: HTTP %s", op, exc.status_code)
        raise ProviderError(
            f"vector store {op} failed (HTTP {exc.status_code})", operation=op
        ) from exc
    except (ResponseHandlingException, httpx.HTTPError) as exc:
        logger.error("mem0 vector store %s failed: %s", op, type(exc).__name__)
        raise ProviderError(
            f"vector store {op} failed: Qdrant unreachable or timed out", operation=op
        ) from exc


class Mem0VectorStore:
    """``VectorStore`` over mem0's Qdrant layer, one collection (cosine, unnamed vector).

    Nothing is opened until ``ensure_collection``. ``owns_client``: ``close`` closes the
    ``Mem0Client`` too (as ``open`` arranges).
    """

    def __init__(
        self, client: Mem0Client, collection: str = DEFAULT_COLLECTION, *, owns_client: bool = False
    ) -> None:
        self._client = client
        self._collection = collection
        self._owns_client = owns_client
        self._layer: Any = None
        self._dimension = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem0-vectors")
        self._closed = False

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        url: str | None = None,
        api_key: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        timeout: int = 10,
    ) -> Mem0VectorStore:
        """A store with its own ``Mem0Client``: a Qdrant server at ``url``, else qdrant-client's
        local mode under ``data_dir/mem0/qdrant``. Blocking (imports mem0, about a second)."""
        client = Mem0Client(
            data_dir, qdrant_url=url, qdrant_api_key=api_key, qdrant_timeout=timeout
        )
        return cls(client, collection, owns_client=True)

    @property
    def name(self) -> str:
        return "mem0"

    async def ensure_collection(self, dimension: int, embedder_name: str) -> None:
        with _provider_errors("ensure_collection"):
            self._layer = await self._run(self._open, dimension, embedder_name)
        self._dimension = dimension

    async def reset_collection(self, dimension: int, embedder_name: str) -> None:
        with _provider_errors("reset_collection"):
            await self._run(self._drop)
        await self.ensure_collection(dimension, embedder_name)

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        dimension = self._require_dimension()
        vectors = [vector_list(p.vector, dimension) for p in points]
        payloads = [point_payload(p) for p in points]
        ids = [p.id for p in points]
        with _provider_errors("upsert"):
            await self._run(
                partial(self._layer.insert, vectors=vectors, payloads=payloads, ids=ids)
            )

    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        self._require_dimension()
        selector = models.PointIdsList(points=list(ids))
        with _provider_errors("delete"):
            await self._run(
                partial(self._layer.client.delete, self._collection, points_selector=selector)
            )

    async def search(
        self,
        vector: npt.NDArray[np.float32],
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        if limit <= 0 or not flt.scope_keys:
            return []
        query = vector_list(vector, self._require_dimension())
        filters = None if flt.ids is not None else mem0_filters(flt)
        if filters is None:  # mem0's filters cannot say it (point ids, emptiness): its client
            search = partial(self._search_points, query, flt, limit)
        else:  # mem0's search takes ``top_k`` (it has no ``limit``) and ``filters``.
            search = partial(
                self._layer.search, query="", vectors=query, top_k=limit, filters=filters
            )
        with _provider_errors("search"):
            points = await self._run(search)
        return [
            VectorHit(id=str(point.id), score=float(point.score))
            for point in points
            if score_threshold is None or point.score >= score_threshold
        ]

    def _search_points(self, query: list[float], flt: VectorFilter, limit: int) -> list[Any]:
        found = self._layer.client.query_points(
            self._collection, query=query, query_filter=qdrant_filter(flt), limit=limit
        )
        return list(found.points)

    async def count(self, flt: VectorFilter) -> int:
        if not flt.scope_keys:
            return 0
        self._require_dimension()
        count = partial(
            self._layer.client.count, self._collection, count_filter=qdrant_filter(flt), exact=True
        )
        with _provider_errors("count"):
            result = await self._run(count)
        return int(result.count)

    async def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        if not ids:
            return {}
        self._require_dimension()
        retrieve = partial(
            self._layer.client.retrieve, self._collection, list(ids), with_vectors=True
        )
        with _provider_errors("retrieve"):
            points = await self._run(retrieve)
        return retrieved_vectors(points)

    async def flush(self) -> None:
        """A no-op: a server acknowledges upserts once in its WAL, and qdrant-client's local
        mode commits every write to its SQLite file."""

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # After every queued call, on the same thread, without blocking the loop.
        close = self._client.close if self._owns_client else _nothing
        await asyncio.wrap_future(self._executor.submit(close))
        self._executor.shutdown(wait=True)

    async def _run(self, call: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise RuntimeError("the vector store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, call, *args)

    def _require_dimension(self) -> int:
        if not self._dimension:
            raise ConfigurationError("the vector store is not open: call ensure_collection first")
        return self._dimension

    def _drop(self) -> None:
        qdrant = self._client.qdrant()
        if qdrant.collection_exists(self._collection):
            qdrant.delete_collection(self._collection)

    def _open(self, dimension: int, embedder_name: str) -> Any:
        """mem0's layer over the collection, checked against ``dimension`` (worker thread)."""
        layer = self._client.vector_layer(self._collection, dimension)
        qdrant = layer.client
        info = qdrant.get_collection(self._collection)
        vectors = info.config.params.vectors
        if (
            not isinstance(vectors, models.VectorParams)
            or vectors.distance != models.Distance.COSINE
        ):
            raise ConfigurationError(
                f"Qdrant collection {self._collection!r} does not hold one unnamed cosine "
                "vector; configure another collection name"
            )
        metadata = info.config.metadata or {}
        stored = str(metadata["embedder"]) if metadata.get("embedder") else None
        if vectors.size != dimension:
            raise dimension_mismatch(
                f"Qdrant collection {self._collection!r} (mem0)",
                vectors.size,
                stored,
                dimension,
                embedder_name,
            )
        if stored is None:
            qdrant.update_collection(
                self._collection, metadata={"dimension": dimension, "embedder": embedder_name}
            )
        elif stored != embedder_name:
            logger.warning(
                "collection %s was built with embedder %s, now opened with %s",
                self._collection,
                stored,
                embedder_name,
            )
        if not is_local_qdrant(qdrant):  # local mode ignores payload indexes
            for field, schema in _INDEXES.items():
                if field not in info.payload_schema:
                    qdrant.create_payload_index(
                        self._collection, field, field_schema=schema, wait=True
                    )
        return layer


def _nothing() -> None:
    pass
