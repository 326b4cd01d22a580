"""Throughput under load: mixed memory.add / memory.search calls with many in flight.

Starts `agentcore serve` in a fresh data directory, embedded (SQLite, qdrant-edge, the local
embedder) or in production mode (a fresh Postgres database migrated with `agentcore migrate`,
Redis; vectors stay on qdrant-edge: no Qdrant server here), loads --preload LoCoMo turns into
one user's scope with memory.add_batch (from --bulk-streams concurrent callers; reported:
memories stored and indexed per second, batches refused), waits until they are indexed, then
sends --calls calls, half single memory.add (LoCoMo turns not loaded) and half memory.search
(LoCoMo questions, limit 10), in random order, keeping --in-flight of them outstanding over
HTTP/1.1 connections (benchmarks/rpc_client.py): a closed loop, each of --in-flight callers
sending its next call when the last is answered. With --arrivals-per-second R the loop is
open instead: calls arrive at random (Poisson, rate R) whatever the answers, each on a free
connection (one is opened when none is), and a call's latency counts from its arrival.
Reports calls/s and the sustained calls/s (the calls over the time until every add's vector was
written, which an open loop's rate must stay under), the latency percentiles of each kind, the
server's and the client's CPU per call and the whole machine's (every process: worker,
PostgreSQL and Redis too), the errors by code, the server's own p95 waits from its /metrics (a
call's wait for its turn, by kind; a unit of work's wait for a pooled PostgreSQL connection),
and checks that every acknowledged add is stored (memory.get of each id after the run: "lost"
must be 0).
Production mode also runs a real Celery worker (`agentcore worker`) beside the server.

Beside it, the floor: the embeddings per second the local model does on this machine's
cores in large batches (in this process, one thread per core): an add costs one embedding and
a search one query embedding, so that rate bounds the calls.

    .venv/bin/python benchmarks/load.py [--mode embedded|production] [--calls 1000]
        [--in-flight 50 | --arrivals-per-second R] [--preload 2000] [--bulk-streams 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rpc_client import RpcConnection
from service_latency import ServerCpu, corpus, percentiles
from serving import running

from agentcore.bootstrap import build_embedder
from agentcore.config import Settings

USER = "load-user"


def embedding_floor(texts: list[str]) -> dict[str, float]:
    """Embeddings per second of the service's embedder (``EMBEDDER``, as configured in the
    environment) on every core: 1,024 texts in one call, which its threads share a batch at a
    time."""
    embedder = build_embedder(Settings(embedder_threads=os.cpu_count() or 1))
    sample = texts[:1024]

    async def embed_all() -> float:
        await embedder.embed(sample[:64])  # warm-up
        started = time.perf_counter()
        await embedder.embed(sample)
        seconds = time.perf_counter() - started
        await embedder.close()
        return seconds

    seconds = asyncio.run(embed_all())
    return {"texts": len(sample), "embeddings_per_second": round(len(sample) / seconds, 1)}


async def wait_indexed(conn: RpcConnection, seconds: float = 600) -> float:
    """Wait until the server has embedded every memory it stored; returns when (monotonic)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        health = (await conn.call("memory.health", {}))["result"]
        if health["indexing_backlog"] == 0:
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise TimeoutError("the server did not finish indexing")


async def preload(
    conns: list[RpcConnection], turns: list[str], count: int, streams: int
) -> dict[str, Any]:
    """``count`` turns stored with memory.add_batch (100 a call) by ``streams`` concurrent
    callers, then indexed; the batches refused, by error code."""
    started = time.monotonic()
    batches = [
        [{"content": f"{turns[i % len(turns)]} (#{i})", "user_id": USER} for i in range(s, s + 100)]
        for s in range(0, count, 100)
    ]
    refused: Counter[str] = Counter()

    async def stream(conn: RpcConnection, mine: list[list[dict[str, Any]]]) -> None:
        for items in mine:
            reply = await conn.call("memory.add_batch", {"items": items})
            if "error" in reply:
                refused[reply["error"]["data"]["code"]] += 1

    await asyncio.gather(*(stream(conns[n], batches[n::streams]) for n in range(streams)))
    stored = time.monotonic()
    indexed = await wait_indexed(conns[0])
    return {
        "memories": count,
        "streams": streams,
        "stored_per_second": round(count / (stored - started), 1),
        "indexed_per_second": round(count / (indexed - started), 1),
        "refused_batches": dict(refused),
    }


