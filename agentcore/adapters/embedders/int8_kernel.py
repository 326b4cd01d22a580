"""Which int8 kernel computes exact products on this CPU (``choose_kernel``).

onnxruntime picks its integer matrix kernels by the CPU's instruction sets. Where the u8×s8
kernel multiplies into int32 directly (AVX-512 VNNI, AVX-VNNI, ARM's dot products) it is exact
and the fastest; on AVX2 without VNNI it adds pairs of u8×s8 products in a saturating int16,
and a pair of 255 × 127 overflows. Rather than read CPU flags (which onnxruntime may interpret
differently, and which say nothing on other platforms), the probe runs the worst case through
onnxruntime itself: every activation 255, every weight 127. An exact answer means u8s8 is
safe; otherwise the u8×u8 kernel (exact everywhere, slower) gives the same integers.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from onnx import TensorProto, helper

from agentcore.adapters.embedders import onnx_graph
from agentcore.adapters.embedders.onnx_graph import GraphWriter
from agentcore.adapters.embedders.quantized_layers import Int8Kernel

_ROWS, _DEPTH, _COLUMNS = 8, 384, 64  # a batch of tokens through one of MiniLM's layers


@cache
def choose_kernel() -> Int8Kernel:
    """``u8s8`` when onnxruntime's u8×s8 product of the worst case is exact here, else ``u8u8``.
    Run once per process (a few milliseconds)."""
    return "u8s8" if _signed_product_is_exact() else "u8u8"


def _signed_product_is_exact() -> bool:
    graph = GraphWriter(inline=True)
    weights = graph.constant("probe_weights", np.full((_DEPTH, _COLUMNS), 127, np.int8))
    graph.nodes.append(
        helper.make_node("MatMulInteger", ["activations", weights], ["product"], "probe")
    )
    model = graph.model(
        "int8-kernel-probe",
        inputs=[helper.make_tensor_value_info("activations", TensorProto.UINT8, [None, _DEPTH])],
        outputs=[helper.make_tensor_value_info("product", TensorProto.INT32, [None, _COLUMNS])],
    )
    session = onnx_graph.open_session(graph, model, threads=1)
    activations = np.full((_ROWS, _DEPTH), 255, np.uint8)
    result = session.run(["product"], {"activations": activations})[0]
    return bool(np.all(result == 255 * 127 * _DEPTH))
