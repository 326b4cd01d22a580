"""The lexical index (SQLite FTS5 / PostgreSQL full-text) behind ``SqlLexicalIndex``, written by
the memory repository in the memory's own transaction. Both backends are migrated by Alembic
(revision 0005 creates the index and fills it from existing memories)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import delete, func, insert, inspect, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import ThreadedReader, create_engine
from agentcore.adapters.db.lexical.coverage import ScopeFrequencies
from agentcore.adapters.db.lexical.postgres import QueryWeights, TermStats
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.lexical.writer import FTS_DOCS, FTS_TABLE, query_terms, scope_token
from agentcore.adapters.db.memory_rows import memory_values
from agentcore.adapters.db.migrate import alembic_config
from agentcore.adapters.db.tables import MemoryRow
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.domain.errors import Conflict
from agentcore.domain.filter_grammar import parse_filter
from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel, new_id
from agentcore.services.ports import VectorFilter
from tests.conftest import migrate

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
ALICE = ScopeIds(user_id="alice", session_id="s1")
NOW = (T0 + timedelta(days=1)).timestamp()


@pytest.fixture
def uows(engine: AsyncEngine) -> SqlUnitOfWorkFactory:
    return SqlUnitOfWorkFactory(engine)


@pytest.fixture
async def index(engine: AsyncEngine) -> AsyncIterator[SqlLexicalIndex]:
    index = SqlLexicalIndex(engine)
    yield index
    await index.close()


def turns(*contents: str, scope: ScopeIds = ALICE, start: int = 0, **fields: Any) -> list[Memory]:
    """Memories of one session, a minute apart."""
    return [
        Memory(
            id=new_id(),
            content=content,
            layer=Layer.EPISODIC,
            scope_level=ScopeLevel.USER,
            scope=scope,
            created_at=T0 + timedelta(minutes=start + i),
            updated_at=T0,
            **fields,
        )
        for i, content in enumerate(contents)
    ]


async def add_all(uows: SqlUnitOfWorkFactory, memories: list[Memory]) -> None:
    async with uows() as uow:
        for memory in memories:
            await uow.memories.add(memory)
        await uow.commit()


async def found(
    index: SqlLexicalIndex, query: str, scope_keys: tuple[str, ...] = ("user:alice",), **flt: Any
) -> list[str]:
    hits = await index.search(query, VectorFilter(scope_keys, alive_at=NOW, **flt), 10)
    assert all(hit.score > 0 for hit in hits)
    return [hit.id for hit in hits]


async def test_exact_names_and_stems_are_found(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    memories = turns(
        "Melanie painted a sunrise over the lake last summer.",
        "The quarterly report is due next Monday.",
        "Caroline adopted a dog called Oscar from the shelter in Zanzibar.",
    )
    await add_all(uows, memories)
    assert (await found(index, "Where is Zanzibar?"))[0] == memories[2].id
    assert (await found(index, "Who is painting sunrises?"))[0] == memories[0].id  # stemmed
    assert await found(index, "what is it") == []  # stop words only
    assert await found(index, "kangaroo") == []


async def test_a_reply_is_found_through_the_question_it_answers(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    question, reply, later = turns(
        "Which instrument are you learning?", "The cello, twice a week.", "Nice weather today."
    )
    other_session = turns("Which instrument do you play?", scope=replace(ALICE, session_id="s2"))
    await add_all(uows, [question, reply, later, *other_session])

    hits = await found(index, "instrument")
    assert hits[:2] == [question.id, other_session[0].id] or hits[:2] == [
        other_session[0].id,
        question.id,
    ]
    assert reply.id in hits
    assert later.id not in hits
    cello = await found(index, "cello")
    assert cello[0] == reply.id
    assert set(cello) == {question.id, reply.id, later.id}


async def test_coverage_is_the_share_of_query_terms_a_document_holds(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    painted, cello, weather = turns(
        "Melanie painted a sunrise over the lake.",  # its neighbour lends it "cello"
        "The cello lessons start in June.",
        "Nice weather today.",
    )
    lonely = turns("Sunrises and lakes, painted again.", scope=replace(ALICE, session_id="s2"))
    unrelated = turns("Nothing to see here.", scope=replace(ALICE, session_id="s3"))
    await add_all(uows, [painted, cello, weather, *lonely, *unrelated])
    ids = [painted.id, cello.id, weather.id, lonely[0].id, unrelated[0].id, new_id()]

    # four distinct stems: paint, sunris, cello, kangaroo (stop words are not terms); each of
    # the first three is in 3 of the scope's 5 documents (by their text or a neighbour's)
    query = "Who is painting sunrises with a cello or a kangaroo?"
    looked_up = await index.lookup(query, VectorFilter(["user:alice"]), ids)
    coverage = looked_up.coverage
    assert {m.id for m in looked_up.memories} == set(ids[:-1])  # stored ones, with terms or not

    def idf(holding: int) -> float:
        return math.log(1 + (5 - holding + 0.5) / (holding + 0.5))

    whole = 3 * idf(3) + idf(0)
    assert coverage[painted.id] == pytest.approx(3 * idf(3) / whole)  # cello: its neighbour
    assert coverage[lonely[0].id] == pytest.approx(2 * idf(3) / whole)  # other word forms
    assert coverage[cello.id] == pytest.approx(3 * idf(3) / whole)
    assert coverage[weather.id] == pytest.approx(idf(3) / whole)  # cello (neighbour)
    assert unrelated[0].id not in coverage  # holds none of the terms
    assert ids[-1] not in coverage  # not stored
    flt = VectorFilter(["user:alice"])
    assert (await index.lookup("what is it", flt, ids)).coverage == {}  # no terms
    nothing = await index.lookup("cello", flt, [])
    assert (nothing.memories, nothing.coverage) == ([], {})
    assert (await index.lookup("cello", VectorFilter([]), ids)).coverage == {}  # no scope


async def test_sqlite_lookup_gives_each_candidate_the_bm25_of_fts5(
    uows: SqlUnitOfWorkFactory, engine: AsyncEngine
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's lookup gives coverage only")
    index = SqlLexicalIndex(engine, max_documents=0)  # no scope held in memory: FTS5
    await add_all(
        uows,
        turns(
            "Melanie painted a sunrise over the lake, then painted it again.",
            "The cello lessons start in June; the cello is rented.",
            "Nice weather today.",
        )
        + turns("Sunrises and lakes, painted at dawn.", scope=replace(ALICE, session_id="s2"))
        + turns(
            "Melanie's cello: a painted, second-hand one.", scope=replace(ALICE, session_id="s3")
        )
        + turns("Bob painted his cello red.", scope=ScopeIds(user_id="bob")),
    )
    query = "Who painted sunrises with a cello?"
    flt = VectorFilter(["user:alice"], alive_at=NOW)
    hits = await index.search(query, flt, 10)  # FTS5's own bm25(), weighted by column
    looked_up = await index.lookup(query, flt, [hit.id for hit in hits])
    assert looked_up.bm25 is not None
    assert set(looked_up.bm25) == set(looked_up.coverage) == {hit.id for hit in hits}
    for hit in hits:  # document frequencies over the whole table, as FTS5 counts them
        assert looked_up.bm25[hit.id] == pytest.approx(hit.score, rel=1e-9)
    await index.close()


async def test_sqlite_term_counts_are_cached_for_their_ttl(
    uows: SqlUnitOfWorkFactory, engine: AsyncEngine
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("FTS5 counts: SQLite only (Postgres counts its postings in the query)")
    now = [0.0]
    frequencies = ScopeFrequencies(ttl=60, clock=lambda: now[0])
    scopes = f'scope : ("{scope_token("user:alice")}")'
    await add_all(uows, turns("The cello lessons start in June.", "Nice weather today."))

    async def counts() -> tuple[int, list[int]]:
        async with engine.connect() as conn:
            return await conn.run_sync(frequencies.counts, scopes, ["cello", "kangaroo"])

    assert await counts() == (2, [2, 0])  # the weather turn holds "cello" as a neighbour
    await add_all(uows, turns("A cello concert.", scope=replace(ALICE, session_id="s2")))
    now[0] = 59.0
    assert await counts() == (2, [2, 0])  # cached
    now[0] = 61.0
    assert await counts() == (3, [3, 0])


async def test_update_and_delete_keep_the_index_in_step(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    first, middle, last = turns("We hiked to the glacier.", "It was freezing.", "Then soup.")
    await add_all(uows, [first, middle, last])
    async with uows() as uow:
        await uow.memories.update(replace(middle, content="It was windy on the moraine."))
        await uow.commit()
    assert await found(index, "freezing") == []
    assert (await found(index, "moraine"))[0] == middle.id
    assert set(await found(index, "moraine")) == {first.id, middle.id, last.id}

    async with uows() as uow:
        await uow.memories.delete([middle.id])
        await uow.commit()
    assert await found(index, "moraine") == []  # neither the memory nor its neighbours' context
    assert set(await found(index, "glacier")) == {first.id, last.id}  # relinked to each other


async def test_other_scopes_and_expired_memories_never_come_back(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    (mine,) = turns("The vault code is Marigold")
    (theirs,) = turns("The vault code is Marigold", scope=ScopeIds(user_id="bob", session_id="s1"))
    (expired,) = turns("Marigold expired", expires_at=T0 + timedelta(hours=1))
    await add_all(uows, [mine, theirs, expired])

    assert await found(index, "Marigold vault code") == [mine.id]
    assert await found(index, "Marigold", ("user:bob",)) == [theirs.id]
    assert await found(index, "Marigold", ("user:carol",)) == []
    assert set(await found(index, "Marigold", ("user:alice", "user:bob"))) == {mine.id, theirs.id}
    assert await found(index, "Marigold", layers=["semantic"]) == []
    early = await index.search("Marigold", VectorFilter(["user:alice"], alive_at=T0.timestamp()), 5)
    assert {hit.id for hit in early} == {mine.id, expired.id}


async def test_metadata_and_tags_are_searchable(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    plain, dated = turns("I finally opened my shop!", "Went swimming.")
    await add_all(
        uows,
        [
            replace(plain, metadata={"speaker": "Dave", "session_date": "1 May, 2023"}),
            replace(dated, tags=["hobby"], metadata={"speaker": "Calvin", "n": 3}),
        ],
    )
    assert await found(index, "What did Dave open in May 2023?") == [plain.id, dated.id]
    assert (await found(index, "hobby"))[0] == dated.id
    assert await found(index, "What did Dave open in May 2023?", ids=[dated.id]) == [dated.id]


async def test_a_where_is_decided_by_the_rows(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex
) -> None:
    lesson, recital, repair = turns("Cello lesson.", "Cello recital.", "Cello repair.")
    lesson = replace(lesson, metadata={"kind": "lesson", "n": 1}, tags=["music"])
    recital = replace(recital, metadata={"kind": "recital", "n": 2})
    repair = replace(repair, metadata={"kind": "repair", "n": 3}, stage_id="st1")
    await add_all(uows, [lesson, recital, repair])
    everything = {lesson.id, recital.id, repair.id}
    assert set(await found(index, "cello")) == everything  # SQLite: held in memory

    later = parse_filter({"n": {"gte": 2}})
    assert set(await found(index, "cello", where=later)) == {recital.id, repair.id}
    either = {"OR": [{"tags": "music"}, {"stage_id": "st1"}], "NOT": [{"kind": "repair"}]}
    assert await found(index, "cello", where=parse_filter(either)) == [lesson.id]
    flt = VectorFilter(["user:alice"], where=parse_filter({"kind": {"icontains": "RE"}}))
    looked_up = await index.lookup("cello", flt, [lesson.id, recital.id, repair.id])
    assert {m.id for m in looked_up.memories} == {recital.id, repair.id}
    assert set(looked_up.coverage) == {recital.id, repair.id}


def test_query_terms_drop_stop_words_and_punctuation() -> None:
    assert query_terms("What did John's sister_in_law say, in 2023?") == [
        "john",
        "sister",
        "law",
        "say",
        "2023",
    ]


async def test_the_migration_indexes_existing_memories(database_url: str) -> None:
    config = alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0004")
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(delete(MemoryRow.__table__))
            question, reply = turns("Which city hosts the finals?", "Lisbon, in June.")
            known = await conn.run_sync(
                lambda c: {column["name"] for column in inspect(c).get_columns("memories")}
            )
            for memory in (question, reply):  # the row as revision 0004 knew it
                values = {k: v for k, v in memory_values(memory).items() if k in known}
                await conn.execute(insert(MemoryRow.__table__).values(values))
        await asyncio.to_thread(command.upgrade, config, "head")
        index = SqlLexicalIndex(engine)
        assert await found(index, "Lisbon") == [reply.id, question.id]
        async with SqlUnitOfWorkFactory(engine)() as uow:
            await uow.memories.delete([question.id, reply.id])
            await uow.commit()
        assert await found(index, "Lisbon city") == []
        await index.close()
    finally:
        await engine.dispose()


async def test_the_sqlite_reader_reads_committed_rows_and_never_writes(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agentcore.db'}"
    migrate(url)
    engine = create_engine(url)
    reader = ThreadedReader(url)
    try:
        await add_all(SqlUnitOfWorkFactory(engine), turns("Lisbon, in June."))
        count = select(func.count()).select_from(MemoryRow.__table__)
        assert await reader.run(lambda conn: conn.execute(count).scalar_one()) == 1
        with pytest.raises(OperationalError, match="readonly"):
            await reader.run(lambda conn: conn.execute(delete(MemoryRow.__table__)))
        assert await reader.run(lambda conn: conn.execute(count).scalar_one()) == 1
    finally:
        await reader.close()
        await engine.dispose()
    with pytest.raises(ValueError, match="SQLite database file"):
        ThreadedReader("sqlite+aiosqlite:///:memory:")


async def _contexts(engine: AsyncEngine) -> dict[str, tuple[str, str]]:
    """Each document's (ctx_before, ctx_after), by memory id."""
    if engine.dialect.name == "postgresql":
        sql = f"SELECT memory_id, ctx_before, ctx_after FROM {FTS_TABLE}"
    else:
        sql = (
            f"SELECT d.memory_id, f.ctx_before, f.ctx_after FROM {FTS_DOCS} AS d "
            f"JOIN {FTS_TABLE} AS f ON f.rowid = d.doc_id"
        )
    async with engine.connect() as conn:
        rows = (await conn.execute(text(sql))).all()
    return {str(row[0]): (str(row[1]), str(row[2])) for row in rows}


