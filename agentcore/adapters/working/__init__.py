"""Working memory stores: Redis (production) and in-process (embedded)."""

from __future__ import annotations

from agentcore.adapters.working.local_store import LocalWorkingMemoryStore
from agentcore.adapters.working.redis_store import RedisWorkingMemoryStore

__all__ = ["LocalWorkingMemoryStore", "RedisWorkingMemoryStore"]
