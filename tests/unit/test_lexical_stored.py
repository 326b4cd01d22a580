"""The stored lexical index of a large scope (``lexical/postings.py``, ``lexical/stored.py``): its
MaxScore search gives the exhaustive BM25 of the in-memory index on real conversations, sees
writes and deletions made after its build at once, and answers the same once reopened."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from agentcore.adapters.db.lexical.coverage import FtsStems
from agentcore.adapters.db.lexical.postings import Document, Postings
from agentcore.adapters.db.lexical.scope import (
    LAYERS,
    LexicalScope,
    Query,
    ScopeDocuments,
    document_stems,
)
from agentcore.adapters.db.lexical.stored import StoredIndexes, StoredScope
from agentcore.adapters.db.lexical.writer import query_terms, scope_token

LOCOMO = Path("/work/shared/data/locomo/locomo10.json")
STEMS = FtsStems()


def _conversations() -> tuple[list[str], list[str]]:
    if not LOCOMO.is_file():
        pytest.skip("LoCoMo is not on this machine")
    data = json.loads(LOCOMO.read_text())
    turns = [
        f"{turn['speaker']}: {turn['text']}"
        for conv in data[:3]
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    questions = [qa["question"] for conv in data[:3] for qa in conv["qa"]]
    return turns, questions


def _documents(turns: list[str]) -> list[Document]:
    """Each turn with its neighbours as context, as the lexical writer makes them."""
    documents = []
    for i, turn in enumerate(turns):
        before = turns[i - 1] if i else ""
        after = turns[i + 1] if i + 1 < len(turns) else ""
        stems, length = document_stems(STEMS, [turn, before, after, f"t{i % 10}"])
        layer = LAYERS["semantic" if i % 7 == 0 else "episodic"]
        expires = 100.0 if i % 11 == 0 else math.inf
        documents.append((f"m{i:05d}", layer, expires, stems, length))
    return documents


def _in_memory(documents: list[Document]) -> ScopeDocuments:
    scope = ScopeDocuments()
    codes = {code: name for name, code in LAYERS.items()}
    for memory_id, layer, expires, stems, length in documents:
        scope.put(memory_id, codes[layer], expires, stems, length)
    return scope


def _best(scope: LexicalScope, question: str, **filters: object) -> list[tuple[float, str]]:
    query = Query.over([scope], STEMS(query_terms(question)))
    hits = scope.best(
        query,
        10,
        filters.get("layers"),  # type: ignore[arg-type]
        filters.get("alive_at"),  # type: ignore[arg-type]
        filters.get("ids"),  # type: ignore[arg-type]
    )
    return sorted(hits, key=lambda hit: (-hit[0], hit[1]))


def _same_ranking(got: list[tuple[float, str]], exact: list[tuple[float, str]]) -> None:
    """The same scores; the same ids wherever a score is not tied at the list's end."""
    assert [s for s, _ in got] == pytest.approx([s for s, _ in exact], rel=1e-5)
    if exact:
        last = exact[-1][0]
        assert {i for s, i in got if s > last * (1 + 1e-5)} == {
            i for s, i in exact if s > last * (1 + 1e-5)
        }


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Document], list[str]]:
    turns, questions = _conversations()
    return _documents(turns), random.Random(3).sample(questions, 150)


def _stored(documents: list[Document], tmp_path: Path) -> StoredScope:
    directory = tmp_path / "k1-7"
    Postings.build("user:alice", 7, documents).write(directory)
    return StoredScope(Postings.open(directory))


def test_maxscore_gives_the_exhaustive_bm25_on_real_conversations(
    corpus: tuple[list[Document], list[str]], tmp_path: Path
) -> None:
    documents, questions = corpus
    memory, stored = _in_memory(documents), _stored(documents, tmp_path)
    assert (len(stored), stored.total_length) == (len(memory), memory.total_length)
    for question in questions:
        _same_ranking(_best(stored, question), _best(memory, question))
    some = [f"m{i:05d}" for i in range(0, len(documents), 5)]
    for question in questions[:30]:
        for filters in ({"layers": ["semantic"]}, {"alive_at": 1000.0}, {"ids": some}):
            _same_ranking(_best(stored, question, **filters), _best(memory, question, **filters))


def test_writes_and_deletions_after_the_build_are_seen_at_once(
    corpus: tuple[list[Document], list[str]], tmp_path: Path
) -> None:
    documents, questions = corpus
    stored = _stored(documents, tmp_path)
    memory = _in_memory(documents)
    rng = random.Random(5)
    for memory_id, *_ in rng.sample(documents, 200):
        stored.drop(memory_id)
        memory.drop(memory_id)
    rewritten = rng.sample(documents, 200)
    new = [(f"n{i}", *document[1:]) for i, document in enumerate(rng.sample(documents, 100))]
    for memory_id, _layer, expires, stems, length in rewritten + new:
        changed = {stem: tf * 2 for stem, tf in stems.items()} | {"zebra": 1.0}
        for scope in (stored, memory):
            scope.put(memory_id, "episodic", expires, changed, length + 1)
    assert (len(stored), stored.total_length) == (len(memory), memory.total_length)
    assert (
        stored.holding("zebra") == memory.holding("zebra") == len({d[0] for d in rewritten}) + 100
    )
    for question in [*questions[:60], "zebra"]:
        _same_ranking(_best(stored, question), _best(memory, question))
        query = Query.over([memory], STEMS(query_terms(question)))
        for memory_id, *_ in documents[:300]:
            assert stored.score(memory_id, query) == (
                None
                if memory.score(memory_id, query) is None
                else pytest.approx(memory.score(memory_id, query))
            )


def test_the_newest_build_of_a_scope_is_reopened(
    corpus: tuple[list[Document], list[str]], tmp_path: Path
) -> None:
    documents, questions = corpus
    indexes = StoredIndexes(tmp_path, tmp_path / "agentcore.db")
    assert indexes.latest("user:alice") is None
    prefix = scope_token("user:alice")
    Postings.build("user:alice", 3, documents[:100]).write(tmp_path / f"{prefix}-3")
    Postings.build("user:alice", 9, documents).write(tmp_path / f"{prefix}-9")
    (tmp_path / f"{prefix}-12").mkdir()  # a build under way: no meta.json yet
    latest = indexes.latest("user:alice")
    assert latest is not None
    assert (latest.seq, latest.documents) == (9, len(documents))
    memory = _in_memory(documents)
    for question in questions[:30]:
        _same_ranking(_best(StoredScope(latest), question), _best(memory, question))
    indexes.forget_older(latest)
    assert not (tmp_path / f"{prefix}-3").exists()
    assert latest.slot("m00042") == 42
    assert latest.memory_id(42) == "m00042"
    assert latest.slot("nobody") == -1
