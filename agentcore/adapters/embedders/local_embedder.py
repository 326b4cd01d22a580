"""A sentence encoder run offline on onnxruntime (``LocalEmbedder``), whichever model it is.

A ``LocalModel`` is what a model contributes: its onnxruntime session (token ids in, unit
sentence vectors out: ``bert_graph``), its tokenizer, its token limit and the prefixes it was
trained with (e5 reads "query: " before a search and "passage: " before a stored text). The
embedder strips each text, adds the prefix, tokenizes, truncates at the limit and runs the
session in length-sorted runs.

Texts are embedded on threads owned by the embedder, never on the event loop, by three
``BatchingRunner``s: stored texts (the indexer's batches, behind the writes' replies) on
``threads`` threads at a lower priority; queries on one thread of their own, so a search
never queues behind a batch being indexed; and stored texts a search is waiting for
(``embed_now``) on another. Each takes every text waiting when it starts a run,
so the queries of concurrent searches are embedded together; the graphs quantize each token on
its own, so a text's vector does not depend on the texts run beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentcore.adapters.embedders.batching import BatchingRunner
from agentcore.adapters.embedders.bert_graph import INPUT_NAMES, OUTPUT_NAME
from agentcore.domain.errors import ConfigurationError, EmbeddingFailed
from agentcore.services.ports import Vectors

Tokenize = Callable[[list[str]], list[list[int]]]
"""Token ids of each text, special tokens included, truncated to the model's limit."""

# Padded tokens per onnxruntime run: on one thread, bigger runs of long texts got slower per
# text (cache misses), while short texts still batch up to ``batch_size``.
_TOKENS_PER_RUN = 512
_QUERIES_PER_TAKE = 64  # queries of concurrent searches embedded in one call
# Stored texts a thread takes at once: small enough that the indexer's batch of twenty is
# shared by every thread, and runs of 8 embedded as many texts per second as runs of 64.
_STORED_PER_TAKE = 8
# Stored texts are embedded at a lower priority than requests are served (``batching``).
_STORED_NICE = 10
# Texts about unrelated things: the mean cosine of one read as a query with another read as a
# stored text is the model's background similarity (``LocalEmbedder.background_similarity``).
_UNRELATED = (
    "The forecast says heavy rain in the mountains tomorrow afternoon.",
    "Refactor the parser so that it returns a syntax tree instead of tokens.",
    "Simmer the onions in butter until they turn golden brown.",
    "Quarterly revenue grew four percent while operating costs fell.",
    "The striker scored twice in the second half of the final.",
    "She practised the cello sonata every evening before the recital.",
    "Take one tablet twice a day after meals for a week.",
    "Our flight to Lisbon was delayed by three hours at the gate.",
    "The tenant must give two months' written notice before leaving.",
    "Prune the roses in late winter, just above an outward bud.",
    "The telescope caught a faint comet near the horizon at dawn.",
    "White sacrificed a knight to open the king's diagonal.",
)


@dataclass(frozen=True)
class LocalModel:
    name: str
    dimension: int
    precision: str  # how its linear layers run, for health: "int8 (u8s8 kernel)", "4-bit", …
    session: Any  # an onnxruntime InferenceSession of a ``bert_graph`` encoder
    tokenize: Tokenize
    query_prefix: str = ""
    passage_prefix: str = ""


class LocalEmbedder:
    def __init__(self, model: LocalModel, *, batch_size: int = 32, threads: int = 1) -> None:
        """``batch_size`` caps the texts per onnxruntime run; ``threads``: the threads that
        embed stored texts (queries have one of their own)."""
        if batch_size < 1:
            raise ConfigurationError("the local embedder's batch size must be at least 1")
        if threads < 1:
            raise ConfigurationError("the local embedder needs at least one thread")
        self._model = model
        self._batch_size = batch_size
        self._documents = BatchingRunner(
            self._embed_passages,
            model.dimension,
            threads=threads,
            take=min(batch_size, _STORED_PER_TAKE),
            name="embed",
            nice=_STORED_NICE,
        )
        self._queries = BatchingRunner(
            self._embed_queries, model.dimension, threads=1, take=_QUERIES_PER_TAKE, name="query"
        )
        self._urgent = BatchingRunner(
            self._embed_passages, model.dimension, threads=1, take=_QUERIES_PER_TAKE, name="now"
        )
        self._closed = False
        self._background = _mean_pair_cosine(
            self._embed_queries(list(_UNRELATED)), self._embed_passages(list(_UNRELATED))
        )

    @property
    def model_name(self) -> str:
        return self._model.name

    @property
    def dimension(self) -> int:
        return self._model.dimension

    @property
    def precision(self) -> str:
        return self._model.precision

    @property
    def background_similarity(self) -> float:
        return self._background

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not a single str")
        if self._closed:
            raise RuntimeError("the embedder is closed")
        return await self._documents.run(list(texts))

    async def embed_query(self, text: str) -> Vectors:
        if self._closed:
            raise RuntimeError("the embedder is closed")
        vector: Vectors = (await self._queries.run([text]))[0]
        return vector

    async def embed_now(self, texts: Sequence[str]) -> Vectors:
        if self._closed:
            raise RuntimeError("the embedder is closed")
        return await self._urgent.run(list(texts))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # The texts already queued are still embedded; then the threads stop.
        await self._documents.close()
        await self._queries.close()
        await self._urgent.close()

    def _embed_passages(self, texts: list[str]) -> Vectors:
        return self._embed_now([self._model.passage_prefix + text.strip() for text in texts])

    def _embed_queries(self, texts: list[str]) -> Vectors:
        return self._embed_now([self._model.query_prefix + text.strip() for text in texts])

    def _embed_now(self, texts: list[str]) -> Vectors:
        token_ids = self._model.tokenize(texts)
        # Longest first, so each run holds texts of similar length and pads little.
        order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]), reverse=True)
        vectors = np.empty((len(texts), self._model.dimension), dtype=np.float32)
        start = 0
        while start < len(order):
            width = len(token_ids[order[start]])
            size = min(self._batch_size, max(1, _TOKENS_PER_RUN // width))
            rows = order[start : start + size]
            vectors[rows] = self._infer([token_ids[i] for i in rows])
            start += size
        return vectors

    def _infer(self, token_ids: list[list[int]]) -> Vectors:
        width = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros((len(token_ids), width), dtype=np.int64)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feed = dict(zip(INPUT_NAMES, (input_ids, mask, np.zeros_like(input_ids)), strict=True))
        try:
            vectors = self._model.session.run([OUTPUT_NAME], feed)[0]
        # onnxruntime's own errors derive from Exception directly, with no common base.
        except Exception as exc:
            raise EmbeddingFailed("the local embedding model failed to run") from exc
        result: Vectors = np.asarray(vectors, dtype=np.float32)
        return result


def _mean_pair_cosine(queries: Vectors, passages: Vectors) -> float:
    """The mean cosine of each query (unit rows) with the passages of the other texts."""
    products = queries @ passages.T
    count = len(queries)
    return float((products.sum() - np.trace(products)) / (count * (count - 1)))