async def drive(
    host: str,
    port: int,
    turns: list[str],
    questions: list[str],
    args: argparse.Namespace,
    server: ServerCpu,
) -> dict[str, Any]:
    conns = [RpcConnection(host, port) for _ in range(max(args.in_flight, args.bulk_streams))]
    loaded = await preload(conns, turns, args.preload, args.bulk_streams)
    report: dict[str, Any] = {"preload": loaded}
    await conns[0].call("memory.search", {"query": "warm up", "user_id": USER})

    rng = random.Random(5)
    fresh = turns[args.preload :] or turns
    calls: list[tuple[str, dict[str, Any]]] = []
    for n in range(args.calls):
        if n % 2:
            calls.append(("memory.search", {"query": rng.choice(questions), "limit": 10}))
        else:
            calls.append(("memory.add", {"content": f"{fresh[n % len(fresh)]} (#{n})"}))
    rng.shuffle(calls)
    latency: dict[str, list[float]] = {"memory.add": [], "memory.search": []}
    answered: list[tuple[str, float, float, bool]] = []  # method, sent, answered, first
    errors: Counter[str] = Counter()
    acknowledged: list[str] = []

    async def send(
        conn: RpcConnection, method: str, params: dict[str, Any], since: float, first: bool
    ) -> None:
        try:
            reply = await conn.call(method, {**params, "user_id": USER})
        except (OSError, ConnectionError, asyncio.IncompleteReadError) as exc:
            errors[type(exc).__name__] += 1
            await conn.close()
            return
        now = time.perf_counter()
        latency[method].append((now - since) * 1000)
        answered.append((method, since, now, first))
        if "error" in reply:
            errors[reply["error"]["data"]["code"]] += 1
        elif method == "memory.add":
            acknowledged.append(reply["result"]["memory_id"])

    server_cpu, client_cpu, machine = server.ms(), time.process_time(), machine_ticks()
    started = time.perf_counter()
    if args.arrivals_per_second:
        conns += await open_loop(host, port, calls, args.arrivals_per_second, send)
    else:
        await closed_loop(conns, calls, send)
    seconds = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    server_cpu = None if server_cpu is None else (server.ms() or 0.0) - server_cpu
    busy, ticks = (after - before for after, before in zip(machine_ticks(), machine, strict=True))
    await wait_indexed(conns[0])  # every acknowledged add embedded and its vector written
    sustained = time.perf_counter() - started

    lost = 0
    for memory_id in acknowledged:
        got = await conns[0].call("memory.get", {"memory_id": memory_id, "user_id": USER})
        lost += "result" not in got
    for conn in conns:
        await conn.close()
    every = latency["memory.add"] + latency["memory.search"]
    return report | {
        "calls": args.calls,
        "in_flight": None if args.arrivals_per_second else args.in_flight,
        "arrivals_per_second": args.arrivals_per_second,
        "seconds": round(seconds, 2),
        "calls_per_second": round(args.calls / seconds, 1),
        # the calls over the time until the last add's vector was written: the rate the
        # cores sustain (a closed loop's adds are embedded behind it, after the last answer)
        "sustained_calls_per_second": round(args.calls / sustained, 1),
        "all": percentiles(every, []),
        "memory.add": percentiles(latency["memory.add"], []),
        "memory.search": percentiles(latency["memory.search"], []),
        "steady": None if args.arrivals_per_second else steady(answered),
        "server_cpu_ms_per_call": None if server_cpu is None else round(server_cpu / args.calls, 2),
        "client_cpu_ms_per_call": round(client_cpu * 1000 / args.calls, 2),
        # every process of the machine (server, worker, PostgreSQL, Redis, this client)
        "machine_cpu_ms_per_call": round(busy * 1000 / TICK / args.calls, 2),
        "machine_busy": round(busy / ticks, 2) if ticks else None,
        "server_waits_p95_ms": server_waits(host, port),
        "errors": dict(errors),
        "acknowledged_adds": len(acknowledged),
        "lost": lost,
    }


