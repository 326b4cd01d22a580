"""The local MiniLM embedder against sentence-transformers' own vectors, and against the int8
export its weights come from.

The reference, tests/fixtures/minilm_reference.json, is written by
scripts/make_embedding_reference.py.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
from tokenizers import Tokenizer

from agentcore.adapters.embedders import LocalMiniLMEmbedder
from agentcore.adapters.embedders.bert_graph import (
    INPUT_NAMES,
    OPSET,
    OUTPUT_NAME,
    WeightsError,
    build_model,
)
from agentcore.adapters.embedders.int8_kernel import choose_kernel
from agentcore.adapters.embedders.local_minilm import packaged_files
from agentcore.adapters.embedders.minilm_export import read_int8_export
from agentcore.adapters.embedders.quantized_layers import Int8Kernel
from agentcore.adapters.embedders.safetensors import read_safetensors
from agentcore.domain.errors import ConfigurationError
from agentcore.services.ports import Embedder
from tests.embedding_texts import row_cosines

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "minilm_reference.json").read_text("utf-8")
)
SENTENCES: list[str] = REFERENCE["sentences"]
# Every sentence, "ok" ([CLS] ok [SEP]) included. The weights are the int8 export's, made float
# again: against sentence-transformers' fp32 vectors the fp32 graph's cosine was 0.9993 on
# average, 0.9964 at worst (on the original weights it matched to about 1e-7); the int8 graph's
# 0.9983 on average, 0.9920 at worst ("ok").
MIN_COSINE = {False: 0.995, True: 0.99}
MIN_MEAN_COSINE = {False: 0.999, True: 0.998}
WEIGHTS_FILE, TOKENIZER_FILE = packaged_files()


@functools.cache
def _tokenizer() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _token_count(text: str) -> int:
    """Tokens the model sees, counting [CLS] and [SEP], before truncation."""
    return len(_tokenizer().encode(text).ids)


@pytest.fixture
async def embedder() -> AsyncIterator[LocalMiniLMEmbedder]:
    loaded = LocalMiniLMEmbedder()
    yield loaded
    await loaded.close()


@pytest.mark.parametrize("int8", [True, False])
async def test_vectors_match_sentence_transformers(int8: bool) -> None:
    embedder = LocalMiniLMEmbedder(int8=int8)
    try:
        assert REFERENCE["model"] == embedder.model_name == "all-MiniLM-L6-v2"
        vectors = await embedder.embed(SENTENCES)
    finally:
        await embedder.close()
    cosines = row_cosines(vectors, np.asarray(REFERENCE["vectors"], dtype=np.float32))
    for sentence, cosine in zip(SENTENCES, cosines, strict=True):
        tokens = _token_count(sentence)
        message = f"{sentence[:40]!r} ({tokens} tokens): cosine {cosine:.6f}"
        assert cosine >= MIN_COSINE[int8], message
    assert cosines.mean() >= MIN_MEAN_COSINE[int8]


@pytest.mark.parametrize("int8", ["u8s8", "u8u8", None])
def test_the_built_graph_passes_the_onnx_checker(int8: Int8Kernel | None) -> None:
    model = build_model(read_int8_export(WEIGHTS_FILE.read_bytes()), int8=int8)
    onnx.checker.check_model(model, full_check=True)  # full_check adds strict shape inference
    opsets = {(opset.domain, opset.version) for opset in model.opset_import}
    # The int8 product is onnxruntime's MatMulIntegerToFloat.
    assert opsets == ({("", OPSET)} if int8 is None else {("", OPSET), ("com.microsoft", 1)})
    assert [value.name for value in model.graph.input] == list(INPUT_NAMES)
    assert [value.name for value in model.graph.output] == [OUTPUT_NAME]


def test_both_int8_kernels_compute_the_same_vectors() -> None:
    # u8u8 (exact on every CPU) and u8s8 (exact where the probe finds it so) multiply the same
    # integers: the graphs differ in the weights' encoding only.
    weights = read_int8_export(WEIGHTS_FILE.read_bytes())
    texts = SENTENCES[:-1]  # the last is past 512 tokens, the positions' end
    feed, _ = _feed(texts)
    vectors = [
        ort.InferenceSession(
            build_model(weights, int8=kernel).SerializeToString(),
            providers=["CPUExecutionProvider"],
        ).run([OUTPUT_NAME], feed)[0]
        for kernel in ("u8s8", "u8u8")
    ]
    if choose_kernel() == "u8s8":  # this CPU multiplies u8×s8 exactly (VNNI)
        np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-5)
    else:  # AVX2 without VNNI: u8s8 saturates, and the embedder runs u8u8
        expected = np.asarray(REFERENCE["vectors"][: len(texts)], dtype=np.float32)
        assert row_cosines(vectors[1], expected).min() >= MIN_COSINE[True]


async def test_the_checked_graph_is_the_one_the_embedder_runs(
    embedder: LocalMiniLMEmbedder,
) -> None:
    # The embedder hands the weights to onnxruntime separately from the nodes; the
    # self-contained model checked above must compute the same vectors.
    model = build_model(read_int8_export(WEIGHTS_FILE.read_bytes()), int8=choose_kernel())
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    texts = SENTENCES[:4]
    feed, _ = _feed(texts)
    expected = session.run([OUTPUT_NAME], feed)[0]
    np.testing.assert_allclose(await embedder.embed(texts), expected, atol=1e-6)


def _feed(texts: list[str]) -> tuple[dict[str, npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
    encodings = [_tokenizer().encode(text) for text in texts]
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(texts), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return dict(zip(INPUT_NAMES, (ids, mask, np.zeros_like(ids)), strict=True)), mask


async def test_vectors_equal_the_int8_export_run_as_published() -> None:
    # The export itself ends at the encoder's last hidden state; pool and normalize it the way
    # sentence-transformers does. Equal vectors mean every weight went to its own place.
    session = ort.InferenceSession(str(WEIGHTS_FILE), providers=["CPUExecutionProvider"])
    texts = SENTENCES[:6]
    feed, mask = _feed(texts)
    hidden = session.run(None, feed)[0]
    pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    expected = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    fp32 = LocalMiniLMEmbedder(int8=False)  # the export's weights, its float activations
    try:
        np.testing.assert_allclose(await fp32.embed(texts), expected, atol=2e-5)
    finally:
        await fp32.close()


@pytest.mark.parametrize("data", [b"", b"not a model"])
def test_bytes_that_are_no_onnx_model_are_refused(data: bytes) -> None:
    with pytest.raises(WeightsError):
        read_int8_export(data)


def test_an_onnx_model_that_is_not_the_export_is_refused(tmp_path: Path) -> None:
    model = build_model(read_int8_export(WEIGHTS_FILE.read_bytes()))  # fp32 weights, no int8
    other = tmp_path / "other.onnx"
    other.write_bytes(model.SerializeToString())
    digest = hashlib.sha256(other.read_bytes()).hexdigest()
    with pytest.raises(ConfigurationError, match="no int8 weights"):
        LocalMiniLMEmbedder(other, sha256=digest)


async def test_vectors_are_unit_float32_of_the_model_dimension(
    embedder: LocalMiniLMEmbedder,
) -> None:
    port: Embedder = embedder  # mypy checks that the adapter fits the port
    vectors = await port.embed(SENTENCES)
    assert port.dimension == 384
    assert vectors.shape == (len(SENTENCES), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_empty_input_gives_no_rows(embedder: LocalMiniLMEmbedder) -> None:
    vectors = await embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


async def test_batch_equals_one_at_a_time(embedder: LocalMiniLMEmbedder) -> None:
    batch = await embedder.embed(SENTENCES)
    singles = np.concatenate([await embedder.embed([sentence]) for sentence in SENTENCES])
    assert row_cosines(batch, singles).min() > 0.9999


async def test_order_is_kept_across_length_sorted_chunks() -> None:
    # Chunks of 3 force the length sort to move texts across chunk boundaries.
    small_chunks = LocalMiniLMEmbedder(batch_size=3)
    try:
        rng = np.random.default_rng(7)
        permutation = rng.permutation(len(SENTENCES))
        texts = [SENTENCES[i] for i in permutation] + ["ok", SENTENCES[-1], "a b c d e f g"]
        vectors = await small_chunks.embed(texts)
        expected = np.concatenate([await small_chunks.embed([text]) for text in texts])
    finally:
        await small_chunks.close()
    assert row_cosines(vectors, expected).min() > 0.9999


async def test_text_past_256_tokens_is_truncated(embedder: LocalMiniLMEmbedder) -> None:
    long_text = SENTENCES[-1]
    assert _token_count(long_text) > 256
    same_prefix = long_text + " And then something entirely different happened at the end."
    vectors = await embedder.embed([long_text, same_prefix])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


async def test_inference_leaves_the_event_loop_free(embedder: LocalMiniLMEmbedder) -> None:
    task = asyncio.create_task(embedder.embed([SENTENCES[-1]] * 8))
    ticks = 0
    while not task.done():
        await asyncio.sleep(0.001)
        ticks += 1
    await task
    assert ticks > 5


async def test_stored_texts_are_embedded_below_the_serving_priority(
    embedder: LocalMiniLMEmbedder,
) -> None:
    await embedder.embed(SENTENCES)
    await embedder.embed_query(SENTENCES[0])
    await embedder.embed_now(SENTENCES[:2])
    process = os.getpriority(os.PRIO_PROCESS, 0)
    priority = {
        thread.name: os.getpriority(os.PRIO_PROCESS, thread.native_id)
        for thread in threading.enumerate()
        if thread.native_id is not None and thread.name.startswith(("embed_", "query_", "now_"))
    }
    assert priority.pop("query_0") == process  # a search's query is served at once,
    assert priority.pop("now_0") == process  # and the owed texts it embeds beside it
    assert priority
    assert set(priority.values()) == {min(process + 10, 19)}


async def test_texts_embedded_now_equal_the_queued_ones(embedder: LocalMiniLMEmbedder) -> None:
    np.testing.assert_array_equal(
        await embedder.embed_now(SENTENCES), await embedder.embed(SENTENCES)
    )


async def test_a_closed_embedder_refuses_work() -> None:
    closing = LocalMiniLMEmbedder()
    pending = asyncio.create_task(closing.embed(SENTENCES))
    await asyncio.sleep(0)
    await closing.close()
    assert (await pending).shape == (len(SENTENCES), 384)  # queued work still finished
    await closing.close()
    with pytest.raises(RuntimeError, match="closed"):
        await closing.embed(["ok"])


async def test_a_single_string_is_rejected(embedder: LocalMiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        await embedder.embed("not a list")


def test_an_altered_model_file_is_refused(tmp_path: Path) -> None:
    altered = tmp_path / "model.safetensors"
    altered.write_bytes(b"not the model")
    with pytest.raises(ConfigurationError, match="sha256"):
        LocalMiniLMEmbedder(altered)


def test_a_missing_model_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not found"):
        LocalMiniLMEmbedder(tmp_path / "absent.safetensors")


def test_a_file_without_the_weights_is_refused(tmp_path: Path) -> None:
    header = json.dumps(
        {"pooler.dense.bias": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    )
    other = tmp_path / "other.safetensors"
    other.write_bytes(
        len(header).to_bytes(8, "little") + header.encode() + np.zeros(2, np.float32).tobytes()
    )
    digest = hashlib.sha256(other.read_bytes()).hexdigest()
    with pytest.raises(ConfigurationError, match="word_embeddings"):
        LocalMiniLMEmbedder(other, sha256=digest)


@pytest.mark.parametrize(
    "data",
    [b"", b"\xff" * 8 + b"{}", (2).to_bytes(8, "little") + b"[]", (2).to_bytes(8, "little") + b"{"],
)
def test_malformed_safetensors_are_refused(data: bytes) -> None:
    with pytest.raises(WeightsError):
        read_safetensors(data)


async def test_int8_vectors_stay_close_to_fp32(embedder: LocalMiniLMEmbedder) -> None:
    fp32_embedder = LocalMiniLMEmbedder(int8=False)
    try:
        fp32 = await fp32_embedder.embed(SENTENCES)
    finally:
        await fp32_embedder.close()
    stored = await embedder.embed(SENTENCES)
    queries = np.stack([await embedder.embed_query(sentence) for sentence in SENTENCES])
    assert queries.shape == fp32.shape
    assert queries.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(queries, stored, atol=1e-6)  # one graph for both
    cosines = row_cosines(stored, fp32)
    assert cosines.min() > 0.995
    assert cosines.mean() > 0.998  # 0.9990 on these sentences, 0.9993 on LoCoMo turns
    assert not np.allclose(stored, fp32, atol=1e-4)  # it is the int8 graph that ran
    # Each sentence is still nearest to its own fp32 vector.
    assert list(np.argmax(queries @ fp32.T, axis=1)) == list(range(len(SENTENCES)))


async def test_a_vector_does_not_depend_on_its_batch_mates(
    embedder: LocalMiniLMEmbedder,
) -> None:
    # Each token is quantized on its own scale: a text embedded beside long, short or loud
    # texts gets the vector it gets alone (a scale per batch moved cosines down to 0.97).
    alone = await embedder.embed([SENTENCES[0]])
    for mates in (SENTENCES[1:], ["ok"], ["!!! " * 60], SENTENCES[::-1]):
        together = await embedder.embed([SENTENCES[0], *mates])
        np.testing.assert_allclose(together[0], alone[0], atol=1e-6)


async def test_concurrent_queries_share_runs_and_get_their_own_vectors(
    embedder: LocalMiniLMEmbedder,
) -> None:
    alone = [await embedder.embed_query(text) for text in SENTENCES]
    runs = 0
    original = embedder._embed_queries

    def counted(texts: list[str]) -> npt.NDArray[np.float32]:
        nonlocal runs
        runs += 1
        return original(texts)

    embedder._queries._embed = counted
    together = await asyncio.gather(*(embedder.embed_query(text) for text in SENTENCES))
    assert runs < len(SENTENCES)  # queries that waited together were embedded together
    for one, shared in zip(alone, together, strict=True):
        np.testing.assert_allclose(shared, one, atol=1e-6)


async def test_fp32_queries_equal_the_stored_vectors() -> None:
    embedder = LocalMiniLMEmbedder(int8=False)
    try:
        query = await embedder.embed_query(SENTENCES[0])
        np.testing.assert_allclose(query, (await embedder.embed(SENTENCES[:1]))[0], atol=1e-6)
    finally:
        await embedder.close()
