"""The retrieval score (DESIGN §4, FR-5.1): six factors in [0, 1] weighted by six non-negative
weights that sum to 1, so the score is in [0, 1] too and every result can be explained.

    score = w_similarity·similarity + w_recency·recency + w_frequency·frequency
          + w_stage_relevance·stage_relevance + w_criticality·criticality
          + w_error_correction·error_correction

- **similarity**: the candidate's relevance to the query as candidate generation reports it
  (cosine, or the fused dense + lexical relevance), clipped to [0, 1].
- **recency**: ``0.5 ** (age / half-life)``, the age counted from the later of the last update
  and the last access (a memory used an hour ago is fresh even if written a year ago).
- **frequency**: ``log1p(access_count) / log1p(FREQUENCY_SATURATION)``, capped at 1: the first
  accesses matter most, and 50 accesses count as "used all the time".
- **stage_relevance**: 0.5 means "no information" (always the value when the query names no
  ``current_stage``: a constant changes no order). With a current stage, evidence that the
  memory fits it raises the factor towards 1 and evidence that it belongs to another stage
  lowers it towards 0 (see ``stage_evidence``).
- **criticality**: 1.0 for a critical memory, its importance (0.5 by default) for
  any other. FR-5.1's "2x multiplier for critical memories" is
  realized inside the factor: a critical memory's criticality is twice a plain one's, while
  the factor stays in [0, 1] as the sum requires; under the default weight 0.10 a critical
  memory gains 0.05 over an otherwise equal one. Importance moves between the two with use:
  extracted facts carry the extractor's importance, and ACE intervention outcomes raise or
  lower the importance of the memories they relied on.
- **error_correction**: given per memory by the error tracker (how much the memory corrected,
  or relates to, recent errors of the task); 0 when there is no signal.

Per-query overrides (``scoring_weights``): a full set of six must sum to 1 (within 1e-6); a
partial set fixes the weights it names and scales the other defaults proportionally to fill
the rest up to 1, so ``{"recency": 0}`` means "ignore recency, keep the other proportions".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from agentcore.domain.errors import InvalidParams
from agentcore.domain.models import Layer, Memory, StageType
from agentcore.domain.stage_detection import PHRASES
from agentcore.domain.stages import parse_stage_type

FACTORS = (
    "similarity",
    "recency",
    "frequency",
    "stage_relevance",
    "criticality",
    "error_correction",
)
SUM_TOLERANCE = 1e-6
FREQUENCY_SATURATION = 50  # accesses at which the frequency factor reaches 1
NEUTRAL_STAGE = 0.5
# Settings name the similarity weight MEMORY_RELEVANCE_WEIGHT.
_SETTINGS_NAMES = {"relevance": "similarity"}


@dataclass(frozen=True, slots=True)
class Weights:
    """Six non-negative weights summing to 1; build them with ``of`` to have them checked."""

    similarity: float = 0.35
    recency: float = 0.15
    frequency: float = 0.10
    stage_relevance: float = 0.20
    criticality: float = 0.10
    error_correction: float = 0.10

    @classmethod
    def of(cls, values: Mapping[str, float], *, field_prefix: str = "weights") -> Weights:
        """All six weights by factor name; raises ``InvalidParams`` naming the bad fields."""
        problems = _value_problems(values, field_prefix)
        missing = [name for name in FACTORS if name not in values]
        problems += [{"field": f"{field_prefix}.{name}", "message": "missing"} for name in missing]
        if not problems:
            problems = _sum_problems(sum(values.values()), field_prefix)
        if problems:
            raise InvalidParams("invalid scoring weights", errors=problems)
        return cls(**{name: float(values[name]) for name in FACTORS})

    @classmethod
    def from_settings(cls, values: Mapping[str, float]) -> Weights:
        """From ``Settings.weights`` (whose similarity weight is called ``relevance``)."""
        return cls.of({_SETTINGS_NAMES.get(k, k): v for k, v in values.items()})

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in FACTORS}

    def override(
        self, values: Mapping[str, float], field_prefix: str = "scoring_weights"
    ) -> Weights:
        """These weights with a per-query override applied (see the module doc)."""
        if not values:
            return self
        problems = _value_problems(values, field_prefix)
        if problems:
            raise InvalidParams("invalid scoring weights", errors=problems)
        if len(values) == len(FACTORS):
            return Weights.of(values, field_prefix=field_prefix)
        fixed = sum(values.values())
        rest = {name: w for name, w in self.as_dict().items() if name not in values}
        room, rest_total = 1.0 - fixed, sum(rest.values())
        if room < -SUM_TOLERANCE:
            raise InvalidParams(
                "invalid scoring weights",
                errors=[{"field": field_prefix, "message": f"weights sum to {fixed:g}, over 1"}],
            )
        if room > SUM_TOLERANCE and rest_total <= 0:
            unnamed = ", ".join(rest)
            message = f"sum to {fixed:g}; the unnamed weights ({unnamed}) are 0 by default"
            raise InvalidParams(
                "invalid scoring weights", errors=[{"field": field_prefix, "message": message}]
            )
        scale = 0.0 if rest_total <= 0 else max(room, 0.0) / rest_total
        merged = {**{name: w * scale for name, w in rest.items()}, **values}
        return Weights.of(merged, field_prefix=field_prefix)


def _value_problems(values: Mapping[str, float], prefix: str) -> list[dict[str, str]]:
    problems = []
    for name, value in values.items():
        where = f"{prefix}.{name}"
        if name not in FACTORS:
            known = ", ".join(FACTORS)
            problems.append({"field": where, "message": f"unknown factor; one of {known}"})
        elif not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
            problems.append({"field": where, "message": "must be a number"})
        elif not 0.0 <= value <= 1.0:
            problems.append({"field": where, "message": "must be between 0 and 1"})
    return problems


def _sum_problems(total: float, prefix: str) -> list[dict[str, str]]:
    if math.isclose(total, 1.0, abs_tol=SUM_TOLERANCE):
        return []
    return [{"field": prefix, "message": f"weights must sum to 1 (they sum to {total:g})"}]


@dataclass(frozen=True, slots=True)
class ScoreContext:
    """What the factors of one query need besides the memory itself."""

    now: datetime
    weights: Weights = field(default_factory=Weights)
    recency_half_life_hours: float = 168.0
    current_stage: StageType | None = None
    stage_types: Mapping[str, StageType] = field(default_factory=dict)  # stage_id → type
    error_correction: Mapping[str, float] = field(default_factory=dict)  # memory id → [0, 1]


def clip(value: float) -> float:
    return 0.0 if math.isnan(value) else min(max(value, 0.0), 1.0)


def recency(memory: Memory, now: datetime, half_life_hours: float) -> float:
    """1 for a memory touched now, 0.5 one half-life ago (never above 1, never below 0)."""
    touched = memory.updated_at
    if memory.last_accessed_at is not None and memory.last_accessed_at > touched:
        touched = memory.last_accessed_at
    age_hours = max((now - touched).total_seconds(), 0.0) / 3600.0
    return clip(0.5 ** (age_hours / half_life_hours))


def frequency(access_count: int) -> float:
    return clip(math.log1p(max(access_count, 0)) / math.log1p(FREQUENCY_SATURATION))


def criticality(memory: Memory) -> float:
    return 1.0 if memory.critical else clip(memory.importance)


# ``metadata.kind`` → stage: the stage detector's kinds and FR-5.3's vocabulary.
_KINDS = {
    "plan": StageType.PLANNING,
    "tool_call": StageType.EXECUTION,
    "tool_result": StageType.EXECUTION,
    "error": StageType.REFLECTION,
    "lesson": StageType.REFLECTION,
    "check": StageType.VERIFICATION,
    "test": StageType.VERIFICATION,
    "strategy": StageType.PLANNING,
    "decision": StageType.PLANNING,
    "goal": StageType.PLANNING,
    "action": StageType.EXECUTION,
    "procedure": StageType.EXECUTION,
    "command": StageType.EXECUTION,
    "observation": StageType.EXECUTION,
    "mistake": StageType.REFLECTION,
    "insight": StageType.REFLECTION,
    "reflection": StageType.REFLECTION,
    "success_criteria": StageType.VERIFICATION,
    "criteria": StageType.VERIFICATION,
    "verification": StageType.VERIFICATION,
    "quality_check": StageType.VERIFICATION,
}
_KIND_EVIDENCE = 0.9
_LAYER_EVIDENCE = 0.8  # a procedure (action → outcome) is what execution needs
_CUE_EVIDENCE = 0.7
_CUE_CHARS = 1_000
# Cues of FR-5.3 that the stage detector's phrases (which look for stage *changes*) lack.
_EXTRA_CUES = (
    (StageType.PLANNING, re.compile(r"\b(?:approach|roadmap|milestones?|high-level)\b", re.I)),
    (StageType.EXECUTION, re.compile(r"\b(?:tool|api call|command|ran|invoked)\b", re.I)),
    (StageType.REFLECTION, re.compile(r"\b(?:lessons?|learned|next time|went wrong)\b", re.I)),
    (
        StageType.VERIFICATION,
        re.compile(r"\b(?:success criteria|acceptance criteria|quality checks?|checklist)\b", re.I),
    ),
)
# One alternation per stage over the stage detector's phrases and the cues above.
_CUES = {
    stage: re.compile(
        "|".join(
            [f"(?:{p.regex.pattern})" for p in PHRASES if p.stage is stage]
            + [regex.pattern for cue_stage, regex in _EXTRA_CUES if cue_stage is stage]
        ),
        re.IGNORECASE,
    )
    for stage in StageType
}
_STAGE_KEYS = ("stage", "stage_type", "stage_marker")  # explicit markers, as the detector
_TOOL_KEYS = ("tool", "tool_name")


def stage_evidence(memory: Memory, stage_types: Mapping[str, StageType]) -> dict[StageType, float]:
    """How strongly the memory belongs to each stage type, 0-1, from: the type of the stage it
    was written in (1.0); an explicit ``metadata.stage``, a ``metadata.kind`` (the stage
    detector's kinds and FR-5.3's vocabulary) or a tool (0.9); the procedural layer
    (execution, 0.8); the stage detector's phrases and a few more cue words in its first
    1,000 characters (0.7)."""
    evidence: dict[StageType, float] = {}

    def add(stage: StageType, weight: float) -> None:
        evidence[stage] = max(evidence.get(stage, 0.0), weight)

    if memory.stage_id is not None and memory.stage_id in stage_types:
        add(stage_types[memory.stage_id], 1.0)
    metadata = memory.metadata
    for key in _STAGE_KEYS:
        marked = parse_stage_type(metadata.get(key))
        if marked is not None:
            add(marked, _KIND_EVIDENCE)
    kind = metadata.get("kind")
    kind = kind.strip().lower() if isinstance(kind, str) else ""
    if kind in _KINDS:
        add(_KINDS[kind], _KIND_EVIDENCE)
    if any(isinstance(metadata.get(key), str) and metadata[key] for key in _TOOL_KEYS):
        add(StageType.EXECUTION, _KIND_EVIDENCE)
    if memory.layer is Layer.PROCEDURAL:
        add(StageType.EXECUTION, _LAYER_EVIDENCE)
    for stage in content_cues(memory.content):
        add(stage, _CUE_EVIDENCE)
    return evidence


def content_cues(content: str) -> tuple[StageType, ...]:
    """The stages whose cue words the start of ``content`` holds."""
    return _content_cues(content[:_CUE_CHARS])


@lru_cache(maxsize=16_384)  # the same memories come back search after search
def _content_cues(text: str) -> tuple[StageType, ...]:
    return tuple(stage for stage, regex in _CUES.items() if regex.search(text))


def stage_relevance(
    memory: Memory, current: StageType | None, stage_types: Mapping[str, StageType]
) -> float:
    """0.5 without a current stage or without evidence; ``0.5 + 0.5·e`` for evidence ``e``
    that the memory fits the current stage; ``0.5 - 0.5·e`` when the strongest evidence is
    for another stage only."""
    if current is None:
        return NEUTRAL_STAGE
    evidence = stage_evidence(memory, stage_types)
    fit = evidence.get(current, 0.0)
    if fit > 0:
        return clip(NEUTRAL_STAGE + 0.5 * fit)
    other = max(evidence.values(), default=0.0)
    return clip(NEUTRAL_STAGE - 0.5 * other)


def factors(memory: Memory, relevance: float, ctx: ScoreContext) -> dict[str, float]:
    """The six factors of one candidate, each in [0, 1], keyed as ``FACTORS``."""
    return {
        "similarity": clip(relevance),
        "recency": recency(memory, ctx.now, ctx.recency_half_life_hours),
        "frequency": frequency(memory.access_count),
        "stage_relevance": stage_relevance(memory, ctx.current_stage, ctx.stage_types),
        "criticality": criticality(memory),
        "error_correction": clip(ctx.error_correction.get(memory.id, 0.0)),
    }


def combine(values: Mapping[str, float], weights: Weights) -> float:
    """The weighted sum: in [0, 1] because the factors are and the weights sum to 1."""
    return clip(sum(getattr(weights, name) * values[name] for name in FACTORS))


def parse_current_stage(value: Any) -> StageType | None:
    """``current_stage`` of a query: a stage type name, or None."""
    if value is None:
        return None
    stage = parse_stage_type(value)
    if stage is None:
        allowed = ", ".join(s.value for s in StageType)
        raise InvalidParams(
            f"unknown current_stage {value!r}",
            errors=[{"field": "current_stage", "message": f"one of {allowed}"}],
        )
    return stage
