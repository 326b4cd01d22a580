"""Speed and memory of the local embedders, side by side (ad hoc; not a test).

    .venv/bin/python benchmarks/embedder_speed.py [--model e5|minilm|all] [--fp32]

Each model runs in a process of its own (so resident memory is its own), one after the other:
import and load time (reading and checking the weights, building the ONNX graph, opening the
onnxruntime session, the tokenizer), resident memory after load and its peak, query latency
p50/p95 through ``embed_query`` (the path a search takes, executor hop included), stored-text
throughput through ``embed`` on one thread (short sentences, and texts of 256+ tokens), and
how its linear layers run. ``--fp32`` runs MiniLM's fp32 graph instead of int8.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

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


async def measure(model: str, fp32: bool) -> dict[str, Any]:
    rss_start = _rss_mib()
    started = time.perf_counter()
    from agentcore.adapters.embedders import LocalE5Embedder, LocalMiniLMEmbedder

    import_s = time.perf_counter() - started
    rss_before = _rss_mib()
    started = time.perf_counter()
    embedder = LocalE5Embedder() if model == "e5" else LocalMiniLMEmbedder(int8=not fp32)
    load_s = time.perf_counter() - started
    result: dict[str, Any] = {
        "model": embedder.model_name,
        "precision": embedder.precision,
        "import_ms": round(import_s * 1000),
        "load_ms": round(load_s * 1000),
        "rss_mib": round(_rss_mib()),
        "rss_added_by_load_mib": round(_rss_mib() - rss_before),
        "rss_before_import_mib": round(rss_start),
    }
    for query in QUERIES * 5:  # warm-up
        await embedder.embed_query(query)
    latencies = []
    for i in range(300):
        started = time.perf_counter()
        await embedder.embed_query(QUERIES[i % len(QUERIES)])
        latencies.append((time.perf_counter() - started) * 1000)
    result["query_p50_ms"] = round(statistics.median(latencies), 2)
    result["query_p95_ms"] = round(float(np.percentile(latencies, 95)), 2)
    for name, texts in [
        ("short_texts_per_s", _short_sentences(512)),
        ("long_texts_per_s", [" ".join(_short_sentences(20))] * 64),
    ]:
        await embedder.embed(texts[:8])
        started = time.perf_counter()
        await embedder.embed(texts)
        result[name] = round(len(texts) / (time.perf_counter() - started), 1)
    result["rss_end_mib"] = round(_rss_mib())
    result["rss_peak_mib"] = round(_rss_mib("VmHWM"))
    await embedder.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["e5", "minilm", "all"], default="all")
    parser.add_argument("--fp32", action="store_true", help="MiniLM's fp32 graph")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure(args.model, args.fp32))))
        return
    models = ["minilm", "e5"] if args.model == "all" else [args.model]
    for model in models:
        command = [sys.executable, __file__, "--child", "--model", model]
        output = subprocess.run(
            command + (["--fp32"] if args.fp32 else []),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(output.strip().splitlines()[-1])
        print(", ".join(f"{key} {value}" for key, value in result.items()))


if __name__ == "__main__":
    main()
