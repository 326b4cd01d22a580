"""Writing an ONNX graph node by node, with its weights inline or handed over at load time.

``GraphWriter`` names every node output uniquely, adds small constants once, and keeps large
weights out of the serialized graph when ``inline`` is false: each becomes a placeholder whose
array ``open_session`` gives onnxruntime as an external initializer. Serializing ~100 MB of
weights into protobuf instead made start about 3x slower and doubled peak memory, and
onnxruntime's Python wrapper keeps a session's model bytes for the session's lifetime.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization needs 17; onnxruntime supports it everywhere we run
CONTRIB = "com.microsoft"  # onnxruntime's own operators (MatMulNBits, GatherBlockQuantized)


class GraphWriter:
    def __init__(self, *, inline: bool) -> None:
        self.inline = inline
        # Tensors left out of the graph when not ``inline``, by initializer name.
        self.external: dict[str, npt.NDArray[np.generic]] = {}
        self.nodes: list[onnx.NodeProto] = []
        self._initializers: list[TensorProto] = []
        self._count = 0
        self._names: set[str] = set()

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op: str, inputs: list[str], hint: str, **attributes: Any) -> str:
        """One node with one output, whose name is returned."""
        output = self.name(hint)
        self.nodes.append(helper.make_node(op, inputs, [output], self.name(op), **attributes))
        return output

    def contrib(self, op: str, inputs: list[str], hint: str, **attributes: Any) -> str:
        """A node of onnxruntime's own operator set."""
        output = self.name(hint)
        self.nodes.append(
            helper.make_node(op, inputs, [output], self.name(op), domain=CONTRIB, **attributes)
        )
        return output

    def constant(self, name: str, value: npt.NDArray[np.generic]) -> str:
        """An initializer; small constants shared by the layers are added once."""
        if name not in self._names:
            self._names.add(name)
            self._initializers.append(numpy_helper.from_array(value, name))
        return name

    def parameter(self, name: str, value: npt.NDArray[np.generic]) -> str:
        """A weight tensor: inline, or a placeholder for an external initializer."""
        if self.inline:
            return self.constant(name, value)
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

    def model(
        self,
        name: str,
        inputs: list[onnx.ValueInfoProto],
        outputs: list[onnx.ValueInfoProto],
    ) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name, inputs=inputs, outputs=outputs, initializer=self._initializers
        )
        opsets = [helper.make_opsetid("", OPSET)]
        if any(node.domain == CONTRIB for node in self.nodes):
            opsets.append(helper.make_opsetid(CONTRIB, 1))
        model = helper.make_model(
            graph, opset_imports=opsets, producer_name="agentcore.adapters.embedders"
        )
        model.ir_version = 8  # what opset 17 came with; any onnxruntime >= 1.13 reads it
        return model


def open_session(writer: GraphWriter, model: onnx.ModelProto, *, threads: int) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``model`` on the CPU, the writer's external
    weights supplied at load (onnxruntime copies them while loading, its documented behaviour
    since 1.12, so neither they nor the file buffer they may view are needed afterwards).
    ``threads`` sets both intra- and inter-op threads; runs are sequential."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = threads
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Helper threads spin while a run goes on (waking them took longer than the work), and stop
    # when it ends instead of burning a core through the write that follows.
    options.add_session_config_entry("session.force_spinning_stop", "1")
    if writer.external:
        options.add_external_initializers(
            list(writer.external),
            [ort.OrtValue.ortvalue_from_numpy(array) for array in writer.external.values()],
        )
    return ort.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )
