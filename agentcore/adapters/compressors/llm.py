"""The LLM compression engine: a chat completion with COMPRESSION_MODEL (gpt-4.1-mini by
default) over the OpenAI API or any OpenAI-compatible base URL.

Only approved compression models run (BR-5, BR-10): the engine refuses, at construction, a
model outside ``approved_models`` and any reasoning model (gpt-4.1, gpt-5*, o1*, o3*, o4*)
whatever the list says. A dated snapshot of an approved model ("gpt-4.1-mini-2025-04-14") is
approved.

The model answers in JSON (``response_format=json_object``, temperature 0):
``{"summary", "insights", "critical_facts", "error_patterns"}``, validated with pydantic. An
invalid or cut-off answer is sent back with what was wrong, up to ``max_attempts`` in all;
then ``ProviderError`` (its details carry the tokens spent). Whether the draft is good enough
(retention, ratio, contradictions) is the compressor's check, not this engine's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Annotated

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agentcore.adapters.json_chat import ask_json, validated
from agentcore.domain.errors import ConfigurationError
from agentcore.domain.usage import TokenUsage
from agentcore.services.compass.drafts import CompressionRequest, Draft, ErrorPattern

DEFAULT_MODEL = "gpt-4.1-mini"
APPROVED_COMPRESSION_MODELS = ("gpt-4.1-mini", "gpt-4o-mini", "gpt-4.1-nano")
_REASONING = re.compile(r"^(?:gpt-4\.1(?:-\d{4}-\d{2}-\d{2})?|gpt-5.*|o[134](?:-.*)?)$")
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")

SYSTEM_PROMPT = """\
You compress the memories of an AI agent's task into a shorter text that the agent will \
read instead of them.

Input: a JSON object with "level" ("stage": the raw memories of one reasoning stage; "task": \
the summaries of a task's stages, in order), "target_tokens" (the length to aim at), \
"max_tokens" (never longer), "must_keep" (critical facts), "should_keep" (decisions, fixes \
and identifiers worth keeping when they fit), "listed" (constraints the reader gets in a \
list beside your summary: do not repeat them), "lost_last_time" (facts a previous draft \
lost), "verbatim" (copy must_keep word for word) and "memories" (each with "id", "speaker" \
(may be null), "at" (ISO 8601, may be null) and "content").

Return a JSON object:
{"summary": str, "insights": [str], "critical_facts": [str],
 "error_patterns": [{"description": str, "occurrences": int}]}

Rules for the summary:
- About target_tokens tokens, never more than max_tokens. Plain sentences, in the order \
things happened; name the speaker where one is given.
- State every must_keep fact, with the same numbers, names, dates and negations \
("never", "not", "must not"); lost_last_time facts above all.
- Use only what the memories say. Never invent, never change a number, never turn a \
negative into a positive or the reverse. Keep relative dates as written.
- Leave out greetings, small talk and repetition.
insights: up to 5 lessons, decisions or outcomes stated in the memories.
critical_facts: other must-remember statements you found (constraints, requirements, \
deadlines, decisions, an error and its fix), each a short sentence that is also in the summary.
error_patterns: errors of the same type or message that occur at least twice, with counts; \
[] when none.
"""

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]


class _PatternOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    description: _Text
    occurrences: Annotated[int, Field(ge=1)]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: _Text
    insights: Annotated[list[_Text], Field(max_length=20)] = []
    critical_facts: Annotated[list[_Text], Field(max_length=100)] = []
    error_patterns: Annotated[list[_PatternOut], Field(max_length=50)] = []


def check_compression_model(model: str, approved: Sequence[str]) -> None:
    """Raises ``ConfigurationError`` unless ``model`` may compress (module doc)."""
    name = model.strip().lower()
    allowed = ", ".join(approved)
    if _REASONING.match(name):
        raise ConfigurationError(
            f"COMPRESSION_MODEL {model} is a reasoning model; compression runs on an approved "
            f"compression model ({allowed}) (BR-10)"
        )
    if _SNAPSHOT.sub("", name) not in {a.strip().lower() for a in approved}:
        raise ConfigurationError(
            f"COMPRESSION_MODEL {model} is not approved for compression; use one of: {allowed}"
        )


class LLMEngine:
    """``CompressionEngine`` over ``client.chat.completions``; the client is built (and
    closed) by the caller. ``Draft.usage`` counts the tokens of every attempt."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str = DEFAULT_MODEL,
        *,
        approved_models: Sequence[str] = APPROVED_COMPRESSION_MODELS,
        max_attempts: int = 3,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        check_compression_model(model, approved_models)
        self._client = client
        self._model = model
        self._max_attempts = max_attempts

    @property
    def name(self) -> str:
        return f"llm:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    async def draft(self, request: CompressionRequest) -> Draft:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _render(request)},
        ]
        reply, usage = await ask_json(
            self._client,
            self._model,
            messages,
            _parse,
            task="compression",
            provider="the compression provider",
            shape='{"summary", "insights", "critical_facts", "error_patterns"}',
            max_attempts=self._max_attempts,
            # Room for the summary and the side lists; a runaway answer is cut off.
            max_tokens=2 * request.max_tokens + 1024,
        )
        return _draft(reply, usage)


def _render(request: CompressionRequest) -> str:
    memories = [
        {
            "id": f"m{n + 1}",
            "speaker": item.label,
            "at": None if item.created_at is None else item.created_at.isoformat(),
            "content": item.content,
        }
        for n, item in enumerate(request.items)
    ]
    body = {
        "level": request.level,
        "target_tokens": request.budget_tokens,
        "max_tokens": request.max_tokens,
        "must_keep": [fact.content for fact in request.critical_facts],
        "should_keep": [fact.content for fact in request.key_facts],
        "listed": [fact.content for fact in request.listed_facts],
        "lost_last_time": list(request.lost_facts),
        "verbatim": request.verbatim_facts,
        "memories": memories,
    }
    return json.dumps(body, ensure_ascii=False)


def _parse(answer: str) -> _Reply:
    return validated(_Reply, answer)


def _draft(reply: _Reply, usage: TokenUsage) -> Draft:
    patterns = tuple(
        ErrorPattern(p.description, p.occurrences, p.description) for p in reply.error_patterns
    )
    return Draft(
        summary=reply.summary,
        insights=tuple(reply.insights),
        critical_facts=tuple(reply.critical_facts),
        error_patterns=patterns,
        usage=usage,
    )
