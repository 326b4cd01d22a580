"""all-MiniLM-L6-v2 as an fp32 ONNX graph, built in memory from the model's safetensors weights.

No PyTorch and no exported ``.onnx`` file: the BERT encoder is written out node by node with the
``onnx`` helper API and the weights are read from the safetensors file with numpy. The graph ends
with sentence-transformers' pooling (mean over the attention mask, then L2 normalization), so it
maps token ids straight to sentence embeddings.

Inputs ``input_ids``, ``attention_mask`` and ``token_type_ids`` are int64 ``[batch, seq]``; the
output ``sentence_embedding`` is float32 ``[batch, 384]``.

``build_model`` gives a self-contained ``ModelProto`` (weights inline; it passes
``onnx.checker``). ``open_session`` builds the same nodes but hands the weights to onnxruntime as
external initializers, so the serialized graph is a few kilobytes. Serializing the 90 MB of
weights into protobuf instead made start about 3x slower and doubled peak memory, and
onnxruntime's Python wrapper keeps a session's model bytes for the session's lifetime.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization needs 17; onnxruntime supports it everywhere we run
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "sentence_embedding"

Weights = Mapping[str, npt.NDArray[np.float32]]


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

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


class WeightsError(ValueError):
    """The safetensors data is malformed or does not hold the expected BERT weights."""


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(data: bytes) -> dict[str, npt.NDArray[np.float32]]:
    """Parse a safetensors file's bytes: the float tensors as float32 arrays, by name.

    The format is an 8-byte little-endian header length, a JSON header giving each tensor's
    dtype, shape and byte range, and the raw little-endian buffer. Arrays of float32 data are
    read-only views into ``data``; integer tensors (BERT's ``position_ids`` buffer) are skipped.
    """
    if len(data) < 8:
        raise WeightsError("too short for a safetensors file")
    (header_size,) = struct.unpack_from("<Q", data, 0)
    if 8 + header_size > len(data):
        raise WeightsError("the safetensors header runs past the end of the file")
    try:
        header = json.loads(data[8 : 8 + header_size])
    except ValueError as exc:
        raise WeightsError("the safetensors header is not JSON") from exc
    if not isinstance(header, dict):
        raise WeightsError("the safetensors header is not a JSON object")
    buffer = memoryview(data)[8 + header_size :]
    tensors: dict[str, npt.NDArray[np.float32]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _SAFETENSORS_DTYPES[entry["dtype"]]
            shape = tuple(int(size) for size in entry["shape"])
            begin, end = (int(offset) for offset in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise WeightsError(f"bad safetensors entry for {name!r}") from exc
        count = math.prod(shape)
        if (
            min(shape, default=0) < 0
            or not 0 <= begin <= end <= len(buffer)
            or end - begin != count * np.dtype(dtype).itemsize
        ):
            raise WeightsError(f"bad data offsets for {name!r}")
        if dtype is np.int64:
            continue
        array = np.frombuffer(buffer[begin:end], dtype=np.dtype(dtype).newbyteorder("<"))
        tensors[name] = array.reshape(shape).astype(np.float32, copy=False)
    return tensors


def build_model(
    weights: Weights, config: BertConfig | None = None, *, int8: bool = False
) -> onnx.ModelProto:
    """The encoder plus mean pooling and L2 normalization, from Hugging Face BERT weights.

    ``weights`` uses the names of ``BertModel``'s state dict (``embeddings.*``,
    ``encoder.layer.N.*``; a ``bert.`` prefix is accepted). Linear weights are stored
    ``[out, in]`` there and transposed here for ``MatMul``. ``int8`` quantizes the linear
    layers' weights (see ``_GraphBuilder._linear``).
    """
    builder = _GraphBuilder(_strip_prefix(weights), config or BertConfig(), inline=True, int8=int8)
    return builder.build()


def open_session(
    weights: Weights, *, threads: int = 1, config: BertConfig | None = None, int8: bool = False
) -> Any:
    """Build the graph and open an ``onnxruntime.InferenceSession`` of it on the CPU.

    The weights go to onnxruntime as external initializers, which it copies while loading (its
    documented behaviour since 1.12), so neither ``weights`` nor the file buffer they may view
    is needed afterwards. ``threads`` sets both intra- and inter-op threads, and runs are
    sequential. ``int8`` runs the linear layers on int8 weights. onnxruntime's own errors pass
    through; ``WeightsError`` reports missing or misshapen weights.
    """
    builder = _GraphBuilder(_strip_prefix(weights), config or BertConfig(), inline=False, int8=int8)
    graph = builder.build().SerializeToString()  # a few kilobytes: nodes and small constants
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = threads
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Helper threads spin while a run goes on (waking them took longer than the work), and stop
    # when it ends instead of burning a core through the write that follows.
    options.add_session_config_entry("session.force_spinning_stop", "1")
    options.add_external_initializers(
        list(builder.external),
        [ort.OrtValue.ortvalue_from_numpy(array) for array in builder.external.values()],
    )
    return ort.InferenceSession(graph, sess_options=options, providers=["CPUExecutionProvider"])


def _strip_prefix(weights: Weights) -> Weights:
    if any(name.startswith("embeddings.") for name in weights):
        return weights
    return {name.removeprefix("bert."): array for name, array in weights.items()}


class _GraphBuilder:
    def __init__(self, weights: Weights, config: BertConfig, *, inline: bool, int8: bool) -> None:
        self._weights = weights
        self._config = config
        self._inline = inline
        self._int8 = int8
        # Tensors left out of the graph when not ``inline``, by initializer name.
        self.external: dict[str, npt.NDArray[np.generic]] = {}
        self._nodes: list[onnx.NodeProto] = []
        self._initializers: list[TensorProto] = []
        self._count = 0
        self._names: set[str] = set()

    def build(self) -> onnx.ModelProto:
        config = self._config
        hidden = self._embeddings()
        mask = self._node("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
        bias = self._attention_bias(mask)
        for layer in range(config.num_layers):
            hidden = self._layer(hidden, bias, f"encoder.layer.{layer}")
        self._pool(hidden, mask)
        batch_seq = ["batch", "seq"]
        graph = helper.make_graph(
            self._nodes,
            "all-MiniLM-L6-v2",
            inputs=[
                helper.make_tensor_value_info(name, TensorProto.INT64, batch_seq)
                for name in INPUT_NAMES
            ],
            outputs=[
                helper.make_tensor_value_info(
                    OUTPUT_NAME, TensorProto.FLOAT, ["batch", config.hidden]
                )
            ],
            initializer=self._initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="agentcore.minilm_graph",
        )
        model.ir_version = 8  # what opset 17 came with; any onnxruntime >= 1.13 reads it
        return model

    # -- graph plumbing -------------------------------------------------------------------

    def _name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def _node(self, op: str, inputs: list[str], hint: str, **attributes: Any) -> str:
        output = self._name(hint)
        self._nodes.append(helper.make_node(op, inputs, [output], self._name(op), **attributes))
        return output

    def _constant(self, name: str, value: npt.NDArray[np.generic]) -> str:
        """An initializer; small constants shared by the layers are added once."""
        if name not in self._names:
            self._names.add(name)
            self._initializers.append(numpy_helper.from_array(value, name))
        return name

    def _parameter(self, name: str, value: npt.NDArray[np.generic]) -> str:
        """A weight tensor: inline, or a placeholder for an external initializer."""
        if self._inline:
            return self._constant(name, value)
        # Transposed or joined weights are copies already; the rest stay views of the file buffer.
        array = np.ascontiguousarray(value)
        placeholder = TensorProto(
            name=name,
            data_type=helper.np_dtype_to_tensor_dtype(array.dtype),
            dims=array.shape,
            data_location=TensorProto.EXTERNAL,
        )
        placeholder.external_data.add(key="location", value="supplied-by-the-session-options")
        self._initializers.append(placeholder)
        self.external[name] = array
        return name

    def _weight(self, name: str, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
        try:
            array = self._weights[name]
        except KeyError:
            raise WeightsError(f"the weights have no tensor {name!r}") from None
        if tuple(array.shape) != shape:
            raise WeightsError(f"{name} has shape {tuple(array.shape)}, expected {shape}")
        return np.asarray(array, dtype=np.float32)

    def _linear(self, x: str, prefixes: list[str], size_in: int, size_out: int) -> str:
        """``x @ W.T + b`` for torch Linears stored as ``[out, in]``, side by side.

        Several ``prefixes`` (the attention's query, key and value) become one wider product,
        whose output columns follow the order of ``prefixes``. With ``int8``, each weight column
        is scaled to [-127, 127] by its own largest magnitude and rounded, and each row of
        ``x`` (one token) is quantized at run time on its own (``_quantized_rows``).
        """
        name = prefixes[0] if len(prefixes) == 1 else f"{prefixes[0]}+{len(prefixes)}"
        weight = np.concatenate(
            [self._weight(f"{prefix}.weight", (size_out, size_in)).T for prefix in prefixes],
            axis=1,
        )
        bias = np.concatenate([self._weight(f"{prefix}.bias", (size_out,)) for prefix in prefixes])
        bias_name = self._parameter(f"{name}.bias", bias)
        if not self._int8:
            product = self._node("MatMul", [x, self._parameter(f"{name}.weight", weight)], "matmul")
            return self._node("Add", [product, bias_name], "linear")
        scale = np.abs(weight).max(axis=0) / 127
        scale[scale == 0] = 1.0
        quantized = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
        # (q - zero) @ Wq = q @ Wq - zero * (the column sums of Wq): the zero points of the rows
        # are applied to the int32 product, so MatMulInteger runs without zero points.
        column_sums = quantized.astype(np.int64).sum(axis=0).astype(np.float32)
        rows, row_scale, row_zero = self._quantized_rows(x)
        product = self._node(
            "MatMulInteger", [rows, self._parameter(f"{name}.weight_int8", quantized)], "qmm"
        )
        product = self._node("Cast", [product], "qmm_float", to=TensorProto.FLOAT)
        shift = self._node(
            "Mul", [row_zero, self._parameter(f"{name}.column_sums", column_sums)], "qmm_shift"
        )
        product = self._node("Sub", [product, shift], "qmm_centred")
        product = self._node("Mul", [product, row_scale], "qmm_row_scaled")
        weight_scale = self._parameter(f"{name}.weight_scale", scale.astype(np.float32))
        product = self._node("Mul", [product, weight_scale], "qmm_scaled")
        return self._node("Add", [product, bias_name], "linear")

    def _quantized_rows(self, x: str) -> tuple[str, str, str]:
        """``x`` as uint8, each row (one token's activations) on its own scale and zero point
        (their range, widened to hold 0, over 255 steps), and those scales and zero points
        (float, ``[..., 1]``). A row's codes depend on that row alone, so a text's vector does
        not depend on the texts run beside it; a scale per tensor (onnxruntime's
        ``DynamicQuantizeMatMul``) made it (cosine down to 0.97 between two batches)."""
        zero = self._constant("zero_float", np.array(0.0, np.float32))
        steps = self._constant("uint8_steps", np.array(255.0, np.float32))
        highest = self._node("ReduceMax", [x], "row_max", axes=[-1], keepdims=1)
        lowest = self._node("ReduceMin", [x], "row_min", axes=[-1], keepdims=1)
        highest = self._node("Max", [highest, zero], "row_max0")
        lowest = self._node("Min", [lowest, zero], "row_min0")
        spread = self._node("Sub", [highest, lowest], "row_range")
        tiny = self._constant("range_floor", np.array(1e-8, np.float32))
        spread = self._node("Max", [spread, tiny], "row_range")
        scale = self._node("Div", [spread, steps], "row_scale")
        zero_point = self._node("Neg", [self._node("Div", [lowest, scale], "row_low")], "row_zp")
        zero_point = self._node("Round", [zero_point], "row_zero")
        codes = self._node("Round", [self._node("Div", [x, scale], "row_scaled")], "row_codes")
        codes = self._node("Add", [codes, zero_point], "row_shifted")
        codes = self._node("Clip", [codes, zero, steps], "row_clipped")
        return self._node("Cast", [codes], "row_uint8", to=TensorProto.UINT8), scale, zero_point

    def _layer_norm(self, x: str, prefix: str) -> str:
        size = self._config.hidden
        scale = self._parameter(f"{prefix}.weight", self._weight(f"{prefix}.weight", (size,)))
        shift = self._parameter(f"{prefix}.bias", self._weight(f"{prefix}.bias", (size,)))
        return self._node(
            "LayerNormalization",
            [x, scale, shift],
            "layer_norm",
            axis=-1,
            epsilon=self._config.layer_norm_eps,
        )

    # -- the model ------------------------------------------------------------------------

    def _embeddings(self) -> str:
        config = self._config
        words = self._weight(
            "embeddings.word_embeddings.weight", (config.vocab_size, config.hidden)
        )
        positions = self._weight(
            "embeddings.position_embeddings.weight", (config.max_positions, config.hidden)
        )
        types = self._weight("embeddings.token_type_embeddings.weight", (2, config.hidden))
        word = self._node(
            "Gather",
            [self._parameter("embeddings.word_embeddings.weight", words), "input_ids"],
            "word_embedding",
        )
        token_type = self._node(
            "Gather",
            [self._parameter("embeddings.token_type_embeddings.weight", types), "token_type_ids"],
            "token_type_embedding",
        )
        # Positions 0..seq-1 in every row (BERT ignores padding here), as a cumulative sum of
        # ones shaped like input_ids, so shape inference keeps [batch, seq] downstream.
        zero = self._constant("zero_int", np.array(0, dtype=np.int64))
        one = self._constant("one_int", np.array(1, dtype=np.int64))
        ones = self._node("Add", [self._node("Mul", ["input_ids", zero], "zeros"), one], "ones")
        counted = self._node(
            "CumSum", [ones, self._constant("axis_1_scalar", np.array(1, dtype=np.int64))], "count"
        )
        position_ids = self._node("Sub", [counted, one], "position_ids")
        position = self._node(
            "Gather",
            [self._parameter("embeddings.position_embeddings.weight", positions), position_ids],
            "position_embedding",
        )
        summed = self._node("Add", [word, token_type], "embedding_sum")
        summed = self._node("Add", [summed, position], "embedding_sum")
        return self._layer_norm(summed, "embeddings.LayerNorm")

    def _attention_bias(self, mask: str) -> str:
        """0 where the mask is 1, float32's lowest where it is 0, as ``[batch, 1, 1, seq]``."""
        masked_out = self._node(
            "Sub", [self._constant("one_float", np.array(1.0, dtype=np.float32)), mask], "masked"
        )
        lowest = np.array(np.finfo(np.float32).min, dtype=np.float32)
        bias = self._node(
            "Mul", [masked_out, self._constant("lowest_float", lowest)], "attention_bias"
        )
        return self._node(
            "Unsqueeze",
            [bias, self._constant("axes_1_2", np.array([1, 2], dtype=np.int64))],
            "attention_bias_4d",
        )

    def _layer(self, x: str, bias: str, prefix: str) -> str:
        config = self._config
        heads, head_size, size = config.heads, config.head_size, config.hidden
        split_heads = self._constant(
            "split_heads_shape", np.array([0, 0, heads, head_size], dtype=np.int64)
        )
        merge_heads = self._constant("merge_heads_shape", np.array([0, 0, size], dtype=np.int64))

        names = ("query", "key", "value")
        projected = self._linear(x, [f"{prefix}.attention.self.{n}" for n in names], size, size)
        thirds = [self._name(f"{n}_projected") for n in names]
        self._nodes.append(
            helper.make_node(
                "Split",
                [projected, self._constant("qkv_split", np.array([size] * 3, np.int64))],
                thirds,
                self._name("Split"),
                axis=-1,
            )
        )

        def heads_of(projection: str, name: str, perm: list[int]) -> str:
            shaped = self._node("Reshape", [projection, split_heads], f"{name}_heads")
            return self._node("Transpose", [shaped], f"{name}_t", perm=perm)

        query = heads_of(thirds[0], "query", [0, 2, 1, 3])  # [batch, heads, seq, head_size]
        key = heads_of(thirds[1], "key", [0, 2, 3, 1])  # [batch, heads, head_size, seq]
        value = heads_of(thirds[2], "value", [0, 2, 1, 3])
        scores = self._node("MatMul", [query, key], "scores")
        scale = self._constant("attention_scale", np.array(1 / math.sqrt(head_size), np.float32))
        scores = self._node("Mul", [scores, scale], "scaled_scores")
        scores = self._node("Add", [scores, bias], "masked_scores")
        probs = self._node("Softmax", [scores], "attention_probs", axis=-1)
        context = self._node("MatMul", [probs, value], "context")
        context = self._node("Transpose", [context], "context_t", perm=[0, 2, 1, 3])
        context = self._node("Reshape", [context, merge_heads], "context_merged")
        attended = self._linear(context, [f"{prefix}.attention.output.dense"], size, size)
        attended = self._node("Add", [attended, x], "attention_residual")
        attended = self._layer_norm(attended, f"{prefix}.attention.output.LayerNorm")

        inner = self._linear(attended, [f"{prefix}.intermediate.dense"], size, config.intermediate)
        inner = self._gelu(inner)
        out = self._linear(inner, [f"{prefix}.output.dense"], config.intermediate, size)
        out = self._node("Add", [out, attended], "output_residual")
        return self._layer_norm(out, f"{prefix}.output.LayerNorm")

    def _gelu(self, x: str) -> str:
        """BERT's exact GELU, ``0.5 * x * (1 + erf(x / sqrt(2)))``."""
        scaled = self._node(
            "Div", [x, self._constant("sqrt2", np.array(math.sqrt(2), np.float32))], "gelu_div"
        )
        erf = self._node("Erf", [scaled], "gelu_erf")
        one = self._constant("gelu_one", np.array(1.0, np.float32))
        half = self._constant("gelu_half", np.array(0.5, np.float32))
        shifted = self._node("Add", [erf, one], "gelu_add")
        product = self._node("Mul", [x, shifted], "gelu_mul")
        return self._node("Mul", [product, half], "gelu")

    def _pool(self, hidden: str, mask: str) -> None:
        """Mean over the unmasked tokens, then divide by the L2 norm (floored like torch)."""
        mask = self._node(
            "Unsqueeze",
            [mask, self._constant("axis_2", np.array([2], dtype=np.int64))],
            "mask_3d",
        )
        axis_1 = self._constant("axis_1", np.array([1], dtype=np.int64))
        weighted = self._node("Mul", [hidden, mask], "masked_hidden")
        summed = self._node("ReduceSum", [weighted, axis_1], "summed", keepdims=0)
        counts = self._node("ReduceSum", [mask, axis_1], "counts", keepdims=0)
        counts = self._node(
            "Max", [counts, self._constant("count_floor", np.array(1e-9, np.float32))], "counts"
        )
        mean = self._node("Div", [summed, counts], "mean")
        norm = self._node("ReduceL2", [mean], "norm", axes=[-1], keepdims=1)  # axes: attr in 17
        norm = self._node(
            "Max", [norm, self._constant("norm_floor", np.array(1e-12, np.float32))], "norm"
        )
        self._nodes.append(helper.make_node("Div", [mean, norm], [OUTPUT_NAME], "normalize"))
