"""Extractive stage compression: latency for 100 raw memories (DESIGN §7 target: p95 ≤ 300 ms),
and ratio / critical-fact retention with every LoCoMo session treated as one stage, then each
conversation's stage summaries compressed into a task brief (target 5:1).

Memories are consecutive LoCoMo turns (../shared/data/locomo) joined until each holds 20-60
words; without the data set, generated agent-log sentences stand in. Each timed call compresses
a different window of 100 memories with the real BPE counter (o200k), one process, no warm cache.

    .venv/bin/python benchmarks/compression_speed.py [--runs 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentcore.adapters.compressors import ExtractiveEngine
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.compass.drafts import CompressionItem, CompressionResult, StageSummary

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def conversations() -> list[dict[str, Any]]:
    return json.loads(LOCOMO.read_text()) if LOCOMO.is_file() else []


def memories(data: list[dict[str, Any]]) -> list[CompressionItem]:
    """Consecutive turns joined into memories of 20-60 words."""
    turns = [
        (t["speaker"], t["text"])
        for c in data
        for key, session in c["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for t in session
    ]
    if not turns:
        rng = random.Random(7)
        verbs = ["ran", "checked", "patched", "deployed", "reviewed", "measured", "retried"]
        things = ["the billing tests", "the cache", "the schema", "the queue", "the CI job"]
        turns = [
            ("agent", f"The agent {rng.choice(verbs)} {rng.choice(things)} at step {n}. "
             f"It took {rng.randint(2, 90)} seconds and {rng.choice(['passed', 'failed'])}.")
            for n in range(4000)
        ]  # fmt: skip
    items: list[CompressionItem] = []
    speaker, words = "", []
    for who, text in turns:
        if len(words) >= 20:
            items.append(_item(len(items), speaker, " ".join(words)))
            words = []
        speaker = who
        words += text.split()
        if len(words) > 60:
            items.append(_item(len(items), speaker, " ".join(words[:60])))
            words = []
    return items


def _item(n: int, speaker: str, text: str) -> CompressionItem:
    return CompressionItem(
        f"m{n}", text, created_at=T0 + timedelta(seconds=n), metadata={"speaker": speaker}
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


async def latency(compressor: ContextCompressor, items: list[CompressionItem], runs: int) -> None:
    samples, results = [], []
    step = max((len(items) - 100) // runs, 1)
    for run in range(runs):
        window = items[run * step : run * step + 100]
        started = time.perf_counter()
        results.append(await compressor.compress_stage(window))
        samples.append((time.perf_counter() - started) * 1000)
    words = [len(i.content.split()) for i in items[: runs * step + 100]]
    print(f"stage compression of 100 memories ({min(words)}-{max(words)} words each), {runs} runs:")
    print(
        f"  p50 {statistics.median(samples):.1f} ms, p95 {percentile(samples, 0.95):.1f} ms, "
        f"max {max(samples):.1f} ms"
    )
    print(f"  input {statistics.mean(r.input_tokens for r in results):.0f} tokens on average")
    _quality("  ", results)


def _quality(indent: str, results: list[CompressionResult]) -> None:
    ratios = [r.ratio for r in results]
    in_band = sum(8 <= r <= 12 for r in ratios)
    print(
        f"{indent}ratio mean {statistics.mean(ratios):.2f} (min {min(ratios):.2f}, "
        f"max {max(ratios):.2f}), within 10:1 ±20%: {in_band}/{len(results)}; retention mean "
        f"{statistics.mean(r.retention for r in results):.3f} (min "
        f"{min(r.retention for r in results):.3f}); fallbacks "
        f"{sum(r.fallback for r in results)}; contradictions "
        f"{sum(len(r.contradictions) for r in results)}; critical facts "
        f"{sum(len(r.critical_facts) for r in results)}"
    )


async def sessions_as_stages(compressor: ContextCompressor, data: list[dict[str, Any]]) -> None:
    stage_results, task_results = [], []
    for conversation in data:
        summaries = []
        for key, session in conversation["conversation"].items():
            if not (key.startswith("session_") and isinstance(session, list)):
                continue
            items = [_item(n, t["speaker"], t["text"]) for n, t in enumerate(session)]
            result = await compressor.compress_stage(items)
            stage_results.append(result)
            summaries.append(StageSummary(key, "execution", result.summary, result.critical_facts))
        task_results.append(await compressor.compress_task(summaries))
    print(f"LoCoMo, each session one stage ({len(stage_results)} sessions):")
    _quality("  ", stage_results)
    ratios = [r.ratio for r in task_results]
    print(
        f"task briefs over those stage summaries ({len(task_results)} conversations): ratio "
        f"mean {statistics.mean(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}), "
        f"within 5:1 ±20%: {sum(4 <= r <= 6 for r in ratios)}/{len(ratios)}, retention min "
        f"{min(r.retention for r in task_results):.3f}, fallbacks "
        f"{sum(r.fallback for r in task_results)}"
    )


async def main(runs: int) -> None:
    counter = BpeTokenCounter()
    compressor = ContextCompressor(ExtractiveEngine(counter), counter)
    data = conversations()
    await latency(compressor, memories(data), runs)
    if data:
        await sessions_as_stages(compressor, data)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    asyncio.run(main(parser.parse_args().runs))
