"""COMPASS on realistic agent traces: generated multi-stage tasks of ordinary agent sentences
(``agent_traces``: planning, execution with tool output, reflection on errors, verification),
with planted critical constraints and planted answerable details, stored through the service
(``memory.add_batch`` into declared stages) and compressed by ``memory.stage.complete``'s
service call on the embedded default (extractive engine), then ``memory.task.progress``.

Reported per stage type:

- ratio: tokens of the stage's raw memories / tokens of its summary, counted here with the
  project's tokenizer (o200k), and how many stages fall within 10:1 ±20%;
- relaxed: stages whose target was made gentler to keep their critical facts (the record's
  ``ratio_reasons``);
- critical retention: planted constraints the summary retains (``missing_facts``), and
  flagged memories found word for word in ``critical_facts``;
- details answerable: planted answers found in the summary (exact text, case ignored);
- ms per 100 memories: ``complete_stage`` (read, compress, store) per 100 raw memories.

And per task: the brief's ratio over the stage summaries and the planted constraints kept in
``critical_constraints``.

    .venv/bin/python benchmarks/compass_traces.py [--tasks 20] [--seed 1] [--size mixed]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_traces import STAGES, TaskTrace, generate_traces

from agentcore.adapters.db.migrate import upgrade
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.fact_checks import missing_facts
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory

TOKENS = BpeTokenCounter()


async def replay(
    container: Container, trace: TaskTrace
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = []
    for stage in trace.stages:
        started = await container.stages.start(trace.task_id, stage.stage_type)
        news = [
            NewMemory(m.content, ScopeIds(task_id=trace.task_id), metadata=dict(m.metadata),
                      critical=m.critical)
            for m in stage.memories
        ]  # fmt: skip
        for first in range(0, len(news), 100):
            await container.memory.add_batch(news[first : first + 100])
        clock = time.perf_counter()
        done = await container.compass.complete_stage(trace.task_id, started.id)
        seconds = time.perf_counter() - clock
        memory = done.stage_memory
        assert memory is not None
        raw = "\n".join(m.content for m in stage.memories)
        summary = memory.summary
        flagged = [m.content for m in stage.memories if m.critical]
        rows.append(
            {
                "stage_type": stage.stage_type,
                "memories": len(stage.memories),
                "ratio": TOKENS.count(raw) / max(TOKENS.count(summary), 1),
                "reported_ratio": memory.compression_ratio,
                "relaxed": any(
                    "critical facts" in r for r in memory.quality_metrics["ratio_reasons"]
                ),
                "constraints": len(stage.constraints),
                "constraints_kept": len(stage.constraints)
                - len(missing_facts(list(stage.constraints), summary)),
                "flagged": len(flagged),
                "flagged_verbatim": sum(text in memory.critical_facts for text in flagged),
                "details": len(stage.details),
                "details_answerable": sum(
                    d.answer.lower() in summary.lower() for d in stage.details
                ),
                "ms_per_100": seconds * 1000 * 100 / len(stage.memories),
            }
        )
    progress = await container.compass.task_progress(trace.task_id)
    planted = [c for stage in trace.stages for c in stage.constraints]
    listed = "\n".join(progress.critical_constraints)
    task = {
        "brief_ratio": progress.performance_metrics.get("brief_compression_ratio"),
        "constraints": len(planted),
        "constraints_kept": len(planted) - len(missing_facts(planted, listed)),
    }
    return rows, task


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def report(rows: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[row["stage_type"]].append(row)
    out: dict[str, Any] = {}
    for stage_type in (*STAGES, "all"):
        group = rows if stage_type == "all" else by_type[stage_type]
        ratios = [r["ratio"] for r in group]
        ms = [r["ms_per_100"] for r in group]

        def share(kept: str, total: str, group: list[dict[str, Any]] = group) -> float | None:
            whole = sum(r[total] for r in group)
            return round(sum(r[kept] for r in group) / whole, 4) if whole else None

        out[stage_type] = {
            "stages": len(group),
            "memories_mean": round(statistics.fmean(r["memories"] for r in group), 1),
            "ratio_mean": round(statistics.fmean(ratios), 2),
            "ratio_min_max": [round(min(ratios), 2), round(max(ratios), 2)],
            "within_10_pm_20pct": f"{sum(8 <= r <= 12 for r in ratios)}/{len(ratios)}",
            "relaxed_for_critical_facts": sum(r["relaxed"] for r in group),
            "critical_retention": share("constraints_kept", "constraints"),
            "flagged_verbatim": share("flagged_verbatim", "flagged"),
            "details_answerable": share("details_answerable", "details"),
            "ms_per_100_p50": round(statistics.median(ms), 1),
            "ms_per_100_p95": round(_percentile(ms, 0.95), 1),
            "reported_equals_measured": all(
                abs(r["ratio"] - r["reported_ratio"]) < 0.01 for r in group
            ),
        }
    out["task"] = {
        "tasks": len(tasks),
        "brief_ratio_mean": round(statistics.fmean(t["brief_ratio"] for t in tasks), 2),
        "brief_ratio_min_max": [
            round(min(t["brief_ratio"] for t in tasks), 2),
            round(max(t["brief_ratio"] for t in tasks), 2),
        ],
        "constraints_kept": f"{sum(t['constraints_kept'] for t in tasks)}/"
        f"{sum(t['constraints'] for t in tasks)}",
    }
    return out


async def main(traces: list[TaskTrace]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp))
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        rows: list[dict[str, Any]] = []
        tasks = []
        try:
            for trace in traces:
                stage_rows, task = await replay(container, trace)
                rows += stage_rows
                tasks.append(task)
        finally:
            await container.aclose()
    return report(rows, tasks)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", choices=["mixed", "small"], default="mixed")
    args = parser.parse_args()
    generated = generate_traces(args.tasks, args.seed, size=args.size)
    print(json.dumps(asyncio.run(main(generated)), indent=2))
