"""OpenAI's embeddings API (or any server that speaks it), mapped onto the Embedder port."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import openai

from agentcore.adapters.openai_errors import map_openai_error
from agentcore.domain.errors import (
    AgentCoreError,
    ConfigurationError,
    EmbeddingFailed,
)
from agentcore.services.ports import Vectors

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_SHORTENABLE = ("text-embedding-3-small", "text-embedding-3-large")
_MAX_INPUTS_PER_REQUEST = 2048  # the API's limit on one request's input list


class OpenAIEmbedder:
    """Embeds through ``/v1/embeddings``; vectors are re-normalized to unit length as float32.

    ``dimension`` is required for a model not in ``KNOWN_DIMENSIONS``. For the text-embedding-3
    models a smaller ``dimension`` is requested from the API (``dimensions``), which shortens them.
    ``base_url`` defaults to OpenAI's, explicitly, so no environment variable can redirect it.
    """

    def __init__(
        self,
        api_key: str,
        *,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        dimension: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not api_key:
            raise ConfigurationError("the OpenAI embedder needs an API key (OPENAI_API_KEY)")
        self._model = model
        self._dimension, self._request_dimensions = _resolve_dimension(model, dimension)
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url or DEFAULT_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
        )

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def precision(self) -> str:
        return "remote"

    @property
    def background_similarity(self) -> float:
        return 0.0  # not measured: cosines are used as they come

    async def embed_query(self, text: str) -> Vectors:
        vectors: Vectors = (await self.embed([text]))[0]
        return vectors

    async def embed_now(self, texts: Sequence[str]) -> Vectors:
        return await self.embed(texts)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single str")
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        chunks = [
            await self._embed_chunk(list(texts[start : start + _MAX_INPUTS_PER_REQUEST]))
            for start in range(0, len(texts), _MAX_INPUTS_PER_REQUEST)
        ]
        vectors = np.concatenate(chunks)
        norms: Vectors = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(norms > 0):
            raise EmbeddingFailed("the embedding provider returned a zero vector")
        return (vectors / norms).astype(np.float32)

    async def close(self) -> None:
        await self._client.close()

    async def _embed_chunk(self, texts: list[str]) -> Vectors:
        dimensions = openai.omit if self._request_dimensions is None else self._request_dimensions
        try:
            response = await self._client.embeddings.create(
                model=self._model, input=texts, encoding_format="float", dimensions=dimensions
            )
        except openai.OpenAIError as exc:
            raise _map_error(exc) from exc
        rows = sorted(response.data, key=lambda item: item.index)
        if len(rows) != len(texts) or any(len(row.embedding) != self._dimension for row in rows):
            raise EmbeddingFailed(
                f"the embedding provider returned {len(rows)} vectors for {len(texts)} texts, "
                f"or vectors not of dimension {self._dimension}"
            )
        return np.array([row.embedding for row in rows], dtype=np.float32)


def _resolve_dimension(model: str, dimension: int | None) -> tuple[int, int | None]:
    """The embedder's dimension, and the ``dimensions`` to send (None: the model's own)."""
    known = KNOWN_DIMENSIONS.get(model)
    if dimension is None:
        if known is None:
            raise ConfigurationError(
                f"the dimension of embedding model {model!r} is unknown; pass it explicitly"
            )
        return known, None
    if dimension < 1:
        raise ConfigurationError("the embedding dimension must be positive")
    if known is None or dimension == known:
        return dimension, None
    if model in _SHORTENABLE and dimension < known:
        return dimension, dimension
    raise ConfigurationError(f"embedding model {model!r} has dimension {known}, not {dimension}")


def _map_error(exc: openai.OpenAIError) -> AgentCoreError:
    return map_openai_error(exc, "the embedding provider", EmbeddingFailed)
