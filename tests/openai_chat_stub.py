"""A scripted OpenAI-compatible chat-completions server for the tests of the LLM adapters.

Each request is recorded; the answer is the next scripted ``Reply``, or the stub's default
content when the script is empty. An error reply echoes the API key in its message, as real
providers do, so tests can check that it never reaches a caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.http_stub import serving

API_KEY = "sk-test-key-do-not-echo"


@dataclass
class Reply:
    """One scripted reply: the message content (None: the stub's default), or an HTTP error
    status (answered with ``retry-after: 3``), after ``delay`` seconds."""

    content: str | None = None
    status: int = 200
    finish_reason: str = "stop"
    delay: float = 0.0  # seconds before answering (a slow model, or one a test interrupts)


@dataclass
class FakeOpenAI:
    default: str = ""  # the content of a reply when nothing is scripted
    usage: tuple[int, int] = (100, 20)  # prompt and completion tokens of every reply
    url: str = ""  # the base URL (``.../v1``) while served
    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)

    def reset(self) -> FakeOpenAI:
        """Forget the requests and the script (between tests sharing one server)."""
        self.requests.clear()
        self.script.clear()
        return self


@contextmanager
def chat_server(state: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """Serve ``state`` on a free loopback port; ``state.url`` is set while it runs."""
    with serving(_app(state)) as base_url:
        state.url = f"{base_url}/v1"
        yield state


def _app(state: FakeOpenAI) -> Starlette:
    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        state.requests.append(body)
        reply = state.script.pop(0) if state.script else Reply()
        await asyncio.sleep(reply.delay)
        if reply.status != 200:
            error = {"message": f"Incorrect API key provided: {API_KEY}", "type": "test"}
            return JSONResponse({"error": error}, reply.status, headers={"retry-after": "3"})
        content = state.default if reply.content is None else reply.content
        message = {"role": "assistant", "content": content}
        prompt, completion = state.usage
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(state.requests)}",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
