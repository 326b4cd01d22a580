"""Expiry: an expired memory is invisible at once (every read filters on ``expires_at``); the
sweeper then deletes its row and its vector, each with a ``delete`` event by ``expiry``.
Embedded, the API process sweeps on a timer; in production the job ``memories.sweep_expired``
is run by Celery beat (``agentcore worker --beat``)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter

from agentcore.services.memory_manager import MemoryManager

SWEEP_EXPIRED = "memories.sweep_expired"  # job kind
BATCH = 500


class ExpirySweeper:
    def __init__(self, memory: MemoryManager, registry: CollectorRegistry) -> None:
        self._memory = memory
        self._swept = Counter(
            "agentcore_memories_expired_total",
            "Expired memories deleted by the sweeper (rows and vectors)",
            registry=registry,
        )

    async def sweep(self, limit: int = 10 * BATCH) -> int:
        """Delete expired memories, ``BATCH`` per transaction, at most ``limit``; how many."""
        total = 0
        while total < limit:
            deleted = await self._memory.delete_expired(min(BATCH, limit - total))
            total += deleted
            if deleted < BATCH:
                break
        self._swept.inc(total)
        return total

    async def run_job(self, _: dict[str, Any]) -> dict[str, Any]:
        """The job handler of ``SWEEP_EXPIRED``."""
        return {"deleted": await self.sweep()}
