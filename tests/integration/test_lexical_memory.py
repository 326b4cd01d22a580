"""The in-memory lexical index (``lexical/in_memory.py``) behind ``SqlLexicalIndex`` on SQLite:
kept in step with every committed write through the change log, whichever engine wrote it."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical import in_memory
from agentcore.adapters.db.lexical import writer as lexical_writer
from agentcore.adapters.db.lexical.scope import ScopeDocuments
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.lexical.writer import CHANGES
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.domain.models import ScopeIds
from agentcore.services.ports import VectorFilter
from tests.conftest import migrate
from tests.integration.test_lexical_index import NOW, add_all, found, turns


@pytest.fixture
async def engines(tmp_path: Path) -> AsyncIterator[tuple[AsyncEngine, AsyncEngine]]:
    """Two engines on one SQLite file: the service's, and another writer's (a worker)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'agentcore.db'}"
    migrate(url)
    ours, theirs = create_engine(url), create_engine(url)
    yield ours, theirs
    await ours.dispose()
    await theirs.dispose()


@dataclass
class Service:
    index: SqlLexicalIndex  # on the service's engine
    writer: SqlUnitOfWorkFactory  # on the other engine
    writer_engine: AsyncEngine


@pytest.fixture
async def service(engines: tuple[AsyncEngine, AsyncEngine]) -> AsyncIterator[Service]:
    ours, theirs = engines
    index = SqlLexicalIndex(ours)
    yield Service(index, SqlUnitOfWorkFactory(theirs), theirs)
    await index.close()


async def test_writes_of_another_engine_are_seen_by_the_next_search(
    service: Service,
) -> None:
    index, writer = service.index, service.writer
    first, middle = turns("We hiked to the glacier.", "It was freezing.")
    await add_all(writer, [first, middle])
    assert set(await found(index, "glacier")) == {first.id, middle.id}  # loaded

    (last,) = turns("Then soup by the glacier lake.", start=2)
    await add_all(writer, [last])
    async with writer() as uow:
        await uow.memories.update(replace(middle, content="It was windy on the moraine."))
        await uow.commit()
    assert await found(index, "freezing") == []
    assert set(await found(index, "moraine")) == {first.id, middle.id, last.id}

    async with writer() as uow:
        await uow.memories.delete([middle.id])
        await uow.commit()
    assert await found(index, "moraine") == []
    assert set(await found(index, "soup")) == {first.id, last.id}  # relinked to each other


async def test_the_log_keeps_the_latest_changes_and_a_reader_behind_it_reloads(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical_writer, "CHANGES_KEPT", 3)
    monkeypatch.setattr(lexical_writer, "_PRUNE_EVERY", 2)
    index, writer = service.index, service.writer
    (first,) = turns("The cello lessons start in June.")
    await add_all(writer, [first])
    assert await found(index, "cello") == [first.id]

    later = [
        turns(f"Cello concert number {i}.", scope=replace(first.scope, session_id=f"s{i}"))[0]
        for i in range(2, 8)
    ]
    for memory in later:
        await add_all(writer, [memory])
    async with service.writer_engine.connect() as conn:
        kept = (await conn.execute(text(f"SELECT count(*) FROM {CHANGES}"))).scalar_one()
    assert 3 <= kept <= 5  # pruned to the latest 3 every 2 changes
    assert set(await found(index, "cello")) == {first.id, *(m.id for m in later)}


