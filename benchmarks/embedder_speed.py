"""Speed and memory of the local MiniLM embedder (ad hoc; not a test).

    .venv/bin/python benchmarks/embedder_speed.py

Prints load time, resident memory after load, single-text latency p50/p95 through ``embed`` (the
asyncio path, executor hop included) and batch throughput.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import numpy as np

from agentcore.adapters.embedders import LocalMiniLMEmbedder

QUERIES = [
    "what does the user prefer for notifications?",
    "last deployment failure",
    "How did we fix the flaky Redis test in March?",
    "refund policy for annual plans",
]


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _short_sentences(count: int) -> list[str]:
    topics = ["billing", "deploys", "the user's calendar", "error budgets", "Qdrant", "onboarding"]
    return [
        f"Memory {i}: the agent noted a detail about {topics[i % len(topics)]} on day {i % 31}."
        for i in range(count)
    ]


async def main() -> None:
    rss_before = _rss_mib()
    started = time.perf_counter()
    embedder = LocalMiniLMEmbedder()
    load_s = time.perf_counter() - started
    rss = _rss_mib()
    print(f"load: {load_s * 1000:.0f} ms; RSS {rss:.0f} MiB (+{rss - rss_before:.0f} by loading)")

    for query in QUERIES * 5:  # warm-up
        await embedder.embed([query])
    latencies = []
    for i in range(200):
        started = time.perf_counter()
        await embedder.embed([QUERIES[i % len(QUERIES)]])
        latencies.append((time.perf_counter() - started) * 1000)
    p50 = statistics.median(latencies)
    p95 = float(np.percentile(latencies, 95))
    print(f"single text, 200 calls: p50 {p50:.1f} ms, p95 {p95:.1f} ms")

    for name, texts in [
        ("256 short sentences", _short_sentences(256)),
        ("64 texts of 256+ tokens", [" ".join(_short_sentences(20))] * 64),
    ]:
        await embedder.embed(texts[:8])
        started = time.perf_counter()
        await embedder.embed(texts)
        elapsed = time.perf_counter() - started
        print(f"{name}: {elapsed:.2f} s, {len(texts) / elapsed:.0f} texts/s")
    print(f"RSS at the end: {_rss_mib():.0f} MiB")
    await embedder.close()


if __name__ == "__main__":
    asyncio.run(main())
