"""Embedded Qdrant (qdrant-edge): a Rust shard in a data directory, no server.

The engine is synchronous and holds the GIL while it works, so its calls never run on the
event loop: ``EdgeVectorStore`` sends each, one at a time, from a thread of its own to the
shard (``edge_shard.ShardStore``), which lives either on that thread or, with
``own_process``, in a child process (``edge_process``), where a long search holds the child's
GIL instead of the server's. ``EdgeShard.optimize()`` (the HNSW build) holds the GIL for
minutes on large shards, so it runs on a copy of the shard in a process of its own, and the
shard switches to the copy once built (``edge_index``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from agentcore.adapters.vectors.edge_index import DEFAULT_THRESHOLD
from agentcore.adapters.vectors.edge_process import EngineError, ShardProcess
from agentcore.adapters.vectors.edge_shard import ShardStore
from agentcore.domain.errors import AgentCoreError, ConfigurationError, ProviderError
from agentcore.services.ports import VectorFilter, VectorHit, VectorPoint

logger = logging.getLogger(__name__)


class _Shard(Protocol):
    def call(self, op: str, *args: Any) -> Any: ...


class _LocalShard:
    """The shard on the store's own thread; the steps of an index build run after calls."""

    def __init__(self, store: ShardStore) -> None:
        self._store = store
        self._due = 0.0

    def call(self, op: str, *args: Any) -> Any:
        try:
            return getattr(self._store, op)(*args)
        finally:
            if op != "close" and time.monotonic() >= self._due:
                self._due = time.monotonic() + self._store.maintain()


class EdgeVectorStore:
    """``VectorStore`` over a qdrant-edge shard in ``data_dir`` (created if absent).

    ``data_dir`` holds ``shard/`` (the engine's files) and ``collection.json`` (the dimension
    and embedder the shard was built for). Nothing is opened until ``ensure_collection``.
    ``own_process`` runs the shard in a child process (the module doc); ``log_level`` is the
    child's. Past ``index_threshold`` points outside an HNSW segment an index is built
    (``edge_index``; 0: never).
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        max_search_threads: int | None = None,
        own_process: bool = False,
        log_level: str = "WARNING",
        index_threshold: int = DEFAULT_THRESHOLD,
    ) -> None:
        self._dir = Path(data_dir)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qdrant-edge")
        self._shard: _Shard = (
            ShardProcess(self._dir, max_search_threads, log_level, index_threshold)
            if own_process
            else _LocalShard(ShardStore(self._dir, max_search_threads, index_threshold))
        )
        self._open = False
        self._closed = False

    @property
    def name(self) -> str:
        return "qdrant-edge"

    async def ensure_collection(self, dimension: int, embedder_name: str) -> None:
        await self._run("open", dimension, embedder_name)
        self._open = True

    async def reset_collection(self, dimension: int, embedder_name: str) -> None:
        await self._run("reset", dimension, embedder_name)
        self._open = True

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        if points:
            await self._run("upsert", list(points))

    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            await self._run("delete", list(ids))

    async def search(
        self,
        vector: npt.NDArray[np.float32],
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        self._require()
        if limit <= 0 or not flt.scope_keys:
            return []
        found = await self._run("search", vector, flt, limit, score_threshold)
        return [VectorHit(id=memory_id, score=score) for memory_id, score in found]

    async def count(self, flt: VectorFilter) -> int:
        if not flt.scope_keys:
            return 0
        count: int = await self._run("count", flt)
        return count

    async def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        self._require()
        if not ids:
            return {}
        found: dict[str, list[float]] = await self._run("vectors", list(ids))
        return {key: np.asarray(vector, dtype=np.float32) for key, vector in found.items()}

    async def flush(self) -> None:
        await self._run("flush")

    async def index_status(self) -> dict[str, Any]:
        """The HNSW build's state and counts (``ShardStore.index_status``)."""
        self._require()
        status: dict[str, Any] = await self._run("index_status")
        return status

    async def close(self) -> None:
        if self._closed:
            return
        await self._run("close")  # flushes first
        self._closed = True
        self._executor.shutdown(wait=False)  # the close above was the last job it ran

    def _require(self) -> None:
        if not self._open:
            raise ConfigurationError("the vector store is not open: call ensure_collection first")

    async def _run(self, op: str, *args: Any) -> Any:
        """Run one call of the shard on the store's thread; engine failures become
        ``ProviderError``."""
        if self._closed:
            raise ConfigurationError("the vector store is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, self._shard.call, op, *args)
        except (AgentCoreError, TypeError, ValueError):
            raise
        except Exception as exc:  # the engine raises bare Exception (EngineError from a child)
            detail = exc if isinstance(exc, EngineError) else repr(exc)
            logger.error("qdrant-edge %s failed in %s: %s", op, self._dir, detail)
            raise ProviderError(f"embedded vector store {op} failed", operation=op) from exc
