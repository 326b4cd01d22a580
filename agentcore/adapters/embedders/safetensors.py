"""A safetensors file read with numpy: the original (float) weights of a Hugging Face model."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import numpy.typing as npt

from agentcore.adapters.embedders.bert_graph import WeightsError

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
