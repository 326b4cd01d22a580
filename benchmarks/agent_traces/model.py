"""The traces the generator hands out: plain frozen values, no generator state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STAGES = ("planning", "execution", "reflection", "verification")
# Words that must occur, in natural use, in every stage of every trace.
KEYWORDS = ("tests", "plan", "verify", "check", "error", "failed", "strategy", "executed")


@dataclass(frozen=True, slots=True)
class TraceMemory:
    content: str
    critical: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlantedDetail:
    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class StageTrace:
    stage_type: str
    memories: tuple[TraceMemory, ...]
    constraints: tuple[str, ...]
    details: tuple[PlantedDetail, ...]


@dataclass(frozen=True, slots=True)
class TaskTrace:
    task_id: str
    domain: str
    goal: str
    stages: tuple[StageTrace, ...]
