"""Speed and memory of the local MiniLM embedder (ad hoc; not a test).

    .venv/bin/python benchmarks/embedder_speed.py

Prints import and load time (load = reading and checking the weights, building the ONNX graph,
opening the onnxruntime session, loading the tokenizer), resident memory after load and its peak,
single-text latency p50/p95 through ``embed`` (the asyncio path, executor hop included), batch
throughput, and the lowest cosine against sentence-transformers' vectors in the test fixture.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "minilm_reference.json"

QUERIES = [
    "what does the user prefer for notifications?",
    "last deployment failure",
    "How did we fix the flaky Redis test in March?",
    "refund policy for annual plans",
]


def _rss_mib(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _short_sentences(count: int) -> list[str]:
    topics = ["billing", "deploys", "the user's calendar", "error budgets", "Qdrant", "onboarding"]
    return [
        f"Memory {i}: the agent noted a detail about {topics[i % len(topics)]} on day {i % 31}."
        for i in range(count)
    ]


async def main() -> None:
    started = time.perf_counter()
    from agentcore.adapters.embedders import LocalMiniLMEmbedder

    import_s = time.perf_counter() - started
    rss_before = _rss_mib()
    started = time.perf_counter()
    embedder = LocalMiniLMEmbedder()
    load_s = time.perf_counter() - started
    rss = _rss_mib()
    print(
        f"import: {import_s * 1000:.0f} ms; load: {load_s * 1000:.0f} ms; "
        f"RSS {rss:.0f} MiB (+{rss - rss_before:.0f} by loading, peak {_rss_mib('VmHWM'):.0f})"
    )

    reference = json.loads(FIXTURE.read_text("utf-8"))
    vectors = await embedder.embed(reference["sentences"])
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    cosines = np.sum(vectors * expected, axis=1, dtype=np.float64) / (
        np.linalg.norm(vectors, axis=1) * np.linalg.norm(expected, axis=1)
    )
    print(f"min cosine vs sentence-transformers over the fixture: {cosines.min():.8f}")

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
