"""Qdrant server (or cluster) through ``qdrant_client.AsyncQdrantClient``.

Tests run it over the client's local mode (``location=":memory:"``), which filters in pure
Python and is only a test double; production points it at a real server.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import grpc  # type: ignore[import-untyped]  # grpcio ships no type stubs
import httpx
import numpy as np
import numpy.typing as npt
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from qdrant_client.local.async_qdrant_local import AsyncQdrantLocal

from agentcore.adapters.outages import VECTOR_STORE
from agentcore.adapters.vectors.payload import (
    BOOL_FIELDS,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    dimension_mismatch,
    point_payload,
    vector_list,
)
from agentcore.adapters.vectors.payload_filter import payload_filter
from agentcore.domain.errors import ConfigurationError, ProviderError
from agentcore.services.ports import VectorFilter, VectorHit, VectorPoint

logger = logging.getLogger(__name__)

DEFAULT_COLLECTION = "agentcore_memories"

_INDEXES: dict[str, models.PayloadSchemaType] = {
    **dict.fromkeys(KEYWORD_FIELDS, models.PayloadSchemaType.KEYWORD),
    **dict.fromkeys(FLOAT_FIELDS, models.PayloadSchemaType.FLOAT),
    **dict.fromkeys(BOOL_FIELDS, models.PayloadSchemaType.BOOL),
}


def qdrant_filter(flt: VectorFilter) -> models.Filter:
    """``VectorFilter`` as a qdrant-client filter (all conditions must hold; of ``where``,
    what the payload can say: ``payload_filter``)."""
    must: list[models.Condition] = [
        models.FieldCondition(key="scope_key", match=models.MatchAny(any=list(flt.scope_keys)))
    ]
    if flt.layers:
        must.append(models.FieldCondition(key="layer", match=models.MatchAny(any=list(flt.layers))))
    if flt.where is not None:
        where = payload_filter(flt.where, QDRANT_CONDITIONS)
        if where is not None:
            must.append(where)
    if flt.alive_at is not None:
        must.append(models.FieldCondition(key="expires_at", range=models.Range(gt=flt.alive_at)))
    if flt.ids is not None:
        must.append(models.HasIdCondition(has_id=list(flt.ids)))
    return models.Filter(must=must)


class QdrantConditions:
    """Payload conditions in qdrant-client's models (``payload_filter.PayloadConditions``)."""

    def keyword(self, key: str, values: Sequence[str]) -> models.Condition:
        if len(values) == 1:
            return models.FieldCondition(key=key, match=models.MatchValue(value=values[0]))
        return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))

    def flag(self, key: str, value: bool) -> models.Condition:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def range(
        self,
        key: str,
        *,
        gt: float | None = None,
        gte: float | None = None,
        lt: float | None = None,
        lte: float | None = None,
    ) -> models.Condition:
        return models.FieldCondition(key=key, range=models.Range(gt=gt, gte=gte, lt=lt, lte=lte))

    def empty(self, key: str) -> models.Condition:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))

    def all(self, parts: list[models.Condition]) -> models.Condition:
        return models.Filter(must=list(parts))

    def any(self, parts: list[models.Condition]) -> models.Condition:
        return models.Filter(should=list(parts))

    def none(self, parts: list[models.Condition]) -> models.Condition:
        return models.Filter(must_not=list(parts))


QDRANT_CONDITIONS = QdrantConditions()


@contextmanager
def _provider_errors(op: str) -> Iterator[None]:
    """Qdrant and network failures as a retryable ``ProviderError`` with a safe message."""
    try:
        yield
    except UnexpectedResponse as exc:
        logger.error("qdrant %s failed: HTTP %s %s", op, exc.status_code, exc.reason_phrase)
        raise ProviderError(
            f"vector store {op} failed (HTTP {exc.status_code})", operation=op, store=VECTOR_STORE
        ) from exc
    except (ResponseHandlingException, httpx.HTTPError, grpc.RpcError) as exc:
        logger.error("qdrant %s failed: %r", op, exc)
        raise ProviderError(
            f"vector store {op} failed: Qdrant unreachable or timed out",
            operation=op,
            store=VECTOR_STORE,
        ) from exc


