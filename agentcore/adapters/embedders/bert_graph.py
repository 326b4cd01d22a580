"""A BERT encoder with sentence-transformers' pooling as an ONNX graph, built in memory.

No PyTorch and no exported ``.onnx`` file: the encoder is written out node by node with the
``onnx`` helper API from weights read with numpy (all-MiniLM-L6-v2's, multilingual-e5-small's).
The graph ends with mean pooling over the attention mask and L2 normalization, so it maps token
ids straight to sentence embeddings.

Inputs ``input_ids``, ``attention_mask`` and ``token_type_ids`` are int64 ``[batch, seq]``; the
output ``sentence_embedding`` is float32 ``[batch, hidden]``. Positions count from 0 in every
row; a model whose position table starts further in (XLM-R's starts at 2) is given the table
from that row on.

Weights use the names of ``BertModel``'s state dict (``embeddings.*``, ``encoder.layer.N.*``; a
``bert.`` prefix is accepted), linear weights ``[out, in]`` as torch stores them, each a float
array or a ``Q4Matrix``. The linear layers run fp32 or, with ``int8``, on int8 weights; a 4-bit
word embedding table stays 4-bit (``quantized_layers``).

``build_model`` gives a self-contained ``ModelProto`` (weights inline; it passes
``onnx.checker``); ``open_session`` builds the same nodes and hands the weights to onnxruntime
at load (``onnx_graph``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper

from agentcore.adapters.embedders import onnx_graph
from agentcore.adapters.embedders.onnx_graph import OPSET, GraphWriter
from agentcore.adapters.embedders.quantized_layers import (
    Int8Kernel,
    Q4Matrix,
    gather_q4,
    linear_fp32,
    linear_int8,
)

__all__ = [
    "INPUT_NAMES",
    "OPSET",
    "OUTPUT_NAME",
    "BertConfig",
    "Weights",
    "WeightsError",
    "build_model",
    "open_session",
]

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"

Weights = Mapping[str, npt.NDArray[np.float32] | Q4Matrix]


@dataclass(frozen=True)
class BertConfig:
    """The sizes of all-MiniLM-L6-v2 (its config.json); the graph takes other BERT sizes too."""

    num_layers: int = 6
    hidden: int = 384
    heads: int = 12
    intermediate: int = 1536
    layer_norm_eps: float = 1e-12
    vocab_size: int = 30522
    max_positions: int = 512
    token_types: int = 2

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


class WeightsError(ValueError):
    """The weights data is malformed or does not hold the expected BERT weights."""


def build_model(
    weights: Weights, config: BertConfig | None = None, *, int8: Int8Kernel | None = None
) -> onnx.ModelProto:
    """The encoder plus mean pooling and L2 normalization, its weights inline.

    ``int8`` runs float linear weights on int8 with that kernel; ``None`` keeps them fp32.
    """
    return _Encoder(_strip_prefix(weights), config or BertConfig(), inline=True, int8=int8).build()


def open_session(
    weights: Weights,
    *,
    threads: int = 1,
    config: BertConfig | None = None,
    int8: Int8Kernel | None = None,
) -> Any:
    """Build the graph and open an ``onnxruntime.InferenceSession`` of it on the CPU.

    Neither ``weights`` nor the file buffer they may view is needed afterwards. onnxruntime's
    own errors pass through; ``WeightsError`` reports missing or misshapen weights.
    """
    encoder = _Encoder(_strip_prefix(weights), config or BertConfig(), inline=False, int8=int8)
    model = encoder.build()
    return onnx_graph.open_session(encoder.graph, model, threads=threads)


def _strip_prefix(weights: Weights) -> Weights:
    if any(name.startswith("embeddings.") for name in weights):
        return weights
    return {name.removeprefix("bert."): array for name, array in weights.items()}


class _Encoder:
    def __init__(
        self, weights: Weights, config: BertConfig, *, inline: bool, int8: Int8Kernel | None
    ) -> None:
        self._weights = weights
        self._config = config
        self._int8 = int8
        self.graph = GraphWriter(inline=inline)

    def build(self) -> onnx.ModelProto:
        config, graph = self._config, self.graph
        # Between the embeddings and the pooling the tokens of every text are rows of one
        # [tokens, hidden] matrix, as the linear layers take them; attention reshapes them to
        # [batch, seq, heads, head_size] with this shape, computed once.
        batch_seq = graph.node("Shape", ["input_ids"], "batch_seq")
        heads = np.array([config.heads, config.head_size], dtype=np.int64)
        self._heads_shape = graph.node(
            "Concat", [batch_seq, graph.constant("heads", heads)], "heads_shape", axis=0
        )
        self._rows_shape = graph.constant("rows", np.array([-1, config.hidden], np.int64))
        hidden = self._embeddings()
        mask = self.graph.node("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
        bias = self._attention_bias(mask)
        for layer in range(config.num_layers):
            hidden = self._layer(hidden, bias, f"encoder.layer.{layer}")
        hidden_shape = graph.node(
            "Concat",
            [batch_seq, graph.constant("hidden", np.array([config.hidden], np.int64))],
            "hidden_shape",
            axis=0,
        )
        self._pool(graph.node("Reshape", [hidden, hidden_shape], "token_states"), mask)
        return self.graph.model(
            "bert-sentence-encoder",
            inputs=[
                helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
                for name in INPUT_NAMES
            ],
            outputs=[
                helper.make_tensor_value_info(
                    OUTPUT_NAME, TensorProto.FLOAT, ["batch", config.hidden]
                )
            ],
        )

    # -- weights ------------------------------------------------------------------------

    def _tensor(self, name: str, shape: tuple[int, ...]) -> npt.NDArray[np.float32] | Q4Matrix:
        try:
            tensor = self._weights[name]
        except KeyError:
            raise WeightsError(f"the weights have no tensor {name!r}") from None
        if tuple(tensor.shape) != shape:
            raise WeightsError(f"{name} has shape {tuple(tensor.shape)}, expected {shape}")
        return tensor

    def _weight(self, name: str, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
        tensor = self._tensor(name, shape)
        if isinstance(tensor, Q4Matrix):
            return tensor.dequantized()
        return np.asarray(tensor, dtype=np.float32)

    def _linear(self, x: str, prefixes: list[str], size_in: int, size_out: int) -> str:
        """``x @ W.T + b`` for torch Linears stored as ``[out, in]``, side by side.

        Several ``prefixes`` (the attention's query, key and value) become one wider product,
        whose output columns follow the order of ``prefixes``.
        """
        name = prefixes[0] if len(prefixes) == 1 else f"{prefixes[0]}+{len(prefixes)}"
        bias = np.concatenate([self._weight(f"{prefix}.bias", (size_out,)) for prefix in prefixes])
        weight = np.concatenate(
            [self._weight(f"{prefix}.weight", (size_out, size_in)).T for prefix in prefixes],
            axis=1,
        )
        if self._int8 is None:
            return linear_fp32(self.graph, x, name, weight, bias)
        return linear_int8(self.graph, x, name, weight, bias, self._int8)

    def _layer_norm(self, x: str, prefix: str) -> str:
        size = self._config.hidden
        scale = self.graph.parameter(f"{prefix}.weight", self._weight(f"{prefix}.weight", (size,)))
        shift = self.graph.parameter(f"{prefix}.bias", self._weight(f"{prefix}.bias", (size,)))
        return self.graph.node(
            "LayerNormalization",
            [x, scale, shift],
            "layer_norm",
            axis=-1,
            epsilon=self._config.layer_norm_eps,
        )

    # -- the model ------------------------------------------------------------------------

    def _embeddings(self) -> str:
        config, graph = self._config, self.graph
        name = "embeddings.word_embeddings.weight"
        words = self._tensor(name, (config.vocab_size, config.hidden))
        if isinstance(words, Q4Matrix):
            word = gather_q4(graph, name, words, "input_ids")
        else:
            table = graph.parameter(name, np.asarray(words, dtype=np.float32))
            word = graph.node("Gather", [table, "input_ids"], "word_embedding")
        positions = self._weight(
            "embeddings.position_embeddings.weight", (config.max_positions, config.hidden)
        )
        types = self._weight(
            "embeddings.token_type_embeddings.weight", (config.token_types, config.hidden)
        )
        token_type = graph.node(
            "Gather",
            [graph.parameter("embeddings.token_type_embeddings.weight", types), "token_type_ids"],
            "token_type_embedding",
        )
        # Positions 0..seq-1 in every row (BERT ignores padding here), as a cumulative sum of
        # ones shaped like input_ids, so shape inference keeps [batch, seq] downstream.
        zero = graph.constant("zero_int", np.array(0, dtype=np.int64))
        one = graph.constant("one_int", np.array(1, dtype=np.int64))
        ones = graph.node("Add", [graph.node("Mul", ["input_ids", zero], "zeros"), one], "ones")
        counted = graph.node(
            "CumSum", [ones, graph.constant("axis_1_scalar", np.array(1, dtype=np.int64))], "count"
        )
        position_ids = graph.node("Sub", [counted, one], "position_ids")
        position = graph.node(
            "Gather",
            [graph.parameter("embeddings.position_embeddings.weight", positions), position_ids],
            "position_embedding",
        )
        summed = graph.node("Add", [word, token_type], "embedding_sum")
        summed = graph.node("Add", [summed, position], "embedding_sum")
        rows = graph.node("Reshape", [summed, self._rows_shape], "embedding_rows")
        return self._layer_norm(rows, "embeddings.LayerNorm")

    def _attention_bias(self, mask: str) -> str:
        """0 where the mask is 1, float32's lowest where it is 0, as ``[batch, 1, 1, seq]``."""
        graph = self.graph
        one = graph.constant("one_float", np.array(1.0, dtype=np.float32))
        masked_out = graph.node("Sub", [one, mask], "masked")
        lowest = np.array(np.finfo(np.float32).min, dtype=np.float32)
        bias = graph.node(
            "Mul", [masked_out, graph.constant("lowest_float", lowest)], "attention_bias"
        )
        return graph.node(
            "Unsqueeze",
            [bias, graph.constant("axes_1_2", np.array([1, 2], dtype=np.int64))],
            "attention_bias_4d",
        )

    def _layer(self, x: str, bias: str, prefix: str) -> str:
        config, graph = self._config, self.graph
        size = config.hidden
        names = ("query", "key", "value")
        projected = self._linear(x, [f"{prefix}.attention.self.{n}" for n in names], size, size)
        thirds = [graph.name(f"{n}_projected") for n in names]
        graph.nodes.append(
            helper.make_node(
                "Split",
                [projected, graph.constant("qkv_split", np.array([size] * 3, np.int64))],
                thirds,
                graph.name("Split"),
                axis=-1,
            )
        )

        def heads_of(projection: str, name: str, perm: list[int]) -> str:
            shaped = graph.node("Reshape", [projection, self._heads_shape], f"{name}_heads")
            return graph.node("Transpose", [shaped], f"{name}_t", perm=perm)

        query = heads_of(thirds[0], "query", [0, 2, 1, 3])  # [batch, heads, seq, head_size]
        key = heads_of(thirds[1], "key", [0, 2, 3, 1])  # [batch, heads, head_size, seq]
        value = heads_of(thirds[2], "value", [0, 2, 1, 3])
        scores = graph.node("MatMul", [query, key], "scores")
        scale = np.array(1 / math.sqrt(config.head_size), np.float32)
        scores = graph.node(
            "Mul", [scores, graph.constant("attention_scale", scale)], "scaled_scores"
        )
        scores = graph.node("Add", [scores, bias], "masked_scores")
        probs = graph.node("Softmax", [scores], "attention_probs", axis=-1)
        context = graph.node("MatMul", [probs, value], "context")
        context = graph.node("Transpose", [context], "context_t", perm=[0, 2, 1, 3])
        context = graph.node("Reshape", [context, self._rows_shape], "context_rows")
        attended = self._linear(context, [f"{prefix}.attention.output.dense"], size, size)
        attended = graph.node("Add", [attended, x], "attention_residual")
        attended = self._layer_norm(attended, f"{prefix}.attention.output.LayerNorm")

        inner = self._linear(attended, [f"{prefix}.intermediate.dense"], size, config.intermediate)
        inner = self._gelu(inner)
        out = self._linear(inner, [f"{prefix}.output.dense"], config.intermediate, size)
        out = graph.node("Add", [out, attended], "output_residual")
        return self._layer_norm(out, f"{prefix}.output.LayerNorm")

    def _gelu(self, x: str) -> str:
        """BERT's exact GELU, ``0.5 * x * (1 + erf(x / sqrt(2)))``."""
        graph = self.graph
        sqrt2 = graph.constant("sqrt2", np.array(math.sqrt(2), np.float32))
        erf = graph.node("Erf", [graph.node("Div", [x, sqrt2], "gelu_div")], "gelu_erf")
        one = graph.constant("gelu_one", np.array(1.0, np.float32))
        half = graph.constant("gelu_half", np.array(0.5, np.float32))
        shifted = graph.node("Add", [erf, one], "gelu_add")
        product = graph.node("Mul", [x, shifted], "gelu_mul")
        return graph.node("Mul", [product, half], "gelu")

    def _pool(self, hidden: str, mask: str) -> None:
        """Mean over the unmasked tokens, then divide by the L2 norm (floored like torch)."""
        graph = self.graph
        mask = graph.node(
            "Unsqueeze",
            [mask, graph.constant("axis_2", np.array([2], dtype=np.int64))],
            "mask_3d",
        )
        axis_1 = graph.constant("axis_1", np.array([1], dtype=np.int64))
        weighted = graph.node("Mul", [hidden, mask], "masked_hidden")
        summed = graph.node("ReduceSum", [weighted, axis_1], "summed", keepdims=0)
        counts = graph.node("ReduceSum", [mask, axis_1], "counts", keepdims=0)
        counts = graph.node(
            "Max", [counts, graph.constant("count_floor", np.array(1e-9, np.float32))], "counts"
        )
        mean = graph.node("Div", [summed, counts], "mean")
        norm = graph.node("ReduceL2", [mean], "norm", axes=[-1], keepdims=1)  # axes: attr in 17
        norm = graph.node(
            "Max", [norm, graph.constant("norm_floor", np.array(1e-12, np.float32))], "norm"
        )
        graph.nodes.append(helper.make_node("Div", [mean, norm], [OUTPUT_NAME], "normalize"))
