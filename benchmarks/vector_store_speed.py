"""EdgeVectorStore speed: filtered search latency, upsert throughput, open time, and the HNSW
build of one large scope.

Run: ``.venv/bin/python benchmarks/vector_store_speed.py [--points 100000]`` (about 5 min).
First, plain segments (no index built): random unit 384-dim vectors spread over 100 scope
keys and 4 layers; searches filter by one scope key and one layer (and, in a second series,
``alive_at`` as the service does). Then one scope of --points points in ten tags, vectors
clustered (5,000 random unit centres, each point one of them plus Gaussian noise, sigma 0.02
per dimension, normalized; queries likewise with sigma 0.03): searches of the plain segment,
then the index build (the store reopened with the threshold at --points), searches while it
runs, its time and the builder's peak RSS, then searches of the HNSW segments. The shard runs
in its own process, as in the service; the engine's own latency and recall@10 (against its
exact search, by scope and by scope + tag) are measured on the shard's directory in this
process, before and after the build.
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
from typing import Any

import numpy as np
import numpy.typing as npt
import qdrant_edge as qe

from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.adapters.vectors.edge_shard import SEARCH_PARAMS
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
        store = EdgeVectorStore(data_dir, index_threshold=0)
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
        reopened = EdgeVectorStore(data_dir, index_threshold=0)
        await reopened.ensure_collection(DIM, "bench")
        opened = time.perf_counter() - began
        p50, p95 = await search_latency(reopened, rng, alive=True)
        print(f"open existing {total + 2_000:,}-point store: {opened * 1000:.0f} ms")
        print(f"search after reopen, scope+layer+alive_at: p50 {p50:.2f} ms  p95 {p95:.2f} ms")
        await reopened.close()
    await one_scope(total)


CENTRES = 5_000
TAGS = 10
RECALL_QUERIES = 200
SCOPE = "user:big"


def clustered(
    rng: np.random.Generator, centres: npt.NDArray[np.float32], n: int, sigma: float
) -> npt.NDArray[np.float32]:
    rows = centres[rng.integers(0, len(centres), n)] + rng.normal(0, sigma, (n, DIM))
    unit: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def engine_filter(tag: int | None) -> qe.Filter:
    """What the store sends for a search of the scope (and one tag)."""
    must: list[qe.ConditionType] = [
        qe.FieldCondition("scope_key", match=qe.MatchAny([SCOPE])),
        qe.FieldCondition("expires_at", range=qe.RangeFloat(gt=time.time())),
    ]
    if tag is not None:
        must.append(qe.FieldCondition("tags", match=qe.MatchAny([f"t{tag}"])))
    return qe.Filter(must=must)


def engine_searches(
    shard: qe.EdgeShard, queries: npt.NDArray[np.float32], tagged: bool, params: qe.SearchParams
) -> tuple[list[float], list[set[str]]]:
    timings, found = [], []
    for i, query in enumerate(queries):
        request = qe.QueryRequest(
            limit=10,
            query=qe.Query.Nearest(query.tolist()),
            filter=engine_filter(i % TAGS if tagged else None),
            params=params,
            with_payload=False,
            with_vector=False,
        )
        began = time.perf_counter()
        hits = shard.query(request)
        timings.append((time.perf_counter() - began) * 1000)
        found.append({str(hit.id) for hit in hits})
    return timings, found


def measure_engine(path: Path, queries: npt.NDArray[np.float32], label: str) -> None:
    """Searches of the shard at ``path`` in this process, and their recall@10 against the
    engine's exact search."""
    shard = qe.EdgeShard.load(str(path))
    for tagged in (False, True):
        timings, found = engine_searches(shard, queries, tagged, SEARCH_PARAMS)
        _, exact = engine_searches(shard, queries, tagged, qe.SearchParams(exact=True))
        recall = np.mean([len(f & e) / 10 for f, e in zip(found, exact, strict=True)])
        what = "scope + tag" if tagged else "scope"
        print(f"{label}, {what:<11}: {summary(timings)}  recall@10 {recall:.3f}")
    shard.close()


def summary(timings: list[float]) -> str:
    cuts = statistics.quantiles(timings, n=100)
    return f"p50 {cuts[49]:.2f} ms  p95 {cuts[94]:.2f} ms"


def status_kib(pid: int, field: str) -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith(field)), 0)


async def one_scope(total: int) -> None:
    """One scope of ``total`` clustered points: plain, while the index builds, indexed."""
    rng = np.random.default_rng(11)
    centres = clustered(rng, np.eye(1, DIM, dtype=np.float32), CENTRES, 1.0)
    vectors = clustered(rng, centres, total, 0.02)
    queries = clustered(rng, centres, RECALL_QUERIES, 0.03)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "vectors"
        store = EdgeVectorStore(data_dir, own_process=True, index_threshold=0)
        await store.ensure_collection(DIM, "bench")
        for start in range(0, total, 256):
            await store.upsert(
                [
                    VectorPoint(
                        str(uuid.UUID(int=i + 1)),
                        vectors[i],
                        SCOPE,
                        {"user_id": "big"},
                        "episodic",
                        tags=(f"t{i % TAGS}",),
                        created_at=float(i),
                    )
                    for i in range(start, min(start + 256, total))
                ]
            )
        status = await store.index_status()
        print(f"\none scope of {total:,} clustered points, ten tags")
        print(f"shard process RSS, plain: {status_kib(status['process'], 'VmRSS') / 1024:.0f} MiB")
        await store.close()
        measure_engine(data_dir / "shard", queries, "plain segment, in the engine")

        store = EdgeVectorStore(data_dir, own_process=True, index_threshold=total)
        await store.ensure_collection(DIM, "bench")
        during, builder_peak = await searches_while_building(store, queries)
        status = await store.index_status()
        print(
            f"index build: {status['last_build_seconds']} s (copy, build, switch); "
            f"builder peak RSS {builder_peak / 1024:.0f} MiB"
        )
        print(f"store searches while it builds ({len(during)}): {summary(during)}")
        after, _ = await store_searches(store, queries)
        print(f"store searches once built: {summary(after)}")
        rss = status_kib(status["process"], "VmRSS") / 1024
        print(f"shard process RSS, indexed: {rss:.0f} MiB")
        await store.close()
        measure_engine(data_dir / status["directory"], queries, "HNSW, in the engine")


async def store_searches(
    store: EdgeVectorStore, queries: npt.NDArray[np.float32]
) -> tuple[list[float], int]:
    """Scope searches through the store (its process and pipe); timings and hits found."""
    timings, found = [], 0
    for query in queries:
        began = time.perf_counter()
        hits = await store.search(query, VectorFilter([SCOPE], alive_at=time.time()), 10)
        timings.append((time.perf_counter() - began) * 1000)
        found += len(hits)
    return timings, found


async def searches_while_building(
    store: EdgeVectorStore, queries: npt.NDArray[np.float32]
) -> tuple[list[float], int]:
    """Search until the build is switched in; the timings and the builder's peak RSS (KiB)."""
    timings: list[float] = []
    peak = 0
    status: dict[str, Any] = await store.index_status()
    while status["builds"] == 0:
        if status["failures"]:
            raise SystemExit(f"the index build failed: {status}")
        if status["builder_pid"]:
            peak = max(peak, status_kib(status["builder_pid"], "VmHWM"))
        more, _ = await store_searches(store, queries[:10])
        timings += more
        status = await store.index_status()
    return timings, peak


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=100_000)
    asyncio.run(main(parser.parse_args().points))