class QdrantServerVectorStore:
    """``VectorStore`` over one Qdrant collection (cosine, one unnamed dense vector)."""

    def __init__(self, client: AsyncQdrantClient, collection: str = DEFAULT_COLLECTION) -> None:
        self._client = client
        self._collection = collection
        self._dimension = 0

    @classmethod
    def from_url(
        cls,
        url: str,
        api_key: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        timeout: int = 10,
    ) -> QdrantServerVectorStore:
        return cls(AsyncQdrantClient(url=url, api_key=api_key, timeout=timeout), collection)

    @property
    def name(self) -> str:
        return "qdrant"

    async def ensure_collection(self, dimension: int, embedder_name: str) -> None:
        with _provider_errors("ensure_collection"):
            if not await self._client.collection_exists(self._collection):
                await self._create(dimension, embedder_name)
            info = await self._client.get_collection(self._collection)
            self._check(info, dimension, embedder_name)
            await self._ensure_indexes(info)
        self._dimension = dimension

    async def reset_collection(self, dimension: int, embedder_name: str) -> None:
        with _provider_errors("reset_collection"):
            if await self._client.collection_exists(self._collection):
                await self._client.delete_collection(self._collection)
        await self.ensure_collection(dimension, embedder_name)

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if not points:
            return
        dimension = self._require_dimension()
        structs = [
            models.PointStruct(
                id=p.id, vector=vector_list(p.vector, dimension), payload=point_payload(p)
            )
            for p in points
        ]
        with _provider_errors("upsert"):
            await self._client.upsert(self._collection, points=structs, wait=True)

    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        selector = models.PointIdsList(points=list(ids))
        with _provider_errors("delete"):
            await self._client.delete(self._collection, points_selector=selector, wait=True)

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
        with _provider_errors("search"):
            response = await self._client.query_points(
                self._collection,
                query=query,
                query_filter=qdrant_filter(flt),
                limit=limit,
                score_threshold=score_threshold,
                with_payload=False,
                with_vectors=False,
            )
        return [VectorHit(id=str(hit.id), score=hit.score) for hit in response.points]

    async def count(self, flt: VectorFilter) -> int:
        if not flt.scope_keys:
            return 0
        with _provider_errors("count"):
            result = await self._client.count(
                self._collection, count_filter=qdrant_filter(flt), exact=True
            )
        return result.count

    async def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        if not ids:
            return {}
        with _provider_errors("retrieve"):
            points = await self._client.retrieve(
                self._collection, list(ids), with_payload=False, with_vectors=True
            )
        return retrieved_vectors(points)

    async def flush(self) -> None:
        """A no-op: the server acknowledges upserts (``wait=True``) once they are in its WAL."""

    async def close(self) -> None:
        await self._client.close()

    def _require_dimension(self) -> int:
        if not self._dimension:  # start-up has not reached Qdrant yet (services/startup.py)
            raise ProviderError(
                "the vector store is not ready: its collection is not checked yet; retry later",
                store=VECTOR_STORE,
            )
        return self._dimension

    async def _create(self, dimension: int, embedder_name: str) -> None:
        try:
            await self._client.create_collection(
                self._collection,
                vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE),
                metadata={"dimension": dimension, "embedder": embedder_name},
            )
        except UnexpectedResponse as exc:
            if exc.status_code != 409:  # 409: another process created it first
                raise

    def _check(self, info: models.CollectionInfo, dimension: int, embedder_name: str) -> None:
        vectors = info.config.params.vectors
        if (
            not isinstance(vectors, models.VectorParams)
            or vectors.distance != models.Distance.COSINE
        ):
            raise ConfigurationError(
                f"Qdrant collection {self._collection!r} does not hold one unnamed cosine "
                "vector; configure another collection name"
            )
        stored_embedder = (info.config.metadata or {}).get("embedder")
        stored_embedder = str(stored_embedder) if stored_embedder else None
        if vectors.size != dimension:
            raise dimension_mismatch(
                f"Qdrant collection {self._collection!r}",
                vectors.size,
                stored_embedder,
                dimension,
                embedder_name,
            )
        if stored_embedder and stored_embedder != embedder_name:
            logger.warning(
                "collection %s was built with embedder %s, now opened with %s",
                self._collection,
                stored_embedder,
                embedder_name,
            )

    async def _ensure_indexes(self, info: models.CollectionInfo) -> None:
        # Local mode ignores payload indexes (and warns); a server needs them to filter fast.
        if isinstance(self._client._client, AsyncQdrantLocal):
            return
        for field, schema in _INDEXES.items():
            if field not in info.payload_schema:
                await self._client.create_payload_index(
                    self._collection, field, field_schema=schema, wait=True
                )


def retrieved_vectors(points: Sequence[Any]) -> dict[str, npt.NDArray[np.float32]]:
    """The unnamed vector of each retrieved point (qdrant-client's ``Record``)."""
    found = {}
    for point in points:
        vector = point.vector
        if isinstance(vector, dict):
            vector = vector.get("")
        if isinstance(vector, list):
            found[str(point.id)] = np.asarray(vector, dtype=np.float32)
    return found