async def test_memories_added_together_get_the_documents_of_one_at_a_time(
    uows: SqlUnitOfWorkFactory, index: SqlLexicalIndex, engine: AsyncEngine
) -> None:
    # s1: two turns stored, then three newer ones together; s2: an import of older turns
    # around a stored one (indexed one at a time); one memory without a session.
    stored = turns("We booked the ferry.", "It leaves at dawn.")
    newer = turns("Pack the tent.", "And the lantern.", "Bring oat bars.", start=2)
    s2 = replace(ALICE, session_id="s2")
    middle = turns("The bridge was closed.", scope=s2, start=5)
    around = [*turns("Traffic was bad.", scope=s2), *turns("We took a detour.", scope=s2, start=9)]
    loose = turns("A note without a session.", scope=ScopeIds(user_id="alice"))
    await add_all(uows, [*stored, *middle])
    async with uows() as uow:
        await uow.memories.add_many([*newer, *around, *loose])
        await uow.commit()

    contexts = await _contexts(engine)
    for session in ([*stored, *newer], [around[0], *middle, around[1]]):
        texts = ["", *(m.content for m in session), ""]
        for i, memory in enumerate(session):
            assert contexts[memory.id] == (texts[i], texts[i + 2]), memory.content
    assert contexts[loose[0].id] == ("", "")
    assert (await found(index, "lantern"))[0] == newer[1].id
    assert set(await found(index, "lantern")) == {m.id for m in newer}  # and its neighbours
    assert (await found(index, "detour"))[0] == around[1].id