TICK = os.sysconf("SC_CLK_TCK")


def steady(answered: list[tuple[str, float, float, bool]]) -> dict[str, Any]:
    """The closed loop's calls sent once every caller's first call was answered. Those first
    calls are all sent at the same instant, a burst no real callers make, and the calls sent
    while it drains wait behind it: at 2,000 calls that was a tenth of the searches, enough to
    set their p95."""
    drained = max(done for _, _, done, first in answered if first)
    later = [(method, done - sent) for method, sent, done, _ in answered if sent >= drained]
    return {
        "after_seconds": round(drained - min(sent for _, sent, _, _ in answered), 2),
        "calls": len(later),
    } | {
        method: percentiles([seconds * 1000 for kind, seconds in later if kind == method], [])
        for method in ("memory.add", "memory.search")
    }


def machine_ticks() -> tuple[int, int]:
    """(busy, all) clock ticks of every core since boot (/proc/stat): busy is all but idle and
    I/O wait."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(values) - values[3] - values[4], sum(values)


Send = Callable[[RpcConnection, str, dict[str, Any], float, bool], Awaitable[None]]


async def closed_loop(
    conns: list[RpcConnection], calls: list[tuple[str, dict[str, Any]]], send: Send
) -> None:
    """Each connection a caller: its next call when its last is answered."""
    waiting = list(reversed(calls))

    async def caller(conn: RpcConnection) -> None:
        first = True
        while waiting:
            method, params = waiting.pop()
            await send(conn, method, params, time.perf_counter(), first)
            first = False

    await asyncio.gather(*(caller(conn) for conn in conns))


async def open_loop(
    host: str, port: int, calls: list[tuple[str, dict[str, Any]]], rate: float, send: Send
) -> list[RpcConnection]:
    """Calls at Poisson arrivals of ``rate`` a second, each on a free connection (a new one
    when none is free); returns the connections it opened."""
    rng = random.Random(11)
    idle: list[RpcConnection] = []
    opened: list[RpcConnection] = []

    async def one(method: str, params: dict[str, Any], arrival: float) -> None:
        if idle:
            conn = idle.pop()
        else:
            conn = RpcConnection(host, port)
            opened.append(conn)
        await send(conn, method, params, arrival, False)
        idle.append(conn)

    tasks = []
    due = time.perf_counter()
    for method, params in calls:
        due += rng.expovariate(rate)
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(one(method, params, due)))
    await asyncio.gather(*tasks)
    return opened


def server_waits(host: str, port: int) -> dict[str, float | None]:
    """The server's p95 waits in ms from its /metrics histograms (the upper bound of the
    bucket holding the 95th percentile): a call's wait for its turn, by kind, and a unit of
    work's wait for a pooled PostgreSQL connection (None in embedded mode: no pool)."""
    text = httpx.get(f"http://{host}:{port}/metrics", timeout=10).text
    admission = "agentcore_rpc_admission_wait_seconds"
    return {
        "admission_read": histogram_p95(text, admission, 'kind="read"'),
        "admission_write": histogram_p95(text, admission, 'kind="write"'),
        "db_pool": histogram_p95(text, "agentcore_db_pool_wait_seconds", ""),
    }


def histogram_p95(text: str, name: str, labels: str) -> float | None:
    buckets: list[tuple[float, float]] = []
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{") and labels in line:
            bound = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return None
    return next(b * 1000 for b, count in buckets if count >= 0.95 * buckets[-1][1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["embedded", "production"], default="embedded")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=50)
    parser.add_argument(
        "--arrivals-per-second", type=float, help="an open loop: Poisson arrivals at this rate"
    )
    parser.add_argument("--preload", type=int, default=2000)
    parser.add_argument(
        "--bulk-streams", type=int, default=1, help="concurrent memory.add_batch callers"
    )
    args = parser.parse_args()
    turns, questions = corpus()
    report: dict[str, Any] = {"mode": args.mode}
    with running(args.mode, worker=args.mode == "production") as (port, server):
        run = drive("127.0.0.1", port, turns, questions, args, ServerCpu(server.pid))
        report.update(uvloop.run(run))
    report["floor"] = embedding_floor(turns)
    report["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
