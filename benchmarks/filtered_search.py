"""memory.search latency with filters (issue 21), through the public API on the embedded default.

Starts `agentcore serve` (SQLite file, qdrant-edge, local ONNX embedder) in a fresh data
directory, loads N memories into one scope with memory.add_batch (short texts of a small
vocabulary; metadata with a city, a number and a nested age; 0-2 of three tags; importance at
random), then times memory.search over HTTP, one call at a time, for each kind of filter
(after warm-up searches of every kind): none; a string equality on metadata (the vector
payload decides it: no widening); a nested range inside an OR (not in the payload: the dense
side is widened); importance (not in the payload); a NOT of a metadata string list.

    .venv/bin/python benchmarks/filtered_search.py [--memories 1000] [--calls 150]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import embedded_env, free_port, serve

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "box",
    "shelf",
    "item",
    "note",
    "project",
    "deploy",
    "review",
    "meeting",
    "lunch",
    "travel",
]
CITIES = ("Berlin", "Paris", "Munich", "Lisbon", "Oslo")
FILTERS: dict[str, dict[str, Any] | None] = {
    "no filter": None,
    "metadata string equality": {"city": "Berlin"},
    "nested range in an OR": {
        "profile.age": {"gte": 30},
        "OR": [{"tags": "red"}, {"n": {"lt": 10}}],
    },
    "importance range": {"importance": {"gt": 0.8}},
    "NOT of a metadata list": {"NOT": [{"city": {"in": ["Berlin", "Paris"]}}]},
}
_ids = itertools.count(1)


def call(client: httpx.Client, method: str, **params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    reply = client.post("/rpc", json=body).json()
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["result"]


def load(client: httpx.Client, memories: int, rng: random.Random) -> None:
    for start in range(0, memories, 100):
        items = [
            {
                "content": " ".join(rng.choices(WORDS, k=8)) + f" number {i}",
                "user_id": "bench",
                "metadata": {
                    "city": rng.choice(CITIES),
                    "n": i % 50,
                    "profile": {"age": 20 + i % 30},
                },
                "tags": rng.sample(["red", "blue", "green"], k=rng.randint(0, 2)),
                "importance": round(rng.random(), 2),
            }
            for i in range(start, min(start + 100, memories))
        ]
        call(client, "memory.add_batch", items=items)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=150)
    args = parser.parse_args()
    rng = random.Random(1)
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        server = serve(embedded_env(data), port)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                for _ in range(300):
                    try:
                        client.get("/readyz").raise_for_status()
                        break
                    except httpx.HTTPError:
                        time.sleep(0.2)
                load(client, args.memories, rng)
                for _ in range(30):
                    for flt in FILTERS.values():
                        query = " ".join(rng.choices(WORDS, k=4))
                        call(client, "memory.search", query=query, user_id="bench", filter=flt)
                report: dict[str, Any] = {"memories_in_scope": args.memories}
                for name, flt in FILTERS.items():
                    times = []
                    for _ in range(args.calls):
                        query = " ".join(rng.choices(WORDS, k=4))
                        started = time.perf_counter()
                        call(client, "memory.search", query=query, user_id="bench", filter=flt)
                        times.append((time.perf_counter() - started) * 1000)
                    times.sort()
                    report[name] = {
                        "p50_ms": round(statistics.median(times), 2),
                        "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
                    }
        finally:
            server.terminate()
            server.wait(30)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
