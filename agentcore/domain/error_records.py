"""Error memory (FR-4): the error record, its types, and the patterns found in error streams.

Error types are the four COMPASS failure modes. A pattern is a regularity in a stream of error
records that an agent can act on: ``frequency`` (one type recurs), ``sequence`` (errors of one
type are repeatedly followed by errors of another) and ``context`` (errors recur in a similar
context). Each pattern carries a severity in [0, 1] and a concrete recommendation.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from agentcore.domain.errors import InvalidParams
from agentcore.domain.models import ScopeIds, StageType
from agentcore.domain.records import NewMemory

MAX_DESCRIPTION = 4_000  # characters of an error's description
MAX_RECOVERY = 4_000  # characters of a recovery action
MAX_CONTEXT_JSON = 16_000  # characters of an error's context, serialized as JSON
# metadata.kind of the memories stored for an error and for its recovery.
ERROR_KIND = "error"
RECOVERY_KIND = "recovery"
MEMORY_SOURCE = "error_tracker"
_CONTEXT_CHARS = 1_000  # of an error's context quoted in its memory
_MEMORY_IDS = uuid.UUID("5b0f4f3e-7c1d-4a8e-9a51-0e6c2f1d9e7a")  # uuid5 namespace


class ErrorType(StrEnum):
    HALLUCINATION = "hallucination"
    MISSING_INFO = "missing_info"
    INCORRECT_ACTION = "incorrect_action"
    CONTEXT_DEGRADATION = "context_degradation"


class PatternType(StrEnum):
    FREQUENCY = "frequency"
    SEQUENCE = "sequence"
    CONTEXT = "context"


class PatternSource(StrEnum):
    STATISTICAL = "statistical"  # found by counting and clustering (``error_patterns``)
    LLM = "llm"  # proposed by a language model over the same records, then checked


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """One error an agent made during a task (FR-4.1).

    ``stage_type`` is the type of the stage ``stage_id`` names, when the stage is known; it is
    read from the stage, never stored twice.
    """

    id: str
    task_id: str
    error_type: ErrorType
    description: str
    severity: float  # 0 (harmless) to 1 (the task failed)
    created_at: datetime
    stage_id: str | None = None
    agent_id: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    recovery_action: str | None = None
    stage_type: StageType | None = None


@dataclass(frozen=True, slots=True)
class ErrorPattern:
    """A regularity over ``occurrences`` error records; ``error_ids`` are those records, newest
    first. ``severity`` is in [0, 1] (see ``error_patterns.pattern_severity``)."""

    pattern_type: PatternType
    error_types: tuple[ErrorType, ...]
    occurrences: int
    severity: float
    description: str
    recommendation: str
    error_ids: tuple[str, ...]
    source: PatternSource = PatternSource.STATISTICAL


@dataclass(frozen=True, slots=True)
class ErrorQuery:
    """Records matching every filter given, newest first (``created_at``, then ``id``)."""

    task_id: str | None = None
    agent_id: str | None = None
    stage_type: StageType | None = None
    min_severity: float | None = None
    limit: int = 20


# What an agent should do about each kind of error: the recommendations are built from these.
ADVICE = {
    ErrorType.HALLUCINATION: (
        "verify facts against retrieved memories and sources before answering, and say so "
        "when a fact is unknown instead of guessing"
    ),
    ErrorType.MISSING_INFO: (
        "gather the missing inputs before acting: search memory and the task context for them, "
        "or ask for them"
    ),
    ErrorType.INCORRECT_ACTION: (
        "check the action's preconditions and expected outcome against past procedures and "
        "recoveries before executing it"
    ),
    ErrorType.CONTEXT_DEGRADATION: (
        "refresh the working context: re-read the task progress brief and its critical "
        "constraints, and compress completed stages"
    ),
}


def parse_error_type(value: str) -> ErrorType:
    try:
        return ErrorType(value)
    except ValueError:
        allowed = ", ".join(t.value for t in ErrorType)
        raise InvalidParams(
            f"unknown error type {value!r}; expected one of: {allowed}",
            errors=[{"field": "error_type", "message": f"one of: {allowed}"}],
        ) from None


def check_severity(value: float, name: str = "severity") -> float:
    if not 0.0 <= value <= 1.0:
        raise InvalidParams(
            f"{name} must be between 0 and 1", errors=[{"field": name, "message": "0 to 1"}]
        )
    return value


def check_text(value: str, name: str, max_length: int) -> str:
    """A non-blank text of at most ``max_length`` characters, stripped."""
    text = value.strip()
    if not text:
        raise InvalidParams(f"{name} is blank", errors=[{"field": name, "message": "blank"}])
    if len(text) > max_length:
        raise InvalidParams(
            f"{name} has {len(text)} characters; the limit is {max_length}",
            errors=[{"field": name, "message": f"at most {max_length} characters"}],
        )
    return text


def memory_id(error_id: str, kind: str) -> str:
    """The id of an error's memory of ``kind`` (``ERROR_KIND`` or ``RECOVERY_KIND``)."""
    return str(uuid.uuid5(_MEMORY_IDS, f"{kind}:{error_id}"))


def error_memories(record: ErrorRecord, max_length: int) -> list[NewMemory]:
    """What an error teaches, as critical memories (FR-4.4): the error as an episodic memory
    of its task and, when a recovery action is known, the recovery as a procedural memory of
    the agent (a lesson for its other tasks too), else of the task. Both are linked to the
    error's stage and carry ``error_id``, ``error_type`` and ``task_id`` in their metadata."""
    situation = render_context(record.context)
    where = f" Context: {situation}." if situation else ""
    kind = record.error_type.value
    metadata = {"error_id": record.id, "error_type": kind, "task_id": record.task_id}
    scope = ScopeIds(task_id=record.task_id, agent_id=record.agent_id)
    text = f"Error ({kind}, severity {record.severity:.2f}): {record.description}{where}"
    memories = [
        NewMemory(
            content=_fit(text, max_length),
            scope=scope,
            scope_level="task",
            layer="episodic",
            metadata={**metadata, "kind": ERROR_KIND, "severity": record.severity},
            tags=(ERROR_KIND, kind),
            critical=True,
            stage_id=record.stage_id,
            source=MEMORY_SOURCE,
            id=memory_id(record.id, ERROR_KIND),
            importance=max(0.5, record.severity),
        )
    ]
    if record.recovery_action is not None:
        text = (
            f"Recovery from a {kind} error: {record.recovery_action} "
            f"The error: {record.description}{where}"
        )
        memories.append(
            NewMemory(
                content=_fit(text, max_length),
                scope=scope,
                scope_level="task" if record.agent_id is None else "agent",
                layer="procedural",
                metadata={**metadata, "kind": RECOVERY_KIND},
                tags=(RECOVERY_KIND, kind),
                critical=True,
                stage_id=record.stage_id,
                source=MEMORY_SOURCE,
                id=memory_id(record.id, RECOVERY_KIND),
                importance=max(0.7, record.severity),
            )
        )
    return memories


def render_context(context: Mapping[str, Any]) -> str:
    """``key=value`` pairs of the top-level context, for people and for the lexical index."""
    parts = []
    for key, value in context.items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        parts.append(f"{key}={shown}")
    return _fit(", ".join(parts), _CONTEXT_CHARS)


def _fit(text: str, max_length: int) -> str:
    return text if len(text) <= max_length else text[: max_length - 1] + "…"
