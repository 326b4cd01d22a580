"""Compression metrics (issue 4 item 7): one row per stage or task compression in
``compression_metrics``, exported to Prometheus, and summarized per task for
``memory.task.progress``.

Prometheus collectors (registered on the registry passed in, the container's):

- ``agentcore_compression_factor`` histogram (input tokens / output tokens: 10 is 10:1; not a
  0-1 ratio, hence not ``_ratio``) by level and engine;
- ``agentcore_compression_retention_ratio`` histogram (critical-fact retention, 0-1) by level and
  engine, observed only when the retention was measured;
- ``agentcore_compressions_total`` by level, engine and fallback (``true`` when the quality check
  failed and a less aggressive ratio was used);
- ``agentcore_compression_cost_usd_total`` by level and engine;
- ``agentcore_compression_tokens_total`` by level and direction (input or output).

The collectors count what this process recorded (with ``PROMETHEUS_MULTIPROC_DIR``, ``/metrics``
sums every process's: the Celery workers', where compressions run in production); the table
holds every process's rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from agentcore.domain.clock import Clock
from agentcore.domain.compression_metrics import CompressionLevel, CompressionMetric, LevelSummary
from agentcore.domain.models import new_id
from agentcore.services.ports import UnitOfWorkFactory

MAX_ENGINE_LENGTH = 64
_RATIO_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 30.0, 50.0)
_RETENTION_BUCKETS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99, 1.0)


@dataclass(frozen=True, slots=True)
class CompressionSummary:
    task_id: str
    stage: LevelSummary | None
    task: LevelSummary | None

    def as_metrics(self) -> dict[str, float | int | None]:
        """Flat figures for a task's ``performance_metrics``."""
        levels = [s for s in (self.stage, self.task) if s is not None]
        stage, task = self.stage, self.task
        return {
            "stage_compressions": 0 if stage is None else stage.compressions,
            "avg_stage_ratio": None if stage is None else stage.avg_ratio,
            "avg_stage_retention": None if stage is None else stage.avg_retention,
            "task_compressions": 0 if task is None else task.compressions,
            "avg_task_ratio": None if task is None else task.avg_ratio,
            "compression_fallbacks": sum(s.fallbacks for s in levels),
            "compression_cost_usd": round(sum(s.cost_usd for s in levels), 6),
            "compression_tokens_in": sum(s.input_tokens for s in levels),
            "compression_tokens_out": sum(s.output_tokens for s in levels),
        }


class _Collectors:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.ratio = Histogram(
            "agentcore_compression_factor",
            "Compression ratio (input tokens / output tokens) by level and engine",
            ["level", "engine"],
            buckets=_RATIO_BUCKETS,
            registry=registry,
        )
        self.retention = Histogram(
            "agentcore_compression_retention_ratio",
            "Critical-fact retention (0-1) of compressions by level and engine",
            ["level", "engine"],
            buckets=_RETENTION_BUCKETS,
            registry=registry,
        )
        self.count = Counter(
            "agentcore_compressions_total",
            "Compressions by level, engine and whether the quality fallback was used",
            ["level", "engine", "fallback"],
            registry=registry,
        )
        self.dollars = Counter(
            "agentcore_compression_cost_usd_total",
            "Dollars spent on compressions by level and engine",
            ["level", "engine"],
            registry=registry,
        )
        self.tokens = Counter(
            "agentcore_compression_tokens_total",
            "Tokens into and out of compressions by level and direction",
            ["level", "direction"],
            registry=registry,
        )


class CompressionMetricsRecorder:
    """Stores and exports the metrics of each compression."""

    def __init__(self, uows: UnitOfWorkFactory, clock: Clock, registry: CollectorRegistry) -> None:
        self._uows = uows
        self._clock = clock
        self._collectors = _Collectors(registry)

    async def record(
        self,
        *,
        level: CompressionLevel | str,
        task_id: str,
        stage_id: str | None,
        input_tokens: int,
        output_tokens: int,
        ratio: float,
        retention: float | None,
        engine: str,
        fallback: bool,
        cost_usd: float = 0.0,
    ) -> CompressionMetric:
        """Store one compression's metrics, then export them. A stage compression names its
        stage; ``retention`` is None when it was not measured. Bad values raise ValueError."""
        metric = CompressionMetric(
            id=new_id(),
            level=CompressionLevel(level),
            task_id=task_id,
            stage_id=stage_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            ratio=ratio,
            retention=retention,
            engine=engine,
            fallback=fallback,
            cost_usd=cost_usd,
            created_at=self._clock(),
        )
        _validate(metric)
        async with self._uows() as uow:
            await uow.compression_metrics.add(metric)
            await uow.commit()
        self._export(metric)
        return metric

    async def summary(self, task_id: str) -> CompressionSummary:
        async with self._uows(read_only=True) as uow:
            levels = await uow.compression_metrics.summary(task_id)
        return CompressionSummary(
            task_id, levels.get(CompressionLevel.STAGE), levels.get(CompressionLevel.TASK)
        )

    def _export(self, m: CompressionMetric) -> None:
        c, level = self._collectors, m.level.value
        c.ratio.labels(level, m.engine).observe(m.ratio)
        if m.retention is not None:
            c.retention.labels(level, m.engine).observe(m.retention)
        c.count.labels(level, m.engine, "true" if m.fallback else "false").inc()
        c.dollars.labels(level, m.engine).inc(m.cost_usd)
        c.tokens.labels(level, "input").inc(m.input_tokens)
        c.tokens.labels(level, "output").inc(m.output_tokens)


def _validate(m: CompressionMetric) -> None:
    problems = []
    if not m.task_id:
        problems.append("task_id is required")
    if m.level is CompressionLevel.STAGE and not m.stage_id:
        problems.append("a stage compression needs its stage_id")
    if m.input_tokens < 0 or m.output_tokens < 0:
        problems.append("token counts must be non-negative")
    if not (math.isfinite(m.ratio) and m.ratio >= 0):
        problems.append("ratio must be a finite, non-negative number")
    if m.retention is not None and not 0.0 <= m.retention <= 1.0:
        problems.append("retention must be within 0-1")
    if not 0 < len(m.engine) <= MAX_ENGINE_LENGTH:
        problems.append(f"engine must be 1-{MAX_ENGINE_LENGTH} characters")
    if not (math.isfinite(m.cost_usd) and m.cost_usd >= 0):
        problems.append("cost_usd must be a finite, non-negative number")
    if problems:
        raise ValueError("; ".join(problems))
