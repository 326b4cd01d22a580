"""A scope over ``LEXICAL_STORED_DOCUMENTS`` (lowered here) on the service's SQLite + FTS5: it
is searched from its stored index once built, with the top results FTS5 gives, sees every
write at once, and is searched the same after a restart without a build; start-up is ready
once it is served."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.bootstrap import build_container
from agentcore.config import Settings
from agentcore.domain.filter_grammar import parse_filter
from agentcore.domain.filters import Filter
from agentcore.domain.models import Memory, ScopeIds
from agentcore.services.ports import VectorFilter
from agentcore.services.retrieval import SearchQuery
from tests.conftest import migrate
from tests.fakes import FakeEmbedder, FakeVectorStore
from tests.integration.test_lexical_index import NOW, add_all, turns

LOCOMO = Path("/work/shared/data/locomo/locomo10.json")
LOWERED = 200  # the stored threshold here: the conversation below is ~600 memories
ALICE = "user:alice"


def _conversation() -> tuple[list[list[str]], list[str]]:
    if not LOCOMO.is_file():
        pytest.skip("LoCoMo is not on this machine")
    conversation = json.loads(LOCOMO.read_text())[0]
    sessions = [
        [f"{turn['speaker']}: {turn['text']}" for turn in session]
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
    ]
    return sessions, [qa["question"] for qa in conversation["qa"]]


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agentcore.db'}"
    migrate(url)
    engine = create_engine(url)
    yield engine
    await engine.dispose()


async def _load(engine: AsyncEngine, user: str = "alice") -> list[str]:
    sessions, questions = _conversation()
    memories: list[Memory] = []
    for number, session in enumerate(sessions):
        scope = ScopeIds(user_id=user, session_id=f"s{number}")
        memories += turns(*session, scope=scope, start=len(memories))
    # Ten tags, and a rare one: a search filtered on it finds too few in the prefetch.
    memories = [
        replace(m, tags=[f"t{i % 10}", *(["rare"] if i % 97 == 0 else [])])
        for i, m in enumerate(memories)
    ]
    await add_all(SqlUnitOfWorkFactory(engine), memories)
    return questions


async def _warm(index: SqlLexicalIndex) -> None:
    for _ in range(600):
        if not index.warming():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"still warming: {index.warming()}")


async def _top(index: SqlLexicalIndex, question: str, where: Filter | None = None) -> list[str]:
    hits = await index.search(question, VectorFilter([ALICE], alive_at=NOW, where=where), 10)
    return [hit.id for hit in hits]


async def test_a_large_scope_is_searched_from_its_stored_index_as_fts5_ranks_it(
    engine: AsyncEngine,
) -> None:
    questions = await _load(engine)
    fts5 = SqlLexicalIndex(engine, max_documents=0, stored_documents=0)
    stored = SqlLexicalIndex(engine, stored_documents=LOWERED)
    try:
        (warming,) = stored.warming()  # started by the first call
        assert warming.startswith("the lexical index of user:alice (")
        assert warming.endswith(" documents) is being built")
        await _warm(stored)
        lexicon = stored._lexicon
        assert lexicon is not None
        assert lexicon.stored(ALICE)
        for where in (None, parse_filter({"tags": "t3"}), parse_filter({"tags": "rare"})):
            recalls, firsts = [], []
            for question in questions:
                exact = await _top(fts5, question, where)
                got = await _top(stored, question, where)
                if exact:
                    recalls.append(len(set(got) & set(exact)) / len(exact))
                    firsts.append(got[0] == exact[0])
            assert sum(recalls) / len(recalls) >= 0.95
            assert sum(firsts) / len(firsts) >= 0.95
    finally:
        await fts5.close()
        await stored.close()


async def test_a_rare_filter_is_answered_from_the_index_in_wider_rounds_not_by_fts5(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter one memory in 97 passes: the first prefetch (16 × the limit) holds too few,
    so wider rounds check more of the index's exact ranking; FTS5 (slow at a million) is not
    asked, and the answer is still the filtered top by BM25."""
    questions = await _load(engine)
    fts5 = SqlLexicalIndex(engine, max_documents=0, stored_documents=0)
    stored = SqlLexicalIndex(engine, stored_documents=LOWERED)
    rare = parse_filter({"tags": "rare"})
    try:
        stored.warming()
        await _warm(stored)
        exact = {question: await _top(fts5, question, rare) for question in questions}

        def no_fts5(*_: object) -> None:
            raise AssertionError("a filtered search went to FTS5")

        monkeypatch.setattr(stored._frequencies, "counts", no_fts5)
        recalls = []
        for question, wanted in exact.items():
            got = await _top(stored, question, rare)
            if wanted:
                recalls.append(len(set(got) & set(wanted)) / len(wanted))
        assert len(recalls) > 50
        assert sum(recalls) / len(recalls) >= 0.95
    finally:
        await fts5.close()
        await stored.close()


