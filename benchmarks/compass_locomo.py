"""COMPASS on real multi-session conversations: each LoCoMo conversation is a task and each of
its sessions a stage. Every turn is stored through the service (MemoryManager.add_batch, linked
to the stage), each stage is completed (extractive compression, the embedded default) and the
task's progress brief is built. Reports stage ratio, task ratio, critical-fact retention,
fallbacks and the context reduction at the end of each conversation.

    .venv/bin/python benchmarks/compass_locomo.py [path/to/locomo10.json] [--conversations N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentcore.adapters.db.migrate import upgrade
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds, StageType
from agentcore.domain.records import NewMemory

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
CYCLE = list(StageType)


def sessions(conversation: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    conv = conversation["conversation"]
    names = [k for k in conv if k.startswith("session_") and isinstance(conv[k], list)]
    names.sort(key=lambda k: int(k.split("_")[1]))
    return [(conv.get(f"{name}_date_time", ""), conv[name]) for name in names]


async def replay(
    container: Container, task_id: str, conversation: dict[str, Any]
) -> dict[str, Any]:
    stats: dict[str, Any] = {"ratios": [], "retention": [], "fallbacks": 0, "seconds": []}
    for index, (date, turns) in enumerate(sessions(conversation)):
        stage = await container.stages.start(task_id, CYCLE[index % len(CYCLE)].value)
        news = [
            NewMemory(
                f"{t['speaker']}: {t['text']}",
                ScopeIds(task_id=task_id),
                metadata={"speaker": t["speaker"], "session_date": date},
            )
            for t in turns
        ]
        for start in range(0, len(news), 100):
            await container.memory.add_batch(news[start : start + 100])
        started = time.perf_counter()
        done = await container.compass.complete_stage(task_id, stage.id)
        stats["seconds"].append(time.perf_counter() - started)
        memory = done.stage_memory
        assert memory is not None
        stats["ratios"].append(memory.compression_ratio or 0.0)
        stats["retention"].append(float(memory.quality_metrics["retention"]))
        stats["fallbacks"] += int(memory.fallback)
    progress = await container.compass.task_progress(task_id)
    raw = await container.compass.task_context(task_id, "raw")
    stage_level = await container.compass.task_context(task_id, "stage")
    task_level = await container.compass.task_context(task_id, "task")
    stats["task_ratio"] = progress.performance_metrics.get("avg_task_ratio")
    stats["raw_tokens"] = raw.token_count
    stats["stage_tokens"] = stage_level.token_count
    stats["task_tokens"] = task_level.token_count
    return stats


async def main(data: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp), stage_auto_transition=False)
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        try:
            results = [await replay(container, f"locomo-{i}", c) for i, c in enumerate(data)]
        finally:
            await container.aclose()
    ratios = [r for res in results for r in res["ratios"]]
    retention = [r for res in results for r in res["retention"]]
    seconds = sorted(s for res in results for s in res["seconds"])
    in_band = sum(8.0 <= r <= 12.0 for r in ratios)
    task_ratios = [res["task_ratio"] for res in results if res["task_ratio"]]
    raw = sum(res["raw_tokens"] for res in results)
    report = {
        "conversations": len(results),
        "stages": len(ratios),
        "stage_ratio": {
            "mean": round(statistics.fmean(ratios), 2),
            "min": round(min(ratios), 2),
            "max": round(max(ratios), 2),
            "within_10_to_1_pm_20pct": f"{in_band}/{len(ratios)}",
        },
        "task_ratio_mean": round(statistics.fmean(task_ratios), 2),
        "critical_fact_retention": {
            "mean": round(statistics.fmean(retention), 4),
            "min": round(min(retention), 4),
        },
        "fallbacks": sum(res["fallbacks"] for res in results),
        "context_reduction_vs_raw": {
            "stage_level": round(1 - sum(res["stage_tokens"] for res in results) / raw, 3),
            "task_level": round(1 - sum(res["task_tokens"] for res in results) / raw, 3),
        },
        "stage_completion_seconds": {
            "p50": round(statistics.median(seconds), 3),
            "p95": round(seconds[int(0.95 * (len(seconds) - 1))], 3),
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(json.loads(args.path.read_text())[: args.conversations]))
