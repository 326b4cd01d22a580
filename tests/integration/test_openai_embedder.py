"""The OpenAI embedder against a local OpenAI-compatible server (Starlette on uvicorn, loopback)."""

from __future__ import annotations

import asyncio
import hashlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentcore.adapters.embedders import OpenAIEmbedder
from agentcore.domain.errors import (
    AgentCoreError,
    ConfigurationError,
    EmbeddingFailed,
    RateLimited,
    Unauthorized,
)
from agentcore.services.ports import Embedder
from tests.http_stub import serving

API_KEY = "sk-test-key-do-not-echo"


@dataclass
class Reply:
    """One scripted reply: an HTTP error, a delay, or a tampered vector count."""

    status: int = 200
    delay: float = 0.0
    drop_last: bool = False
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeOpenAI:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)


def _raw_vector(text: str, dimension: int) -> np.ndarray[Any, Any]:
    """Deterministic, deliberately not unit-length, so normalization is observable."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).normal(size=dimension) * 3.0


def _app(state: FakeOpenAI) -> Starlette:
    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        state.requests.append(body)
        state.headers.append(dict(request.headers))
        reply = state.script.pop(0) if state.script else Reply()
        await asyncio.sleep(reply.delay)
        if reply.status != 200:
            error = {"message": f"Incorrect API key provided: {API_KEY}", "type": "test"}
            return JSONResponse({"error": error}, reply.status, headers=reply.headers)
        dimension = body.get("dimensions", 3072 if body["model"].endswith("large") else 1536)
        data = [
            {"object": "embedding", "index": i, "embedding": _raw_vector(text, dimension).tolist()}
            for i, text in enumerate(body["input"])
        ]
        data.reverse()  # the API does not promise order; the client must sort by index
        if reply.drop_last:
            data.pop()
        usage = {"prompt_tokens": 1, "total_tokens": 1}
        return JSONResponse(
            {"object": "list", "data": data, "model": body["model"], "usage": usage}
        )

    return Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI(url="")
    with serving(_app(state)) as base_url:
        state.url = f"{base_url}/v1"
        yield state


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    server.requests.clear()
    server.headers.clear()
    server.script.clear()
    return server


def _embedder(fake: FakeOpenAI, **options: Any) -> OpenAIEmbedder:
    options.setdefault("max_retries", 0)
    return OpenAIEmbedder(API_KEY, base_url=fake.url, **options)


async def test_embeds_normalizes_and_keeps_order(fake: FakeOpenAI) -> None:
    embedder: Embedder = _embedder(fake)
    texts = ["first memory", "second, longer memory about the user", "ok"]
    vectors = await embedder.embed(texts)
    await embedder.close()

    assert fake.requests == [
        {"model": "text-embedding-3-small", "input": texts, "encoding_format": "float"}
    ]
    assert fake.headers[0]["authorization"] == f"Bearer {API_KEY}"
    assert (embedder.model_name, embedder.dimension) == ("text-embedding-3-small", 1536)
    assert vectors.shape == (3, 1536)
    assert vectors.dtype == np.float32
    expected = np.stack([_raw_vector(text, 1536) for text in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


async def test_empty_input_sends_nothing(fake: FakeOpenAI) -> None:
    embedder = _embedder(fake, model="text-embedding-3-large")
    vectors = await embedder.embed([])
    await embedder.close()
    assert vectors.shape == (0, 3072)
    assert fake.requests == []


async def test_a_smaller_dimension_is_requested_from_v3_models(fake: FakeOpenAI) -> None:
    embedder = _embedder(fake, model="text-embedding-3-large", dimension=256)
    vectors = await embedder.embed(["shortened"])
    await embedder.close()
    assert fake.requests[0]["dimensions"] == 256
    assert vectors.shape == (1, 256)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


async def test_an_unknown_model_needs_its_dimension(fake: FakeOpenAI) -> None:
    with pytest.raises(ConfigurationError, match="dimension"):
        _embedder(fake, model="my-local-model")
    with pytest.raises(ConfigurationError, match="1536"):
        _embedder(fake, model="text-embedding-ada-002", dimension=512)
    embedder = _embedder(fake, model="my-local-model", dimension=1536)
    vectors = await embedder.embed(["x"])
    await embedder.close()
    assert "dimensions" not in fake.requests[0]
    assert vectors.shape == (1, 1536)


def test_an_api_key_is_required() -> None:
    with pytest.raises(ConfigurationError, match="API key"):
        OpenAIEmbedder("", base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, RateLimited),
        (401, Unauthorized),
        (403, Unauthorized),
        (500, EmbeddingFailed),
        (400, EmbeddingFailed),
    ],
)
async def test_http_errors_map_to_safe_domain_errors(
    fake: FakeOpenAI, status: int, error: type[AgentCoreError]
) -> None:
    fake.script.append(Reply(status=status, headers={"retry-after": "7"}))
    embedder = _embedder(fake)
    with pytest.raises(error) as raised:
        await embedder.embed(["anything"])
    await embedder.close()
    assert API_KEY not in str(raised.value)
    assert "Incorrect" not in str(raised.value)
    if status == 429:
        assert raised.value.details == {"retry_after": "7"}


async def test_a_server_error_is_retried(fake: FakeOpenAI) -> None:
    fake.script.append(Reply(status=500, headers={"retry-after-ms": "10"}))
    embedder = _embedder(fake, max_retries=1)
    vectors = await embedder.embed(["retried"])
    await embedder.close()
    assert len(fake.requests) == 2
    assert vectors.shape == (1, 1536)


async def test_a_timeout_is_an_embedding_failure(fake: FakeOpenAI) -> None:
    fake.script.append(Reply(delay=1.0))
    embedder = _embedder(fake, timeout=0.2)
    with pytest.raises(EmbeddingFailed, match="timed out"):
        await embedder.embed(["slow"])
    await embedder.close()


async def test_an_unreachable_server_is_an_embedding_failure() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    embedder = OpenAIEmbedder(API_KEY, base_url=url, max_retries=0)
    with pytest.raises(EmbeddingFailed, match="reach"):
        await embedder.embed(["nobody listens"])
    await embedder.close()


async def test_a_short_answer_is_an_embedding_failure(fake: FakeOpenAI) -> None:
    fake.script.append(Reply(drop_last=True))
    embedder = _embedder(fake)
    with pytest.raises(EmbeddingFailed, match="1 vectors for 2 texts"):
        await embedder.embed(["a", "b"])
    await embedder.close()
