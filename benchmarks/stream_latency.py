"""The change stream's delivery latency and its cost to memory.add, on the embedded default.

Starts `agentcore serve` (SQLite file, qdrant-edge, local ONNX embedder) in a fresh data
directory. Times N single memory.add calls over HTTP JSON-RPC, one at a time, with no
subscriber, and N more while `GET /openspec/v1/knowledge/stream` of their scope is open and
read, in alternating blocks of 50 (so both halves see the same store size and indexing
backlog). The subscriber reads on a thread of its own. Delivery latency is from the add's
answer received (the write acknowledged) to its create event received by the subscriber, both
clocks in this process (a negative value would mean the event came first: the stream reads
committed rows only, so it can come before the answer reaches the caller). Reports p50/p95 of
each and the add p95 with the subscriber over without (the cost of a subscriber to a write).

    .venv/bin/python benchmarks/stream_latency.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time

import httpx
from serving import embedded_env, free_port, serve


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
    }


async def wait_healthy(client: httpx.AsyncClient) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            if (await client.get("/health")).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("server did not start")
        await asyncio.sleep(0.2)


async def add(client: httpx.AsyncClient, user: str, n: int) -> tuple[str, float, float]:
    """One memory.add: its id, its latency, and when its answer arrived."""
    body = {
        "jsonrpc": "2.0",
        "id": n,
        "method": "memory.add",
        "params": {"content": f"note {n}: the invoice for order {n * 7} is paid", "user_id": user},
    }
    started = time.perf_counter()
    reply = (await client.post("/rpc", json=body)).json()
    acknowledged = time.perf_counter()
    if "error" in reply:
        raise SystemExit(f"memory.add failed: {reply['error']}")
    return reply["result"]["memory_id"], acknowledged - started, acknowledged


BLOCK = 50  # adds per block; blocks alternate without and with a subscriber


class Subscriber:
    """Reads the stream of one scope on a thread of its own (a sync client: the adds' loop is
    not slowed by parsing events), noting when each memory's event arrived."""

    def __init__(self, base: str, user: str, received: dict[str, float]) -> None:
        self._base, self._user, self._received = base, user, received
        self._ready = threading.Event()
        self._client = httpx.Client(base_url=base, timeout=None)
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> Subscriber:
        self._thread.start()
        if not self._ready.wait(30):
            raise SystemExit("the stream did not open")
        time.sleep(0.2)
        return self

    def __exit__(self, *_: object) -> None:
        self._client.close()  # ends the read
        self._thread.join(10)

    def _read(self) -> None:
        params = {"user_id": self._user}
        try:
            with self._client.stream("GET", "/openspec/v1/knowledge/stream", params=params) as r:
                self._ready.set()
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        memory_id = json.loads(line[6:])["memory_id"]
                        self._received[memory_id] = time.perf_counter()
        except (httpx.HTTPError, RuntimeError):
            pass  # closed by __exit__


async def measure(base: str, calls: int) -> dict[str, object]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await wait_healthy(client)
        for n in range(30):  # warm-up: the embedder, the lexical scope, the connections
            await add(client, "warm", n)
        alone: list[float] = []
        watched: list[float] = []
        acks: dict[str, float] = {}
        received: dict[str, float] = {}
        n = 0
        while n < 2 * calls:  # alternate, so both see the same store size and backlog
            if (n // BLOCK) % 2 == 0:
                for _ in range(BLOCK):
                    alone.append((await add(client, "bench-alone", n))[1])
                    n += 1
                continue
            with Subscriber(base, "bench-stream", received):
                for _ in range(BLOCK):
                    memory_id, seconds, acknowledged = await add(client, "bench-stream", n)
                    acks[memory_id] = acknowledged
                    watched.append(seconds)
                    n += 1
                await asyncio.sleep(1)  # the block's last events
    delivery = [received[i] - at for i, at in acks.items() if i in received]
    add_alone, add_watched = percentiles(alone), percentiles(watched)
    return {
        "calls": calls,
        "events_received": len(delivery),
        "delivery_ms": percentiles(delivery),
        "delivery_min_ms": round(min(delivery) * 1000, 2),
        "add_without_subscriber": add_alone,
        "add_with_subscriber": add_watched,
        "add_p95_ratio": round(add_watched["p95_ms"] / add_alone["p95_ms"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        port = free_port()
        server = serve(embedded_env(data_dir), port)
        try:
            result = asyncio.run(measure(f"http://127.0.0.1:{port}", args.calls))
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
