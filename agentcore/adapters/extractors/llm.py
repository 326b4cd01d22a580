"""A fact extractor over an OpenAI-compatible chat completions API (gpt-4.1-mini by default).

The model answers in JSON (``response_format=json_object``, temperature 0); the answer is
validated with pydantic. Malformed JSON, a schema violation, a truncated answer or a source id
the model made up is sent back to the model with what was wrong, up to ``max_attempts`` in all;
then ``ProviderError`` is raised. Nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Literal

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agentcore.adapters.json_chat import InvalidReply, ask_json, validated
from agentcore.adapters.openai_errors import map_openai_error
from agentcore.domain.errors import AgentCoreError, ProviderError
from agentcore.domain.updates import Statement, normalized_statement
from agentcore.domain.usage import TokenUsage
from agentcore.services.semantic import (
    ExtractedFact,
    Extraction,
    FactCategory,
    SourceText,
)

DEFAULT_MODEL = "gpt-4.1-mini"

SYSTEM_PROMPT = """\
You extract durable facts about people from conversation messages for a long-term memory.

Input: a JSON list of messages, each with "id", "speaker" (who wrote it; may be null), \
"role" and "at" (when it was written, ISO 8601; may be null) and "content".

Return a JSON object {"facts": [...]} where each fact is
{"content": str, "category": "preference"|"constraint"|"fact"|"learning",
 "importance": number 0-1, "critical": bool, "source_ids": [message ids],
 "slot": {"subject": str, "attribute": str, "value": str} or null}.

Rules:
- One self-contained statement per fact, in the third person, naming its subject: write \
"Caroline prefers hiking over running", never "I like hiking" or "she likes it". Use the \
speaker's name for "I"/"my"; if the speaker is unknown, say "The user".
- Resolve relative times with the message's "at": "yesterday" -> "on 7 May 2023".
- preference: likes, dislikes, favourites. constraint: requirements and limits (must, never, \
always, cannot, allergies, diets, deadlines). fact: stated facts about people, places, \
things, events and plans. learning: lessons and insights someone drew.
- critical is true for constraints a helper must never violate (must, never, always, \
required, allergic, cannot); otherwise false.
- importance: 0.9 for critical constraints, about 0.6 for preferences and stable personal \
facts, about 0.4 for passing events.
- source_ids: the ids of the messages the fact comes from (at least one).
- slot: only for a fact stating an attribute that holds one value at a time and can change \
(where someone lives, works, their job title, manager, partner, car, diet, team, phone \
number, a favourite thing, a preference, a tool's version, a deadline); otherwise null. \
subject: the person's name as in content ("user" for the user), or "*" for a tool's version \
or a deadline. attribute, one of: home, employer, job title, manager, partner, car, diet, \
team, address, phone number, email, favorite:<thing> (favorite:color), prefers:<thing> \
(prefers:seat), version:<tool> (version:python), deadline:<thing> (deadline:report), \
pet:<kind> (pet:dog), or a short noun. value: the value alone ("Munich", "3.12").
- Skip greetings, questions, small talk and anything not stated as true. Do not invent.
- No facts: {"facts": []}.
"""


_Short = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]


class _SlotOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    subject: _Short
    attribute: _Short
    value: _Short


class _FactOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
    category: Literal["preference", "constraint", "fact", "learning"]
    importance: Annotated[float, Field(ge=0.0, le=1.0)]
    critical: bool
    source_ids: Annotated[list[str], Field(min_length=1)]
    slot: _SlotOut | None = None


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    facts: list[_FactOut]


class LLMFactExtractor:
    """``FactExtractor`` over ``client.chat.completions``; the client is built by the caller
    (bootstrap), which also closes it. Returns an ``Extraction`` whose ``usage`` counts the
    tokens of every attempt."""

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

    async def extract(self, texts: Sequence[SourceText]) -> Extraction:
        if not texts:
            return Extraction([], TokenUsage(self._model))
        # Short positional ids: cheaper than UUIDs and easy to check.
        ids = {f"m{i + 1}": text.memory_id for i, text in enumerate(texts)}
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _render(texts, list(ids))},
        ]
        facts, usage = await ask_json(
            self._client,
            self._model,
            messages,
            lambda answer: _parse(answer, ids),
            task="fact extraction",
            provider="the fact extraction provider",
            shape='{"facts": [...]}',
            max_attempts=self._max_attempts,
        )
        return Extraction(facts, usage)


def _render(texts: Sequence[SourceText], ids: list[str]) -> str:
    rows = [
        {
            "id": short,
            "speaker": text.speaker,
            "role": text.role,
            "at": None if text.at is None else text.at.isoformat(),
            "content": text.content,
        }
        for short, text in zip(ids, texts, strict=True)
    ]
    return json.dumps(rows, ensure_ascii=False)


def _parse(answer: str, ids: dict[str, str]) -> list[ExtractedFact]:
    reply = validated(_Reply, answer)
    facts = []
    for index, fact in enumerate(reply.facts):
        unknown = [i for i in fact.source_ids if i not in ids]
        if unknown:
            raise InvalidReply(f"facts.{index}.source_ids: unknown ids {unknown[:3]}")
        facts.append(
            ExtractedFact(
                content=fact.content,
                category=FactCategory(fact.category),
                importance=fact.importance,
                critical=fact.critical,
                source_ids=tuple(dict.fromkeys(ids[i] for i in fact.source_ids)),
                statement=None if fact.slot is None else _statement(fact.slot),
            )
        )
    return facts


def _statement(slot: _SlotOut) -> Statement:
    return normalized_statement(slot.subject, slot.attribute, slot.value)


def _map_error(exc: openai.OpenAIError) -> AgentCoreError:
    return map_openai_error(exc, "the fact extraction provider", ProviderError)
