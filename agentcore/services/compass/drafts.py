"""What a compression engine is given and what it gives back: the raw items of a stage (or
the summaries of a task), one draft request, the draft, the check of each attempt, the final
result, and the signals that adapt the target ratio (FR-3.4). ``ContextCompressor``
(``compression``) runs engines over these; engines (``adapters/compressors``) write drafts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from agentcore.domain.critical_facts import CriticalFact
from agentcore.domain.errors import InvalidParams
from agentcore.domain.fact_checks import Contradiction
from agentcore.domain.usage import TokenUsage

MIN_TARGET_RATIO = 1.5
Level = Literal["stage", "task"]


@dataclass(frozen=True, slots=True)
class CompressionItem:
    """A raw memory of one stage (or, for task compression, one stage summary)."""

    memory_id: str
    content: str
    critical: bool = False
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    stage_id: str | None = None

    @property
    def label(self) -> str | None:
        """Who said it (``metadata.speaker`` or ``name``) or, for a stage, its type."""
        for key in ("speaker", "name", "label"):
            value = self.metadata.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None


@dataclass(frozen=True, slots=True)
class StageSummary:
    """A completed stage's summary, the input of task compression."""

    stage_id: str
    stage_type: str
    summary: str
    critical_facts: Sequence[CriticalFact] = ()
    completed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ErrorPattern:
    """Errors of the same type or message seen ``occurrences`` times within one stage."""

    signature: str
    occurrences: int
    example: str
    memory_ids: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CompressionRequest:
    """One draft to write. Token counts are of the summary: aim at ``budget_tokens``, never
    under ``min_tokens``; critical facts may use the room up to ``max_tokens``."""

    level: Level
    items: Sequence[CompressionItem]
    critical_facts: Sequence[CriticalFact]
    target_ratio: float
    budget_tokens: int
    min_tokens: int
    max_tokens: int
    verbatim_facts: bool = False  # the last resort: every fact word for word, whatever the size
    lost_facts: Sequence[str] = ()  # facts a previous draft lost (an LLM is told)
    key_facts: Sequence[CriticalFact] = ()  # decisions, fixes, identifiers: keep when they fit
    listed_facts: Sequence[CriticalFact] = ()  # kept beside the summary: not worth repeating


@dataclass(frozen=True, slots=True)
class Draft:
    summary: str
    insights: tuple[str, ...] = ()
    critical_facts: tuple[str, ...] = ()  # extra facts the engine found (LLM), beyond the request's
    error_patterns: tuple[ErrorPattern, ...] = ()
    usage: TokenUsage | None = None  # tokens of the model calls, None without a model


class CompressionEngine(Protocol):
    """Writes one draft summary. Raises ``ProviderError`` (retryable) when its provider fails."""

    @property
    def name(self) -> str: ...

    async def draft(self, request: CompressionRequest) -> Draft: ...


