"""The encoder's linear layers, fp32 or int8, and a 4-bit embedding table, as graph nodes.

The linear layers take ``x`` as ``[tokens, in]``.

- **fp32**: ``x @ W + b``.
- **int8**: each weight column scaled to [-127, 127] by its own largest magnitude and rounded;
  each row of ``x`` (one token) quantized at run time to uint8 on its own scale and zero point
  (``quantized_rows``), so a text's vector does not depend on the texts run beside it. The
  integer product and the columns' scales run in one ``MatMulIntegerToFloat``; the rows' zero
  points and scales are applied to its output. It has two kernels that compute the same
  integers (``Int8Kernel``): ``u8s8`` takes the weights as int8; ``u8u8`` takes them plus 128
  as uint8 with a zero point of 128. onnxruntime's u8×s8 kernel for AVX2 without VNNI adds
  pairs of products in a saturating int16 (255 × 127 × 2 > 32,767), which moved vectors to a
  cosine of 0.93 from fp32's; its u8×u8 kernel widens to int16 before multiplying and is exact
  everywhere, at about half of u8s8's speed where VNNI makes that one exact too.
  ``int8_kernel.choose_kernel`` picks at start.

A 4-bit matrix (``Q4Matrix``, how e5's weights are published) runs as int8 like any float
weight (dequantized, then quantized per column: a cosine of 0.9994 to the 4-bit engine's
vectors). onnxruntime's own 4-bit kernel (``MatMulNBits``, int8 activations per block) was
measured at about half the speed of the int8 product on this machine's VNNI cores. Only the
embedding table stays 4-bit in memory (``gather_q4``): 60 MB instead of 96 MB as int8 or 384 MB
as floats, and a lookup reads one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from onnx import TensorProto

from agentcore.adapters.embedders.onnx_graph import GraphWriter

Int8Kernel = Literal["u8s8", "u8u8"]
Q4_BLOCK = 32


@dataclass(frozen=True)
class Q4Matrix:
    """A ``[rows, columns]`` matrix in 4-bit blocks of 32 along each row.

    ``blocks`` is uint8 ``[rows, columns / 32, 16]``: element ``2i`` of a block in the low
    nibble of byte ``i``, element ``2i + 1`` in the high one (onnxruntime's packing); an
    element is ``(nibble - 8) * scale`` with ``scales`` float32 ``[rows, columns / 32]``.
    """

    blocks: npt.NDArray[np.uint8]
    scales: npt.NDArray[np.float32]

    @property
    def shape(self) -> tuple[int, int]:
        rows, count, _ = self.blocks.shape
        return rows, count * Q4_BLOCK

    def dequantized(self) -> npt.NDArray[np.float32]:
        nibbles = np.stack([self.blocks & 0x0F, self.blocks >> 4], axis=-1)
        values = nibbles.reshape(*self.blocks.shape[:2], Q4_BLOCK).astype(np.float32) - 8
        return (values * self.scales[..., None]).reshape(self.shape)


def linear_fp32(
    graph: GraphWriter,
    x: str,
    name: str,
    weight: npt.NDArray[np.float32],
    bias: npt.NDArray[np.float32],
) -> str:
    """``x @ weight + bias``; ``weight`` is ``[in, out]``."""
    product = graph.node("MatMul", [x, graph.parameter(f"{name}.weight", weight)], "matmul")
    return graph.node("Add", [product, graph.parameter(f"{name}.bias", bias)], "linear")


def linear_int8(
    graph: GraphWriter,
    x: str,
    name: str,
    weight: npt.NDArray[np.float32],
    bias: npt.NDArray[np.float32],
    kernel: Int8Kernel,
) -> str:
    """``x @ weight + bias`` for ``x`` of ``[tokens, in]``, on int8 weights (``[in, out]``)
    and uint8 activations, each token on its own scale and zero point."""
    scale = np.abs(weight).max(axis=0) / 127
    scale[scale == 0] = 1.0
    quantized = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
    # (q - zero) @ Wq = q @ Wq - zero * (the column sums of Wq): the zero points of the rows
    # are applied to the product, so the integer kernel runs without activation zero points.
    column_sums = quantized.astype(np.int64).sum(axis=0) * scale
    codes, row_scale, below_zero = quantized_rows(graph, x)
    if kernel == "u8s8":
        integer = [codes, graph.parameter(f"{name}.weight_int8", quantized)]
        zero_points = []
    else:
        unsigned = (quantized.astype(np.int16) + 128).astype(np.uint8)
        integer = [codes, graph.parameter(f"{name}.weight_uint8", unsigned)]
        zero_points = ["", graph.constant("uint8_128", np.array(128, np.uint8))]
    one = graph.constant("one_float", np.array(1.0, np.float32))
    weight_scale = graph.parameter(f"{name}.weight_scale", scale.astype(np.float32))
    # (codes @ Wq) * scale: the integer product and the columns' scales in one kernel.
    product = graph.contrib(
        "MatMulIntegerToFloat", [*integer, one, weight_scale, *zero_points], "qmm"
    )
    sums = graph.parameter(f"{name}.column_sums", column_sums.astype(np.float32))
    shift = graph.node("Mul", [below_zero, sums], "qmm_shift")  # -zero * sums
    product = graph.node("Add", [product, shift], "qmm_centred")
    product = graph.node("Mul", [product, row_scale], "qmm_row_scaled")
    return graph.node("Add", [product, graph.parameter(f"{name}.bias", bias)], "linear")


def quantized_rows(graph: GraphWriter, x: str) -> tuple[str, str, str]:
    """``x`` (``[tokens, size]``) as uint8, each row (one token's activations) on its own
    scale and zero point (their range, widened to hold 0, over 255 steps), those scales and
    the zero points negated (float, ``[tokens, 1]``). A row's codes depend on that row alone, so a
    text's vector does not depend on the texts run beside it; a scale per tensor
    (onnxruntime's ``DynamicQuantizeMatMul``) made it (cosine down to 0.97 between two
    batches)."""
    zero = graph.constant("zero_float", np.array(0.0, np.float32))
    highest = graph.node("Max", [graph.node("ReduceMax", [x], "row_max", axes=[1]), zero], "hi")
    lowest = graph.node("Min", [graph.node("ReduceMin", [x], "row_min", axes=[1]), zero], "lo")
    spread = graph.node("Sub", [highest, lowest], "row_range")
    floor = graph.constant("range_floor", np.array(1e-8 * 255, np.float32))
    steps = graph.constant("uint8_steps", np.array(255.0, np.float32))
    scale = graph.node("Div", [graph.node("Max", [spread, floor], "row_range"), steps], "scale")
    # The zero point negated (lowest / scale, rounded: at most 0), as the product wants it.
    below_zero = graph.node("Round", [graph.node("Div", [lowest, scale], "low")], "below_zero")
    zero_point = graph.node("Neg", [graph.node("Squeeze", [below_zero], "zp_1d")], "zp")
    zero_point = graph.node("Cast", [zero_point], "zp_uint8", to=TensorProto.UINT8)
    scale_1d = graph.node("Squeeze", [scale], "scale_1d")
    codes = graph.node("QuantizeLinear", [x, scale_1d, zero_point], "codes", axis=0)
    return codes, scale, below_zero


def gather_q4(graph: GraphWriter, name: str, table: Q4Matrix, ids: str) -> str:
    """The rows ``ids`` of a 4-bit table, as float32 ``[..., columns]``."""
    rows, columns = table.shape
    return graph.contrib(
        "GatherBlockQuantized",
        [
            graph.parameter(f"{name}_q4", table.blocks.reshape(rows, columns // 2)),
            ids,
            graph.parameter(f"{name}_q4_scales", table.scales),
        ],
        "gather_q4",
        gather_axis=0,
        quantize_axis=1,
        block_size=Q4_BLOCK,
        bits=4,
    )
