"""A question asked again: ``memory.search`` with the query vectors kept
(``services/query_vectors.py``) against new questions, on the embedded default.

Starts ``agentcore serve`` in a fresh data directory, stores --memories LoCoMo turns in one
user's scope (``memory.add_batch``, waiting for their vectors), then times --queries searches
one at a time: distinct LoCoMo questions, the same question asked --queries times, then other
distinct questions (to see the cache did not slow new questions).

    .venv/bin/python benchmarks/repeated_queries.py [--memories 1000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_latency import corpus
from serving import running

BATCH = 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    turns, questions = corpus()
    n = args.queries
    with running("embedded") as (port, _), httpx.Client(timeout=60) as client:

        def call(method: str, params: dict[str, Any]) -> Any:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            reply = client.post(f"http://127.0.0.1:{port}/rpc", json=body).json()
            if "error" in reply:
                raise SystemExit(f"{method}: {reply['error']}")
            return reply["result"]

        for start in range(0, args.memories, BATCH):
            items = [{"content": turns[i % len(turns)], "user_id": "q"}
                     for i in range(start, min(start + BATCH, args.memories))]  # fmt: skip
            call("memory.add_batch", {"items": items, "wait_indexed": True})

        def timed(asked: list[str]) -> dict[str, float]:
            ms = []
            for question in asked:
                started = time.perf_counter()
                call("memory.search", {"query": question, "user_id": "q"})
                ms.append((time.perf_counter() - started) * 1000)
            ms.sort()
            p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
            return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(p95, 2)}

        timed(questions[:20])  # warm-up
        report = {
            "memories": args.memories,
            "distinct": timed(questions[100 : 100 + n]),
            "one question again and again": timed([questions[0]] * n),
            "distinct, after": timed(questions[100 + n : 100 + 2 * n]),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