async def test_writes_are_seen_at_once_and_a_restart_opens_the_index_without_a_build(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    await _load(engine)
    index = SqlLexicalIndex(engine, stored_documents=LOWERED)
    await _warm(index)
    new_session = ScopeIds(user_id="alice", session_id="new")
    (added,) = turns("The zeppelin lands at dawn.", scope=new_session, start=10_000)
    await add_all(SqlUnitOfWorkFactory(engine), [added])
    assert await _top(index, "zeppelin") == [added.id]
    before = await _top(index, "What did Caroline research?")
    await index.close()

    builds = sorted(p.name for p in (tmp_path / "agentcore.db.lexical").iterdir())
    restarted = SqlLexicalIndex(engine, stored_documents=LOWERED)
    try:
        await _warm(restarted)
        assert sorted(p.name for p in (tmp_path / "agentcore.db.lexical").iterdir()) == builds
        assert await _top(restarted, "zeppelin") == [added.id]  # a change since the build
        assert await _top(restarted, "What did Caroline research?") == before
        async with SqlUnitOfWorkFactory(engine)() as uow:
            await uow.memories.delete([added.id])
            await uow.commit()
        assert await _top(restarted, "zeppelin") == []
    finally:
        await restarted.close()


async def test_start_up_is_ready_once_the_large_scopes_lexical_index_is_served(
    tmp_path: Path,
) -> None:
    """The first start after the scope grew waits for its build, named; a restart does not."""
    config = Settings(agentcore_data_dir=tmp_path, lexical_stored_documents=LOWERED)
    migrate(config.sqlalchemy_url)
    engine = create_engine(config.sqlalchemy_url)
    await _load(engine)
    await engine.dispose()

    for restart in (False, True):
        container = await build_container(
            config, embedder=FakeEmbedder(), vectors=FakeVectorStore()
        )
        try:
            if restart:
                assert container.startup.done  # opened from disk within the first try
            else:
                assert container.startup.waiting_for == ["the lexical index"]
                for _ in range(600):
                    if await container.startup.run():
                        break
                    await asyncio.sleep(0.1)
            assert container.startup.done
            assert container.health.lexical_documents_in_memory > LOWERED
            query = SearchQuery("What did Caroline research?", ScopeIds(user_id="alice"))
            assert (await container.memory.search(query)).results
        finally:
            await container.aclose()


async def test_large_scopes_are_built_one_at_a_time(engine: AsyncEngine) -> None:
    await _load(engine)
    await _load(engine, "bob")
    index = SqlLexicalIndex(engine, stored_documents=LOWERED)
    try:
        waiting = index.warming()
        assert [line.split(" (")[0] for line in waiting] == [
            "the lexical index of user:alice",
            "the lexical index of user:bob",
        ]
        lexicon = index._lexicon
        assert lexicon is not None
        stored = lexicon._stored
        assert stored is not None
        running = []
        for _ in range(600):
            running.append(len(stored._builds))
            if not index.warming():
                break
            await asyncio.sleep(0.05)
        assert max(running) == 1
        assert lexicon.stored("user:alice")
        assert lexicon.stored("user:bob")
    finally:
        await index.close()
