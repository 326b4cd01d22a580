"""The vectors of recent queries (``agentcore.services.query_vectors``): a question asked again
is not embedded again, within a bound, and never across models."""

from __future__ import annotations

import numpy as np
import pytest

from agentcore.services.query_vectors import QueryVectors
from tests.fakes import FakeEmbedder


async def test_a_question_asked_again_is_embedded_once() -> None:
    embedder = FakeEmbedder()
    queries = QueryVectors(embedder)
    first = await queries.of("What is Alice allergic to?")
    calls = embedder.calls
    again = await queries.of("What is Alice allergic to?")
    assert embedder.calls == calls
    assert again is first
    assert (queries.hits, queries.misses) == (1, 1)
    np.testing.assert_array_equal(first, await embedder.embed_query("What is Alice allergic to?"))
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 1.0  # shared by every search that asks it: nobody may change it


async def test_least_recently_asked_go_first_past_the_bound() -> None:
    queries = QueryVectors(FakeEmbedder(), size=2)
    for text in ("one", "two", "one", "three"):  # "two" is the least recently asked
        await queries.of(text)
    misses = queries.misses
    await queries.of("one")
    await queries.of("three")
    assert queries.misses == misses
    await queries.of("two")
    assert queries.misses == misses + 1


async def test_another_model_never_meets_the_old_vectors() -> None:
    embedder = FakeEmbedder(model_name="model-a")
    queries = QueryVectors(embedder)
    await queries.of("Where does Bob live?")
    embedder._model_name = "model-b"  # the store moved to another embedder
    await queries.of("Where does Bob live?")
    assert queries.misses == 2