async def test_scopes_beyond_the_budget_are_searched_by_fts5(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    ours, _ = engines
    uows = SqlUnitOfWorkFactory(ours)
    alice = turns("Marigold vault", "Marigold garden", "Tulip garden")
    bob = turns("Marigold shop", scope=ScopeIds(user_id="bob", session_id="s1"))
    await add_all(uows, alice + bob)
    flt = VectorFilter(["user:alice"], alive_at=NOW)
    held, small = SqlLexicalIndex(ours), SqlLexicalIndex(ours, max_documents=2)
    for index in (held, small):
        assert set(await found(index, "marigold")) == {alice[0].id, alice[1].id, alice[2].id}
        assert await found(index, "marigold shop", ("user:bob",)) == [bob[0].id]
        looked_up = await index.lookup("marigold garden", flt, [m.id for m in alice])
        assert looked_up.coverage[alice[1].id] == pytest.approx(1.0)
        assert looked_up.bm25 is not None
        assert looked_up.bm25[alice[1].id] > 0
        await index.close()


async def test_search_scores_are_bm25f_over_the_scopes_searched(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    ours, _ = engines
    index = SqlLexicalIndex(ours)
    (one,) = turns("Lisbon finals", scope=ScopeIds(user_id="alice", session_id="a"))
    (two,) = turns("Porto", scope=ScopeIds(user_id="alice", session_id="b"))
    (three,) = turns("Faro beach", scope=ScopeIds(user_id="alice", session_id="c"))
    (other,) = turns("Lisbon Lisbon", scope=ScopeIds(user_id="bob", session_id="a"))
    await add_all(SqlUnitOfWorkFactory(ours), [one, two, three, other])
    hits = await index.search("Lisbon", VectorFilter(["user:alice"], alive_at=NOW), 10)
    # n = 1 of N = 3 documents; lengths 2, 1, 2 words (mean 5/3); tf 1 (body weight 1).
    norm = 1.2 * (0.25 + 0.75 * 2 / (5 / 3))
    expected = math.log((3 - 1 + 0.5) / (1 + 0.5)) * 2.2 / (1 + norm)
    assert [(hit.id, hit.score) for hit in hits] == [(one.id, pytest.approx(expected))]
    looked_up = await index.lookup("Lisbon", VectorFilter(["user:alice"]), [one.id, two.id])
    assert looked_up.bm25 == {one.id: pytest.approx(expected)}
    await index.close()


def test_scope_documents_reuse_slots_and_keep_postings_in_step() -> None:
    scope = ScopeDocuments()
    scope.put("a", "episodic", math.inf, {"lisbon": 1.0, "final": 0.35}, 4)
    scope.put("b", "episodic", math.inf, {"lisbon": 0.5}, 2)
    slots, tf = scope.postings("lisbon")
    assert sorted(zip(slots.tolist(), tf.tolist(), strict=True)) == [(0, 1.0), (1, 0.5)]
    scope.drop("a")
    assert scope.holding("final") == 0
    assert scope.holding("lisbon") == 1
    assert scope.postings("lisbon")[0].tolist() == [1]  # the cached arrays were dropped
    scope.put("c", "semantic", 10.0, {"porto": 1.0}, 1)
    assert scope.slots == {"b": 1, "c": 0}  # a's slot, reused
    assert (scope.total_length, len(scope)) == (3.0, 2)
    assert scope.frequencies("c") == ({"porto": 1.0}, 1.0)
    assert scope.expires[0] == 10.0
    assert np.isinf(scope.expires[1])
    scope.put("b", "episodic", math.inf, {"faro": 1.0}, 1)  # rewritten in place of the old one
    assert scope.holding("lisbon") == 0
    assert scope.total_length == 2.0


async def test_a_larger_scope_loads_aside_while_fts5_answers(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(in_memory, "_LOAD_NOW", 0)
    index, writer = service.index, service.writer
    lexicon = index._lexicon
    assert lexicon is not None
    first, second = turns("The cello lessons start in June.", "A cello concert in July.")
    await add_all(writer, [first, second])
    assert set(await found(index, "cello")) == {first.id, second.id}  # by FTS5, loading
    (third,) = turns("Violin, not cello.", scope=replace(first.scope, session_id="s3"))
    await add_all(writer, [third])
    for _ in range(200):
        if lexicon.held("user:alice"):
            break
        await asyncio.sleep(0.01)
    assert lexicon.held("user:alice")
    assert set(await found(index, "cello")) == {first.id, second.id, third.id}
