"""EdgeVectorStore speed: filtered search latency, upsert throughput, open time.

Run: ``.venv/bin/python benchmarks/vector_store_speed.py [--points 100000]`` (about 1-2 min).
Random unit 384-dim vectors spread over 100 scope keys and 4 layers; searches filter by one
scope key and one layer (and, in a second series, ``alive_at`` as the service does).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.services.ports import VectorFilter, VectorPoint

DIM = 384
SCOPES = 100
LAYERS = ("working", "episodic", "semantic", "procedural")
QUERIES = 300


def random_unit(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((n, DIM), dtype=np.float32)
    normalized: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return normalized


def make_points(rng: np.random.Generator, start: int, n: int) -> list[VectorPoint]:
    vectors = random_unit(rng, n)
    points = []
    for offset, vector in enumerate(vectors):
        i = start + offset
        points.append(
            VectorPoint(
                id=str(uuid.uuid4()),
                vector=vector,
                scope_key=f"user:u{i % SCOPES}",
                scope_ids={"user_id": f"u{i % SCOPES}"},
                layer=LAYERS[(i // SCOPES) % len(LAYERS)],
                tags=["bench"],
                created_at=float(i),
                metadata={"n": i},
            )
        )
    return points


async def fill(store: EdgeVectorStore, rng: np.random.Generator, start: int, end: int) -> float:
    """Upsert points [start, end) in batches of 256; returns points per second."""
    began = time.perf_counter()
    for batch_start in range(start, end, 256):
        await store.upsert(make_points(rng, batch_start, min(256, end - batch_start)))
    return (end - start) / (time.perf_counter() - began)


async def search_latency(
    store: EdgeVectorStore, rng: np.random.Generator, alive: bool
) -> tuple[float, float]:
    queries = random_unit(rng, QUERIES)
    timings = []
    for i, query in enumerate(queries):
        flt = VectorFilter(
            scope_keys=[f"user:u{i % SCOPES}"],
            layers=[LAYERS[i % len(LAYERS)]],
            alive_at=time.time() if alive else None,
        )
        began = time.perf_counter()
        hits = await store.search(query, flt, 10)
        timings.append((time.perf_counter() - began) * 1000)
        assert hits, "a filtered search found nothing"
    cuts = statistics.quantiles(timings, n=100)
    return cuts[49], cuts[94]


async def single_upserts(store: EdgeVectorStore, rng: np.random.Generator, n: int) -> float:
    points = make_points(rng, 0, n)
    began = time.perf_counter()
    for p in points:
        await store.upsert([p])
    return n / (time.perf_counter() - began)


async def stall_ms(work: Awaitable[object]) -> tuple[float, float]:
    """Elapsed time of ``work`` and the longest the event loop went without running.

    qdrant-edge holds the GIL inside its calls, so work on the store's own thread still
    freezes the loop for as long as the engine runs.
    """
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.005)
    began = time.perf_counter()
    await work
    elapsed = time.perf_counter() - began
    done.set()
    await ticker
    return elapsed * 1000, max(gaps) * 1000


async def main(total: int) -> None:
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "vectors"
        store = EdgeVectorStore(data_dir)
        await store.ensure_collection(DIM, "bench")
        rate = await fill(store, rng, 0, 10_000)
        print(f"upsert, batches of 256: {rate:,.0f} points/s")
        for size in (10_000, total):
            if size > 10_000:
                await fill(store, rng, 10_000, size)
            for alive in (False, True):
                p50, p95 = await search_latency(store, rng, alive)
                what = "scope+layer+alive_at" if alive else "scope+layer"
                print(f"search {size:>7,} points, {what:<20}: p50 {p50:.2f} ms  p95 {p95:.2f} ms")
        took, stall = await stall_ms(store.flush())
        print(f"flush after filling {total:,}: {took:.0f} ms, event loop stalled {stall:.0f} ms")
        rate = await single_upserts(store, rng, 2_000)
        print(f"upsert, batches of 1: {rate:,.0f} points/s")
        await store.upsert(make_points(rng, 0, 1))
        took, stall = await stall_ms(store.flush())
        print(f"flush after 1 upsert: {took:.0f} ms, event loop stalled {stall:.0f} ms")
        query = random_unit(rng, 1)[0]
        took, stall = await stall_ms(store.search(query, VectorFilter(["user:u1"]), 10))
        print(f"one filtered search: {took:.2f} ms, event loop stalled {stall:.1f} ms")
        await store.close()

        began = time.perf_counter()
        reopened = EdgeVectorStore(data_dir)
        await reopened.ensure_collection(DIM, "bench")
        opened = time.perf_counter() - began
        p50, p95 = await search_latency(reopened, rng, alive=True)
        print(f"open existing {total + 2_000:,}-point store: {opened * 1000:.0f} ms")
        print(f"search after reopen, scope+layer+alive_at: p50 {p50:.2f} ms  p95 {p95:.2f} ms")
        await reopened.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=100_000)
    asyncio.run(main(parser.parse_args().points))