async def test_a_taken_id_fails_the_memories_added_together(uows: SqlUnitOfWorkFactory) -> None:
    first, second = turns("One.", "Two.")
    await add_all(uows, [first])
    async with uows() as uow:
        with pytest.raises(Conflict):
            await uow.memories.add_many([second, first])


async def test_postgres_keeps_its_counts_longer_the_larger_the_scope(
    uows: SqlUnitOfWorkFactory, engine: AsyncEngine
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite's counts are FTS5's (ScopeFrequencies)")
    await add_all(uows, turns("Cello lessons on Monday.", "Tea after the lesson."))
    now = [0.0]
    stats = TermStats(clock=lambda: now[0])

    async def weights() -> QueryWeights:
        async with engine.connect() as conn:
            return await stats.weights(conn, ["cello", "lesson", "unheard"], ["user:alice"])

    small = await weights()
    assert small.lexemes == ["cello", "lesson", "unheard"]
    await add_all(uows, turns(*(f"Cello practice {i}." for i in range(100)), start=10))
    now[0] = 0.5  # two documents: counted again after a second
    assert await weights() == small
    now[0] = 1.5
    grown = await weights()
    assert grown.coverage[0] < small.coverage[0]  # "cello" is in every document now
    assert grown.bm25[2] > small.bm25[2]  # a word no document holds: rarer in a larger scope
    assert min(grown.bm25 + grown.coverage) > 0
    assert grown.average_length != small.average_length
