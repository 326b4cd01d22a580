"""The stage detector (FR-2.3): notices from an incoming memory that a task moved to another
COMPASS stage. It only moves a task that has no stage open, a detected stage, or a declared
stage whose caller asked for detection (``detect_transitions``); inside a declared stage only
a declaration counts.

The detector is pure. Its signals, strongest first (the first one present decides):

1. explicit: ``metadata.stage``, ``metadata.stage_type`` or ``metadata.stage_marker`` names a
   stage type (a declaration, honoured even inside a declared stage);
2. ace: ``metadata.ace_signal`` or ``metadata.intervention`` targets a stage type, as a string
   or an object with ``target_stage`` (or ``stage``/``stage_type``) and an optional ``type``
   (the ACE meta-thinker declaring, honoured like an explicit marker);
3. action: ``metadata.kind`` (tool_call/tool_result → execution, error/lesson → reflection,
   check/test → verification, plan → planning) or ``metadata.tool``/``tool_name``
   (→ execution); else word-bounded phrases in the content. One phrase is never enough: an
   agent writes "tests", "plan" or "error" in every stage. A stage needs at least
   ``MIN_PHRASES`` different phrases, a confidence of 0.6 and a lead of 0.15 over any other
   stage. Confidence: the strongest phrase ("calling tool", "lesson learned", "tests passed",
   "plan:" weigh 0.9, a keyword such as "executed", "error", "verify" 0.7), times 0.7 when it
   is not in the first sentence, plus 0.1 per other phrase of the same stage. A negated
   phrase ("no errors") does not count;
4. time: the active (detected) stage has lasted longer than the default stage duration → the
   next stage of the cycle planning → execution → reflection → verification → planning.

Every detection carries the phrases it saw (``signals``), for ``memory.stage.current`` to
explain itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from agentcore.domain.models import Memory, StageType
from agentcore.domain.stages import Stage, StageOrigin, parse_stage_type


class DetectionSignal(StrEnum):
    EXPLICIT = "explicit"
    ACE = "ace"
    ACTION = "action"
    TIME = "time"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One thing the detector saw: a phrase (with its weight where it stood) or a marker."""

    stage_type: StageType
    label: str
    weight: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"stage_type": self.stage_type.value, "label": self.label, "weight": self.weight}


@dataclass(frozen=True, slots=True)
class Detection:
    stage_type: StageType
    reason: str  # why, for people: the signal, what matched and where
    signal: DetectionSignal
    confidence: float = 1.0
    evidence: tuple[Evidence, ...] = ()

    @property
    def origin(self) -> StageOrigin:
        """Explicit markers and ACE signals are declarations; actions and time detections."""
        declared = self.signal in (DetectionSignal.EXPLICIT, DetectionSignal.ACE)
        return StageOrigin.DECLARED if declared else StageOrigin.DETECTED

    def to_dict(self) -> dict[str, Any]:
        return {
            "signal": self.signal.value,
            "confidence": self.confidence,
            "reason": self.reason,
            "signals": [e.to_dict() for e in self.evidence],
        }


NEXT_STAGE = {
    StageType.PLANNING: StageType.EXECUTION,
    StageType.EXECUTION: StageType.REFLECTION,
    StageType.REFLECTION: StageType.VERIFICATION,
    StageType.VERIFICATION: StageType.PLANNING,
}

MIN_PHRASES = 2
MIN_CONFIDENCE = 0.6
MIN_MARGIN = 0.15
STRONG, KEYWORD = 0.9, 0.7
BODY_FACTOR = 0.7  # a phrase outside the first sentence counts less
EXTRA_MATCH_BONUS = 0.1
SCAN_CHARS = 4_000  # the content scanned: an agent announces what it does up front
LEAD_CHARS = 200  # the first sentence, capped

