"""One JSON-answering chat call with validation and re-asking, shared by every LLM adapter.

The model is asked for a JSON object; ``parse`` validates the answer and raises ``InvalidReply``
saying what is wrong, which is told to the model on the next attempt (never to a caller). After
``max_attempts`` invalid answers the call fails with ``ProviderError``. Tokens of every attempt
are counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel, ValidationError

from agentcore.adapters.openai_errors import map_openai_error
from agentcore.domain.errors import ProviderError
from agentcore.domain.usage import TokenUsage

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class InvalidReply(Exception):
    """What was wrong with a reply: told to the model on the next attempt, never to a caller."""


def validated(model: type[M], answer: str) -> M:
    """``answer`` (JSON) as ``model``; ``InvalidReply`` naming what is wrong if it is not."""
    try:
        return model.model_validate_json(answer)
    except ValidationError as exc:
        raise InvalidReply(problems(exc)) from None


def problems(exc: ValidationError) -> str:
    """The first five problems of a reply, each as ``path: message`` (no input echoed)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}"
        for err in exc.errors(include_url=False, include_input=False)[:5]
    )


async def ask_json(
    client: openai.AsyncOpenAI,
    model: str,
    messages: list[ChatCompletionMessageParam],
    parse: Callable[[str], T],
    *,
    task: str,
    provider: str,
    shape: str,
    max_attempts: int,
    max_tokens: int | None = None,
) -> tuple[T, TokenUsage]:
    """``parse``'s value and the tokens spent. ``task`` names the work in the final error
    ("fact extraction"), ``provider`` in API errors, ``shape`` the JSON asked for again."""
    messages = list(messages)
    prompt_tokens = completion_tokens = 0
    for _ in range(max_attempts):
        try:
            response = await client.chat.completions.create(
                model=model,
                messages=messages,
                response_format={"type": "json_object"},
                temperature=0,
                max_tokens=openai.omit if max_tokens is None else max_tokens,
            )
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, provider, ProviderError) from exc
        if response.usage is not None:
            prompt_tokens += response.usage.prompt_tokens
            completion_tokens += response.usage.completion_tokens
        choice = response.choices[0] if response.choices else None
        answer = choice.message.content if choice is not None else None
        try:
            if choice is None or choice.finish_reason == "length":
                raise InvalidReply("the answer was cut off; reply with shorter JSON")
            value = parse(answer or "")
        except InvalidReply as problem:
            messages += [
                {"role": "assistant", "content": answer or ""},
                {"role": "user", "content": f"Invalid reply: {problem}. Answer again with "
                 f"only the JSON object {shape} as specified."},
            ]  # fmt: skip
            continue
        return value, TokenUsage(model, prompt_tokens, completion_tokens)
    raise ProviderError(
        f"{task} returned invalid output {max_attempts} times",
        attempts=max_attempts,
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )
