"""The vector store of a worker process when the vectors live in the serving process.

Without ``QDRANT_URL`` the vectors are in the embedded engine under ``AGENTCORE_DATA_DIR``,
which one process owns: the one that serves (``agentcore serve``). A Celery worker opens
nothing there. Its jobs do not search (stage compression reads the database only; the periodic
jobs that do, expiry and consolidation, then run in the serving process), and a vector write
one of them makes is refused here as retryable: it stays in the database's outbox, marked
failed, and the serving process applies it within ``VECTOR_SYNC_INTERVAL`` (vector_sync.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agentcore.adapters.outages import VECTOR_STORE
from agentcore.domain.errors import ProviderError
from agentcore.services.ports import VectorFilter, VectorHit, VectorPoint

_ELSEWHERE = "the vectors are the serving process's (embedded vector store, no QDRANT_URL)"


class OwnedElsewhereVectorStore:
    @property
    def name(self) -> str:
        return "owned-by-the-serving-process"

    async def ensure_collection(self, dimension: int, embedder_name: str) -> None:
        return None  # the owner creates and checks it

    async def reset_collection(self, dimension: int, embedder_name: str) -> None:
        raise self._refused()

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        raise self._refused()  # left in the outbox for the owner

    async def delete(self, ids: Sequence[str]) -> None:
        raise self._refused()

    async def search(
        self,
        vector: npt.NDArray[np.float32],
        flt: VectorFilter,
        limit: int,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        raise self._refused()

    async def count(self, flt: VectorFilter) -> int:
        raise self._refused()

    async def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        raise self._refused()

    async def flush(self) -> None:
        return None

    async def close(self) -> None:
        return None

    @staticmethod
    def _refused() -> ProviderError:
        return ProviderError(f"{_ELSEWHERE}; the serving process writes them", store=VECTOR_STORE)