@dataclass(frozen=True, slots=True)
class Attempt:
    engine: str
    target_ratio: float
    ratio: float
    retention: float
    contradictions: int
    ratio_ok: bool
    passed: bool
    verbatim_facts: bool = False
    error: str | None = None  # the error code when the engine failed
    repaired: bool = False  # the draft lost facts and passed once they were appended

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CompressionResult:
    summary: str
    insights: tuple[str, ...]
    critical_facts: tuple[CriticalFact, ...]
    error_patterns: tuple[ErrorPattern, ...]
    input_tokens: int
    output_tokens: int
    ratio: float  # input_tokens / output_tokens
    target_ratio: float  # the target of the first attempt (after adaptation)
    retention: float  # critical-fact retention, 0-1
    contradictions: tuple[Contradiction, ...]
    engine: str  # the engine of the accepted draft
    fallback: bool  # the first attempt failed the quality check
    attempts: tuple[Attempt, ...]
    usage: TokenUsage | None  # model tokens of every attempt (for the cost tracker)
    passed: bool = True  # the accepted draft passed the check (False only past the last resort)
    kept_whole: bool = False  # the input was too small to compress
    ratio_reasons: tuple[str, ...] = ()  # why the target or the achieved ratio is not the base
    key_facts: tuple[CriticalFact, ...] = ()  # preferred, not required (``REQUIRED_KINDS``)
    key_retention: float = 1.0  # share of the key facts the summary retains

    def quality_metrics(self) -> dict[str, Any]:
        """The check's numbers, JSON-able (``stage_memories.quality_metrics``)."""
        return {
            "retention": round(self.retention, 4),
            "ratio": round(self.ratio, 3),
            "target_ratio": round(self.target_ratio, 3),
            "contradictions": len(self.contradictions),
            "passed": self.passed,
            "kept_whole": self.kept_whole,
            "fallback": self.fallback,
            "ratio_reasons": list(self.ratio_reasons),
            "key_facts": len(self.key_facts),
            "key_fact_retention": round(self.key_retention, 4),
            "repaired": bool(self.attempts) and self.attempts[-1].repaired,
            "repaired_drafts": sum(1 for a in self.attempts if a.repaired),
            # the engine that took over from the first one (an LLM's drafts failed the check)
            "replaced_by": None
            if not self.attempts or self.attempts[0].engine == self.engine
            else self.engine,
            "attempts": [a.to_dict() for a in self.attempts],
        }


@dataclass(frozen=True, slots=True)
class Aggressiveness:
    """Signals for the adaptive target (FR-3.4), each 0-1: task complexity, error rate of the
    task, share of the token budget already used, and the retention of recent compressions."""

    complexity: float = 0.0
    error_rate: float = 0.0
    budget_used: float = 0.0
    recent_retention: float | None = None

    def __post_init__(self) -> None:
        values = {
            "complexity": self.complexity,
            "error_rate": self.error_rate,
            "budget_used": self.budget_used,
            "recent_retention": self.recent_retention,
        }
        wrong = [name for name, v in values.items() if v is not None and not 0 <= v <= 1]
        if wrong:
            raise InvalidParams("aggressiveness signals must be between 0 and 1", errors=wrong)

    def describe(self) -> str:
        """The signals that are set, for people: "complexity 0.60, error rate 0.25"."""
        parts = [
            f"{name} {value:.2f}"
            for name, value in (
                ("complexity", self.complexity),
                ("error rate", self.error_rate),
                ("budget used", self.budget_used),
                ("recent retention", self.recent_retention),
            )
            if value
        ]
        return ", ".join(parts) or "no signal"


def adaptive_target_ratio(
    base: float, signals: Aggressiveness, *, quality_threshold: float = 0.95
) -> float:
    """The target ratio for ``signals``: each factor multiplies ``base``.

    - complexity c: ×(1 − 0.4c), a very complex task keeps 40% more;
    - error rate e: ×(1 − 0.5e), errors keep context for diagnosis;
    - budget used b: ×1 up to the 75% alert, then rising linearly to ×1.5 at 100%;
    - recent retention r under the threshold t: ×max(0.5, 1 − 2(t − r)).

    Clamped to [MIN_TARGET_RATIO, 2·base]. With no signal the result is ``base``."""
    ratio = base * (1 - 0.4 * signals.complexity) * (1 - 0.5 * signals.error_rate)
    ratio *= 1 + 2 * max(0.0, signals.budget_used - 0.75)
    r = signals.recent_retention
    if r is not None and r < quality_threshold:
        ratio *= max(0.5, 1 - 2 * (quality_threshold - r))
    return min(max(ratio, MIN_TARGET_RATIO), 2 * base)


def display_labels(items: Sequence[CompressionItem]) -> list[str | None]:
    """The label to print before each item's text: only when the items have at least two
    labels (one speaker throughout says nothing worth its tokens)."""
    labels = [item.label for item in items]
    return labels if len(set(labels) - {None}) >= 2 else [None] * len(labels)
