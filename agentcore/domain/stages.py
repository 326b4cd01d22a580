"""COMPASS stages: the stage record, its compressed memory (level 2) and the task context
(level 3).

A stage is **declared** (an agent called ``memory.stage.start``, or named the stage in a
memory's metadata) or **detected** (``agentcore.domain.stage_detection`` started it). A
declared stage holds: every memory added under its task belongs to it until the agent
completes it or starts another, whatever the memories say (``Stage.holds``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from agentcore.domain.models import StageType


def iso(moment: datetime) -> str:
    """A UTC time as the API writes it (``2026-11-25T10:14:36.609394Z``), so a record read
    from a job is the record a method returns."""
    return moment.isoformat().replace("+00:00", "Z")


class StageOrigin(StrEnum):
    DECLARED = "declared"  # a caller named the stage: it holds against detection
    DETECTED = "detected"  # the detector started it: detection may move the task on


class StageStatus(StrEnum):
    ACTIVE = "active"  # the task's current stage; at most one per task
    COMPLETED = "completed"  # ended; compressed once a stage memory exists for it


@dataclass(frozen=True, slots=True)
class Stage:
    id: str
    task_id: str
    stage_type: StageType
    status: StageStatus
    started_at: datetime
    completed_at: datetime | None = None
    agent_id: str | None = None
    session_id: str | None = None
    reason: str = "explicit"  # why it started: "explicit" or a detection's reason
    # detection (signal, confidence, signals, trigger_memory_id), previous_stage_id (the stage
    # this one ended), complexity (declared by the agent at start)
    metadata: dict[str, Any] = field(default_factory=dict)
    origin: StageOrigin = StageOrigin.DECLARED
    detect_transitions: bool = False  # a declared stage the detector may still end

    @property
    def holds(self) -> bool:
        """Whether only a caller can end it (declared, and no detection asked for)."""
        return self.origin is StageOrigin.DECLARED and not self.detect_transitions

    def to_dict(self) -> dict[str, Any]:
        """The stage as JSON (``memory.stage.*`` results, job results)."""
        return {
            "id": self.id,
            "task_id": self.task_id,
            "stage_type": self.stage_type.value,
            "status": self.status.value,
            "started_at": iso(self.started_at),
            "completed_at": None if self.completed_at is None else iso(self.completed_at),
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "origin": self.origin.value,
            "detect_transitions": self.detect_transitions,
            "reason": self.reason,
            "detection": self.metadata.get("detection"),
            "metadata": {k: v for k, v in self.metadata.items() if k != "detection"},
        }


@dataclass(frozen=True, slots=True)
class StageMemory:
    """A completed stage compressed (level 2); its raw memories stay stored and linked."""

    stage_id: str
    task_id: str
    summary: str
    insights: tuple[str, ...]
    critical_facts: tuple[str, ...]
    raw_memory_ids: tuple[str, ...]
    compression_ratio: float | None  # input tokens / output tokens
    quality_metrics: dict[str, Any]
    engine: str  # "llm" or "extractive"
    fallback: bool  # a less aggressive ratio was used after a failed quality check
    cost_usd: float
    tokens_in: int
    tokens_out: int
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """The stage memory as JSON (``memory.stage.complete`` and its job's result)."""
        return {
            "stage_id": self.stage_id,
            "task_id": self.task_id,
            "summary": self.summary,
            "insights": list(self.insights),
            "critical_facts": list(self.critical_facts),
            "raw_memory_ids": list(self.raw_memory_ids),
            "compression_ratio": self.compression_ratio,
            "quality_metrics": self.quality_metrics,
            "engine": self.engine,
            "fallback": self.fallback,
            "cost_usd": self.cost_usd,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "created_at": iso(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class TaskContext:
    """A task's progress brief over its stage summaries (level 3)."""

    task_id: str
    progress_summary: str
    current_stage_id: str | None
    completed_stage_ids: tuple[str, ...]
    critical_constraints: tuple[str, ...]
    performance_metrics: dict[str, Any]
    updated_at: datetime


def parse_stage_type(value: object) -> StageType | None:
    """The stage type a string names (case and surrounding blanks ignored), else None."""
    if not isinstance(value, str):
        return None
    try:
        return StageType(value.strip().lower())
    except ValueError:
        return None
