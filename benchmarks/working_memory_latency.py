"""Working-memory read latency on loopback Redis (DESIGN §7 target: p95 ≤ 2 ms).

Fills one session to the token bound with LoCoMo turns (read from ../shared/data/locomo), then
times `WorkingMemoryService.get` and `append` on the Redis store. Uses Redis DB 12 of
redis://127.0.0.1:6379 and empties it afterwards.

    .venv/bin/python benchmarks/working_memory_latency.py [--calls 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio as aioredis

from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.adapters.working.redis_store import RedisWorkingMemoryStore
from agentcore.domain.models import ScopeIds
from agentcore.services.ports import EpisodeItem
from agentcore.services.working_memory import WorkingMemoryService

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"


class DiscardingSink:
    async def record(self, scope: ScopeIds, items: Sequence[EpisodeItem], reason: str) -> list[str]:
        return [item.id for item in items]


def turns() -> list[str]:
    if not LOCOMO.is_file():
        return [
            f"Turn {i}: we talked about the garden, the budget and the trip." for i in range(500)
        ]
    conv = json.loads(LOCOMO.read_text())[0]["conversation"]
    return [
        f"{t['speaker']}: {t['text']}"
        for key, session in conv.items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]


def report(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"{name}: p50 {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms"


async def main(calls: int) -> None:
    client = aioredis.Redis.from_url("redis://127.0.0.1:6379/12")
    await client.flushdb()
    service = WorkingMemoryService(
        RedisWorkingMemoryStore(client, ttl_seconds=3600),
        BpeTokenCounter(),
        DiscardingSink(),
        lambda: datetime.now(UTC),
        max_tokens=4000,
        ttl_seconds=3600,
        max_content_length=10_000,
    )
    scope = ScopeIds(session_id="bench", user_id="bench")
    texts = turns()
    appends = []
    for i in range(calls):
        started = time.perf_counter()
        await service.append(scope, texts[i % len(texts)], role="user")
        appends.append((time.perf_counter() - started) * 1000)
    view = await service.get("bench")
    reads = []
    for _ in range(calls):
        started = time.perf_counter()
        await service.get("bench")
        reads.append((time.perf_counter() - started) * 1000)
    await client.flushdb()
    await client.aclose()
    print(f"session: {len(view.items)} items, {view.token_count} tokens (bound 4000)")
    print(report("get   ", reads))
    print(report("append", appends))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    asyncio.run(main(parser.parse_args().calls))