_EXPLICIT_KEYS = ("stage", "stage_type", "stage_marker")
_ACE_KEYS = ("ace_signal", "intervention")
_ACE_TARGET_KEYS = ("target_stage", "stage", "stage_type")
_TOOL_KEYS = ("tool", "tool_name")
_KIND_STAGES = {
    "tool_call": StageType.EXECUTION,
    "tool_result": StageType.EXECUTION,
    "error": StageType.REFLECTION,
    "lesson": StageType.REFLECTION,
    "check": StageType.VERIFICATION,
    "test": StageType.VERIFICATION,
    "plan": StageType.PLANNING,
}
_LEAD_END = re.compile(r"[.!?](?=\s|$)|\n")
_NEGATION = re.compile(
    r"\b(?:no|not|never|without|zero|didn't|don't|doesn't|wasn't|can't|cannot)\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Phrase:
    stage: StageType
    label: str
    regex: re.Pattern[str]
    weight: float


def _p(stage: StageType, label: str, pattern: str, weight: float) -> _Phrase:
    return _Phrase(stage, label, re.compile(pattern, re.IGNORECASE), weight)


_P, _E, _R, _V = (
    StageType.PLANNING,
    StageType.EXECUTION,
    StageType.REFLECTION,
    StageType.VERIFICATION,
)
PHRASES = (
    _p(_P, "plan:", r"\bplan\s*:", STRONG),
    _p(_P, "the plan is", r"\b(?:the|my|our)\s+plan\s+is\b", STRONG),
    _p(_P, "we will first", r"\b(?:we|i)\s+(?:will|'ll|shall)\s+first\b", STRONG),
    _p(_P, "first, we will", r"\bfirst,?\s+(?:we|i)\s+(?:will|'ll|need\s+to|should)\b", STRONG),
    _p(_P, "let's plan", r"\b(?:let's|let\s+us)\s+plan\b", STRONG),
    _p(_P, "step 1:", r"^\s*step\s*(?:1|one)\s*[:.)-]", KEYWORD),  # a numbered plan opens
    _p(_P, "strategy", r"\bstrateg(?:y|ies)\b", KEYWORD),
    _p(
        _E,
        "calling tool",
        r"\b(?:call(?:s|ing|ed)?|invok(?:e|es|ing|ed)|us(?:e|es|ing|ed))\s+(?:the\s+|a\s+)?tools?\b",
        STRONG,
    ),
    _p(_E, "tool call", r"\btool[\s_-]call(?:s|ed)?\b", STRONG),
    _p(
        _E,
        "ran command",
        r"\b(?:ran|run(?:s|ning)?|execut(?:e|es|ed|ing))\s+(?:the\s+|a\s+)?"
        r"(?:command|script|query)\b",
        STRONG,
    ),
    _p(_E, "executed", r"\bexecut(?:ed|ing)\b", KEYWORD),
    _p(_R, "lesson learned", r"\blessons?\s+learned\b", STRONG),
    _p(_R, "root cause", r"\broot\s+cause\b", STRONG),
    _p(_R, "what went wrong", r"\bwhat\s+went\s+wrong\b", STRONG),
    _p(_R, "mistake", r"\bmistakes?\b", KEYWORD),
    _p(_R, "error", r"\berrors?\b", KEYWORD),
    _p(_R, "exception", r"\b(?:exceptions?|traceback)\b", KEYWORD),
    _p(_R, "failed", r"\bfail(?:ed|ure|s)?\b", KEYWORD),
    _p(
        _V,
        "test passed/failed",
        r"\btests?\s+(?:passed|failed|pass(?:es)?|fails?|succeeded)\b",
        STRONG,
    ),
    _p(_V, "all checks passed", r"\ball\s+(?:tests|checks)\s+(?:passed|pass|green)\b", STRONG),
    _p(_V, "check that", r"\bcheck(?:s|ing|ed)?\s+that\b", STRONG),
    _p(_V, "verify", r"\bverif(?:y|ies|ied|ying|ication)\b", KEYWORD),
    _p(_V, "assert", r"\bassert(?:s|ed|ion|ions)?\b", KEYWORD),
    _p(_V, "validation", r"\bvalidat(?:e|es|ed|ing|ion)\b", KEYWORD),
)


class StageDetector:
    """Decides from one memory whether its task changes stage. ``None``: no signal at all."""

    def __init__(self, default_duration_seconds: int) -> None:
        self._duration = default_duration_seconds

    def detect(self, memory: Memory, active: Stage | None, now: datetime) -> Detection | None:
        """The strongest signal present (explicit > ace > action > time), even when it names
        the active stage's type (the caller then stays in it). Inside a stage that holds only
        a declaration (explicit or ace) counts."""
        metadata = memory.metadata
        declared = _explicit(metadata) or _ace(metadata)
        if declared is not None or (active is not None and active.holds):
            return declared
        return (
            _action_metadata(metadata) or _action_content(memory.content) or self._time(active, now)
        )

    def _time(self, active: Stage | None, now: datetime) -> Detection | None:
        if active is None:
            return None
        elapsed = (now - active.started_at).total_seconds()
        if elapsed <= self._duration:
            return None
        stage = NEXT_STAGE[active.stage_type]
        return Detection(
            stage,
            f"time: stage exceeded {self._duration} s "
            f"({active.stage_type.value} active for {int(elapsed)} s)",
            DetectionSignal.TIME,
            evidence=(Evidence(stage, f"{active.stage_type.value} active {int(elapsed)} s"),),
        )


def _explicit(metadata: Mapping[str, Any]) -> Detection | None:
    for key in _EXPLICIT_KEYS:
        stage = parse_stage_type(metadata.get(key))
        if stage is not None:
            label = f"metadata.{key}={stage.value}"
            return Detection(
                stage,
                f"explicit: {label}",
                DetectionSignal.EXPLICIT,
                evidence=(Evidence(stage, label),),
            )
    return None


def _ace(metadata: Mapping[str, Any]) -> Detection | None:
    for key in _ACE_KEYS:
        value = metadata.get(key)
        kind: object = None
        if isinstance(value, Mapping):
            kind = value.get("type") or value.get("intervention_type")
            value = next((value[k] for k in _ACE_TARGET_KEYS if k in value), None)
        stage = parse_stage_type(value)
        if stage is not None:
            detail = f" ({str(kind)[:80]})" if isinstance(kind, str) and kind else ""
            label = f"metadata.{key} targets {stage.value}{detail}"
            return Detection(
                stage, f"ace: {label}", DetectionSignal.ACE, evidence=(Evidence(stage, label),)
            )
    return None


def _action_metadata(metadata: Mapping[str, Any]) -> Detection | None:
    kind = metadata.get("kind")
    if isinstance(kind, str) and kind.strip().lower() in _KIND_STAGES:
        stage = _KIND_STAGES[kind.strip().lower()]
        label = f"metadata.kind={kind.strip().lower()}"
        return Detection(
            stage, f"action: {label}", DetectionSignal.ACTION, evidence=(Evidence(stage, label),)
        )
    for key in _TOOL_KEYS:
        tool = metadata.get(key)
        if isinstance(tool, str) and tool.strip():
            label = f"metadata.{key}={tool.strip()[:80]}"
            return Detection(
                StageType.EXECUTION,
                f"action: tool call ({label})",
                DetectionSignal.ACTION,
                evidence=(Evidence(StageType.EXECUTION, label),),
            )
    return None


def _action_content(content: str) -> Detection | None:
    text = content[:SCAN_CHARS]
    end = _LEAD_END.search(text)
    lead_end = min(end.end() if end else len(text), LEAD_CHARS)
    found: dict[StageType, list[tuple[float, str, bool]]] = {}
    for phrase in PHRASES:
        hits = [m for m in phrase.regex.finditer(text) if not _NEGATION.search(text[: m.start()])]
        if hits:
            in_lead = hits[0].start() < lead_end
            weight = phrase.weight * (1.0 if in_lead else BODY_FACTOR)
            found.setdefault(phrase.stage, []).append((weight, phrase.label, in_lead))
    if not found:
        return None
    scores = {stage: _score(matches) for stage, matches in found.items()}
    best = max(
        (stage for stage, matches in found.items() if len(matches) >= MIN_PHRASES),
        key=lambda stage: scores[stage],
        default=None,
    )
    if best is None:
        return None
    confidence = scores[best]
    runner_up = max((v for stage, v in scores.items() if stage is not best), default=0.0)
    if confidence < MIN_CONFIDENCE or confidence - runner_up < MIN_MARGIN:
        return None
    matches = sorted(found[best], key=lambda match: -match[0])  # ties: in PHRASES order
    labels = ", ".join(repr(label) for _, label, _ in matches[:3])
    where = "the first sentence" if matches[0][2] else "the content"
    evidence = tuple(
        Evidence(stage, label, round(weight, 2))
        for stage, stage_matches in found.items()
        for weight, label, _ in sorted(stage_matches, key=lambda match: -match[0])
    )
    return Detection(
        best,
        f"action: {labels} in {where} (confidence {confidence:.2f})",
        DetectionSignal.ACTION,
        round(confidence, 2),
        evidence,
    )


def _score(matches: list[tuple[float, str, bool]]) -> float:
    weights = sorted((weight for weight, _, _ in matches), reverse=True)
    return min(1.0, weights[0] + EXTRA_MATCH_BONUS * (len(weights) - 1))
