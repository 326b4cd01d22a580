"""Error pattern extraction over an OpenAI-compatible chat completions API (FR-4.2, the LLM
part): the model reads a task's or an agent's error records and names patterns the counting
detectors cannot see (a shared root cause described in different words, say).

The answer is JSON (``response_format=json_object``, temperature 0) validated with pydantic.
Each pattern must cite at least ``min_errors`` of the records by their short ids; its error
types, occurrences and severity are computed from the cited records, never taken from the
model. A malformed, truncated or invalid answer is sent back with what was wrong, up to
``max_attempts`` in all; then ``ProviderError`` is raised.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Literal

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agentcore.adapters.json_chat import InvalidReply, ask_json, validated
from agentcore.domain.error_patterns import pattern_severity
from agentcore.domain.error_records import (
    ErrorPattern,
    ErrorRecord,
    PatternSource,
    PatternType,
)
from agentcore.domain.usage import TokenUsage
from agentcore.services.errors import ExtractedPatterns

DEFAULT_MODEL = "gpt-4.1-mini"
MAX_RECORDS = 200  # newest records sent to the model
MAX_PATTERNS = 10
_CONTEXT_CHARS = 500

SYSTEM_PROMPT = """\
You analyse the errors an AI agent made, to find patterns it can learn from.

Input: a JSON list of error records in time order, each with "id", "type" (hallucination, \
missing_info, incorrect_action or context_degradation), "task", "stage" (may be null), \
"severity" (0-1), "description", "context" (an object) and "recovery" (may be null).

Return a JSON object {"patterns": [...]} with at most 10 patterns, each
{"pattern_type": "frequency"|"sequence"|"context", "error_ids": [ids of the errors that \
form it, at least MIN_ERRORS], "description": str, "recommendation": str}.

- frequency: the same kind of mistake recurs (also across error types, e.g. the same root \
cause described differently). sequence: one error tends to lead to another within a task. \
context: errors cluster in one situation (a tool, an input, a resource, a stage).
- description: one sentence naming the shared cause or situation concretely.
- recommendation: one concrete instruction the agent can follow to prevent it.
- Cite only ids from the input. Report only what the records support; no patterns: \
{"patterns": []}.
"""


class _PatternOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    pattern_type: Literal["frequency", "sequence", "context"]
    error_ids: list[str]
    description: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
    recommendation: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    patterns: Annotated[list[_PatternOut], Field(max_length=MAX_PATTERNS)]


class LLMPatternExtractor:
    """``PatternExtractor`` over ``client.chat.completions``; the client is built and closed
    by the caller (bootstrap)."""

    def __init__(
        self, client: openai.AsyncOpenAI, model: str = DEFAULT_MODEL, *, max_attempts: int = 3
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._client = client
        self._model = model
        self._max_attempts = max_attempts

    @property
    def model_name(self) -> str:
        return self._model

    async def extract(self, records: Sequence[ErrorRecord], min_errors: int) -> ExtractedPatterns:
        sent = list(records[-MAX_RECORDS:])
        if len(sent) < min_errors:
            return ExtractedPatterns([], TokenUsage(self._model))
        ids = {f"e{i + 1}": record for i, record in enumerate(sent)}
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM_PROMPT.replace("MIN_ERRORS", str(min_errors))},
            {"role": "user", "content": _render(ids)},
        ]
        patterns, usage = await ask_json(
            self._client,
            self._model,
            messages,
            lambda answer: _parse(answer, ids, min_errors),
            task="error pattern extraction",
            provider="the error pattern provider",
            shape='{"patterns": [...]}',
            max_attempts=self._max_attempts,
        )
        return ExtractedPatterns(patterns, usage)


def _render(ids: dict[str, ErrorRecord]) -> str:
    rows = []
    for short, record in ids.items():
        context = json.dumps(dict(record.context), ensure_ascii=False, default=str)
        rows.append(
            {
                "id": short,
                "type": record.error_type.value,
                "task": record.task_id,
                "stage": None if record.stage_type is None else record.stage_type.value,
                "severity": record.severity,
                "description": record.description,
                "context": context[:_CONTEXT_CHARS],
                "recovery": record.recovery_action,
            }
        )
    return json.dumps(rows, ensure_ascii=False)


def _parse(answer: str, ids: dict[str, ErrorRecord], min_errors: int) -> list[ErrorPattern]:
    reply = validated(_Reply, answer)
    patterns = []
    for index, out in enumerate(reply.patterns):
        unknown = [i for i in out.error_ids if i not in ids]
        if unknown:
            raise InvalidReply(f"patterns.{index}.error_ids: unknown ids {unknown[:3]}")
        cited = list(dict.fromkeys(out.error_ids))
        if len(cited) < min_errors:
            raise InvalidReply(f"patterns.{index}.error_ids: cite at least {min_errors} errors")
        patterns.append(_pattern(out, [ids[i] for i in cited], min_errors))
    return patterns


def _pattern(out: _PatternOut, members: list[ErrorRecord], min_errors: int) -> ErrorPattern:
    kind = PatternType(out.pattern_type)
    counts = Counter(r.error_type for r in members)
    if kind is PatternType.SEQUENCE:  # types in the order they first occur
        ordered = sorted(members, key=lambda r: (r.created_at, r.id))
        types = tuple(dict.fromkeys(r.error_type for r in ordered))
    else:
        types = tuple(sorted(counts, key=lambda t: (-counts[t], t.value)))
    newest_first = sorted(members, key=lambda r: (r.created_at, r.id), reverse=True)
    return ErrorPattern(
        pattern_type=kind,
        error_types=types,
        occurrences=len(members),
        severity=pattern_severity(members, min_errors),
        description=out.description[:1_000],
        recommendation=out.recommendation[:1_000],
        error_ids=tuple(r.id for r in newest_first),
        source=PatternSource.LLM,
    )
