"""One compression's measured quality (a row of ``compression_metrics``) and their averages."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class CompressionLevel(StrEnum):
    STAGE = "stage"  # raw memories of one stage → stage summary (target 10:1)
    TASK = "task"  # stage summaries of a task → progress brief (target 5:1)


@dataclass(frozen=True, slots=True)
class CompressionMetric:
    id: str
    level: CompressionLevel
    task_id: str
    stage_id: str | None
    input_tokens: int
    output_tokens: int
    ratio: float
    retention: float | None  # critical-fact retention, 0-1; None when not measured
    engine: str
    fallback: bool
    cost_usd: float
    created_at: datetime


@dataclass(frozen=True, slots=True)
class LevelSummary:
    """The compressions of one level for a task. Averages are means over compressions;
    ``avg_retention`` is over those with a measured retention (None when none has)."""

    compressions: int
    input_tokens: int
    output_tokens: int
    avg_ratio: float
    avg_retention: float | None
    fallbacks: int
    cost_usd: float
