"""PostgreSQL plans that must not depend on table statistics: a scope that is new, or grew
since autovacuum last analyzed its tables, looks small to the planner, which then scanned the
whole scope by its index where a search needs a few rows by primary key
(benchmarks/sql_statements.py found it: 25 of a search's 30 ms at 3,000 memories); and the
replay of failed vector writes, which read the whole outbox when none had failed."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest.mock import patch

import psycopg
import pytest
from sqlalchemy import event, text

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical import postgres
from agentcore.adapters.db.lexical.postgres import TermStats
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.statistics import LOCK, analyze_changed
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.services.ports import VectorFilter

pytestmark = pytest.mark.postgres

SCOPE = "user:planner"
MEMORIES = 3000
_TABLES = ("memories", "memory_lexical", "memory_lexical_terms")
_BY_MEMORY = "ix_memory_lexical_terms_memory_id"


@pytest.fixture(scope="module")
def unanalyzed(postgres_url: str) -> str:
    """``MEMORIES`` memories of one scope, their tables never analyzed."""
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as conn:
        for name in _TABLES:
            conn.execute(f"ALTER TABLE {name} SET (autovacuum_enabled = false)")
        conn.execute(
            "INSERT INTO memories (id, content, layer, scope_level, scope_key, user_id, metadata, "
            "tags, critical, flagged, sensitive, importance, access_count, created_at, "
            "updated_at, source, compacted_from_ids) "
            "SELECT 'p-' || g, 'note ' || g || ' about the garden', 'semantic', 'user', %s, "
            "'planner', '{}', '[]', false, false, false, 0.5, 0, now(), now(), 'api', '[]' "
            "FROM generate_series(1, %s) AS g",
            (SCOPE, MEMORIES),
        )
        conn.execute(
            "INSERT INTO memory_lexical (memory_id, scope_key, layer, created_at, body) "
            "SELECT id, scope_key, layer, created_at, content FROM memories"
        )
    return url


def _plans(url: str, statements: list[tuple[str, Any]], explain: str = "EXPLAIN") -> list[str]:
    with psycopg.connect(url) as conn:
        return [
            "\n".join(row[0] for row in conn.execute(f"{explain} {sql}", params).fetchall())
            for sql, params in statements
        ]


async def _search_and_lookup(postgres_url: str) -> list[tuple[str, Any]]:
    """The statements a lexical search and its lookup send to psycopg (some through
    SQLAlchemy, some straight to the driver)."""
    engine = create_engine(postgres_url)
    sent: list[tuple[str, Any]] = []
    execute = psycopg.AsyncCursor.execute

    async def record(cursor: Any, sql: Any, params: Any = None, **kwargs: Any) -> Any:
        sent.append((str(sql), params))
        return await execute(cursor, sql, params, **kwargs)

    index = SqlLexicalIndex(engine)
    try:
        with patch.object(psycopg.AsyncCursor, "execute", record):
            flt = VectorFilter([SCOPE], alive_at=1e10)
            hits = await index.search("garden notes", flt, 10)
            assert len(hits) == 10
            lookup = await index.lookup("garden notes", flt, [hit.id for hit in hits])
            assert len(lookup.memories) == 10
    finally:
        await index.close()
        await engine.dispose()
    return sent


def _check_plans(url: str, postgres_url: str, whole: bool, vacuumed: bool) -> None:
    sent = asyncio.run(_search_and_lookup(postgres_url))
    bm25 = [s for s in sent if "WITH bm25" in s[0]]
    rows = [s for s in sent if s[0].lstrip().startswith("SELECT memories.id")]
    coverage = [s for s in sent if "sum(w.weight)" in s[0] and "WITH bm25" not in s[0]]
    assert len(bm25) == len(rows) == len(coverage) == 1
    bm25_plan, rows_plan, coverage_plan = _plans(url, [bm25[0], rows[0], coverage[0]])
    assert "pk_memories" in bm25_plan, bm25_plan
    # every posting of the lexemes by primary key, or each lexeme's best postings by impact
    # and then the candidates' postings by key (primary, or by memory)
    assert ("ix_memory_lexical_terms_impact" in bm25_plan) is not whole, bm25_plan
    by_key = ("memory_lexical_terms_pkey",) if whole else (_BY_MEMORY, "memory_lexical_terms_pkey")
    assert any(index in bm25_plan for index in by_key), bm25_plan
    for index in ("ix_memories_same_text", "ix_memories_keyset"):  # the scope's rows, all
        assert index not in bm25_plan, bm25_plan
    assert "pk_memories" in rows_plan, rows_plan
    # one probe of the postings' key per candidate (never every posting of the lexemes, which
    # a vacuumed table's index-only scans made look cheap)
    assert "c.memory_id" in _index_conditions(coverage_plan), coverage_plan
    if not whole:
        assert "c.memory_id" in _index_conditions(bm25_plan), bm25_plan
    for plan in (bm25_plan, rows_plan, coverage_plan):
        assert "Seq Scan" not in plan, plan
    if vacuumed:  # the postings' tf and doc_len from the key alone (0018), not the table
        assert "Index Only Scan using memory_lexical_terms_pkey" in bm25_plan, bm25_plan


def _index_conditions(plan: str) -> str:
    return _lines(plan, "Index Cond")


def _lines(plan: str, name: str) -> str:
    return "\n".join(line for line in plan.splitlines() if name in line)


def test_a_search_reads_its_candidates_by_primary_key(
    unanalyzed: str, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the tables never analyzed (a new scope), then analyzed, then vacuumed (their pages
    all-visible: index-only scans, the postings' scores read from their key alone); reading
    the lexemes' best postings by impact (6,000 postings: a search of 10 reads 160), and every
    posting (the bound raised)."""
    for command in ("", "ANALYZE", "VACUUM (ANALYZE)"):
        with psycopg.connect(unanalyzed, autocommit=True) as conn:
            for table in _TABLES if command else ():
                conn.execute(f"{command} {table}")
        for whole in (False, True):
            monkeypatch.setattr(postgres, "EVERY_POSTING_UP_TO", 10**6 if whole else 6)
            _check_plans(unanalyzed, postgres_url, whole, vacuumed=command.startswith("VACUUM"))


async def _failed_writes(postgres_url: str) -> list[tuple[str, Any]]:
    """The statements of the replay's read of failed outbox rows."""
    engine = create_engine(postgres_url)
    sent: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, sql: str, params: Any, *_: Any) -> None:
        sent.append((sql, params))

    try:
        async with SqlUnitOfWorkFactory(engine)() as uow:
            event.listen(engine.sync_engine, "before_cursor_execute", record)
            failed = await uow.outbox.pending(100, failed_only=True)
        assert len(failed) == 2
    finally:
        await engine.dispose()
    return sent


def test_the_replay_reads_only_the_failed_outbox_rows(postgres_url: str) -> None:
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, autocommit=True) as conn:
        for attempts, rows in ((0, 3000), (1, 2)):
            conn.execute(
                "INSERT INTO vector_outbox (memory_id, op, attempts, created_at) "
                "SELECT 'o-' || g, 'upsert', %s, now() FROM generate_series(1, %s) AS g",
                (attempts, rows),
            )
        conn.execute("ANALYZE vector_outbox")
    [statement] = asyncio.run(_failed_writes(postgres_url))
    [plan] = _plans(url, [statement])
    assert "ix_vector_outbox_failed" in plan, plan


_NEXT_IN_SESSION = (
    "SELECT memory_id, body FROM memory_lexical WHERE scope_key = :scope "
    "AND session_id = :session AND layer = 'episodic' "
    "AND (created_at, memory_id) > (:at, :id) ORDER BY created_at, memory_id LIMIT :n"
)


async def _prepared_plans(postgres_url: str, url: str) -> tuple[list[Any], str]:
    """The neighbour lookup of a lexical document run on one connection while its scope is
    empty (psycopg prepares it on the server after five runs; PostgreSQL plans its first five
    runs there for their values, then may keep one generic plan), then after the scope grew to
    5,000 documents: the statement's plan counts, and the plan of its run at that size."""
    engine = create_engine(postgres_url, pool_size=1, max_overflow=0)
    params = {"scope": "user:grows", "session": "s1", "at": "2020-01-01", "id": "", "n": 1}
    try:
        async with engine.connect() as conn:
            for _ in range(20):
                await conn.execute(text(_NEXT_IN_SESSION), params)
            with psycopg.connect(url, autocommit=True) as other:
                other.execute(
                    "INSERT INTO memories (id, content, layer, scope_level, scope_key, user_id, "
                    "session_id, metadata, tags, critical, flagged, sensitive, importance, "
                    "access_count, created_at, updated_at, source, compacted_from_ids) "
                    "SELECT 'g-' || g, 'turn ' || g, 'episodic', 'user', 'user:grows', 'grows', "
                    "'s' || (g % 250), '{}', '[]', false, false, false, 0.5, 0, now(), now(), "
                    "'api', '[]' FROM generate_series(1, 5000) AS g"
                )
                other.execute(
                    "INSERT INTO memory_lexical (memory_id, scope_key, layer, session_id, "
                    "created_at, body) SELECT id, scope_key, layer, session_id, created_at, "
                    "content FROM memories WHERE scope_key = 'user:grows'"
                )
            await conn.execute(text(_NEXT_IN_SESSION), params)
            counts = (
                await conn.execute(
                    text(
                        "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
                        "WHERE statement LIKE '%FROM memory_lexical WHERE scope_key%'"
                    )
                )
            ).all()
            [name] = [row[0] for row in counts]
            explained = await conn.exec_driver_sql(
                f"EXPLAIN EXECUTE {name}('user:grows', 's1', '2020-01-01', '', 1)"
            )
            plan = "\n".join(row[0] for row in explained.all())
    finally:
        await engine.dispose()
    return list(counts), plan


def test_a_statement_is_planned_for_the_table_as_it_is_when_it_runs(postgres_url: str) -> None:
    """A generic plan made while the scope was empty would scan the whole scope for ever
    after (no ANALYZE here: the tables are never analyzed after the migration's)."""
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    [(_, generic, custom)], plan = asyncio.run(_prepared_plans(postgres_url, url))
    assert generic == 0
    assert custom >= 1
    assert "ix_memory_lexical_place" in plan, plan
    assert "Seq Scan" not in plan, plan


_EXACT_BM25 = """
SELECT t.memory_id, sum(
    w.weight * t.tf * 2.2 / (t.tf + 1.2 * (0.25 + 0.75 * t.doc_len / %(average)s))
) AS score
FROM memory_lexical_terms AS t
JOIN unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS w (lexeme, weight)
    ON w.lexeme = t.lexeme
WHERE t.scope_key = %(scope)s
GROUP BY t.memory_id
ORDER BY score DESC, t.memory_id
LIMIT %(limit)s
"""


async def _best_of_both(postgres_url: str, url: str, scope: str) -> tuple[list[str], list[str]]:
    """A search's best 30 in a scope where each query lexeme has more postings than a search
    reads of it by impact (2,000 documents hold "garden", 600 "roses", in bodies of varied
    lengths), and the exact BM25 best 30 over every posting."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memories (id, content, layer, scope_level, scope_key, user_id, metadata, "
            "tags, critical, flagged, sensitive, importance, access_count, created_at, "
            "updated_at, source, compacted_from_ids) "
            "SELECT %s || g, repeat('garden ', 1 + g %% 3) || "
            "CASE WHEN g %% 10 < 3 THEN repeat('roses ', 1 + g %% 4) ELSE '' END || "
            "repeat('tools shed fence path ', g %% 5), 'semantic', 'user', %s, 'impact', '{}', "
            "'[]', false, false, false, 0.5, 0, now(), now(), 'api', '[]' "
            "FROM generate_series(1, 2000) AS g",
            (scope, scope),
        )
        conn.execute(
            "INSERT INTO memory_lexical (memory_id, scope_key, layer, created_at, body) "
            "SELECT id, scope_key, layer, created_at, content FROM memories WHERE scope_key = %s",
            (scope,),
        )
    engine = create_engine(postgres_url)
    index = SqlLexicalIndex(engine)
    flt = VectorFilter([scope], alive_at=1e10)
    try:
        hits = await index.search("garden roses", flt, 30)
        async with engine.connect() as conn:
            weights = await TermStats().weights(conn, ["garden", "roses"], [scope])
    finally:
        await index.close()
        await engine.dispose()
    params = {
        "average": weights.average_length,
        "lexemes": weights.lexemes,
        "weights": weights.bm25,
        "scope": scope,
        "limit": 30,
    }
    with psycopg.connect(url) as conn:
        exact = [str(row[0]) for row in conn.execute(_EXACT_BM25, params)]
    return [hit.id for hit in hits], exact


@pytest.mark.parametrize("read", ["best-postings", "every-posting", "maxscore"])
def test_a_search_finds_the_exact_best(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, read: str
) -> None:
    """Reading each lexeme's best postings by impact, reading every posting (each forced by
    the cost of a probe), and reading the rarer lexeme's postings with the frequent one's
    probed (MaxScore, forced): its 600 documents' best 120 score above anything "garden" can
    add, so no posting is read by impact."""
    monkeypatch.setattr(postgres, "EVERY_POSTING_UP_TO", 0 if read == "best-postings" else 10**6)
    if read == "maxscore":
        monkeypatch.setattr(postgres.QueryWeights, "essential", lambda self, prefetch: 1)
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    sent: list[tuple[str, Any]] = []
    execute = psycopg.AsyncCursor.execute

    async def record(cursor: Any, sql: Any, params: Any = None, **kwargs: Any) -> Any:
        sent.append((str(sql), params))
        return await execute(cursor, sql, params, **kwargs)

    with patch.object(psycopg.AsyncCursor, "execute", record):
        found, exact = asyncio.run(_best_of_both(postgres_url, url, f"user:{read}-"))
    [(bm25, params)] = [(sql, params) for sql, params in sent if "WITH bm25" in sql]
    assert ("ORDER BY p.impact DESC" in bm25) is (read != "every-posting")
    assert len(found) == 30
    assert set(found) == set(exact)
    if read == "maxscore":
        [plan] = _plans(url, [(bm25, params)], "EXPLAIN (ANALYZE, COSTS OFF)")
        # the rare lexeme's postings summed, the impact read never run
        assert "never executed" in _lines(plan, "ix_memory_lexical_terms_impact"), plan


async def _keep(postgres_url: str) -> tuple[list[str], list[str], list[str]]:
    engine = create_engine(postgres_url)
    try:
        first, again = await analyze_changed(engine), await analyze_changed(engine)
        url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(url, autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
            _grow(other, "user:held", 3000)
            held = await analyze_changed(engine)  # another process is analyzing
    finally:
        await engine.dispose()
    return first, again, held


def _grow(conn: psycopg.Connection[Any], scope: str, count: int) -> None:
    conn.execute(
        "INSERT INTO memories (id, content, layer, scope_level, scope_key, user_id, metadata, "
        "tags, critical, flagged, sensitive, importance, access_count, created_at, updated_at, "
        "source, compacted_from_ids) SELECT %s || '-' || g, 'note ' || g, 'semantic', 'user', "
        "%s, 'keeper', '{}', '[]', false, false, false, 0.5, 0, now(), now(), 'api', '[]' "
        "FROM generate_series(1, %s) AS g",
        (scope, scope, count),
    )
    conn.execute("SELECT pg_stat_force_next_flush()")


def test_tables_that_changed_a_lot_are_analyzed_once_by_one_process(postgres_url: str) -> None:
    """What autovacuum does (off on this machine's server): memories grown by 5,000 rows since
    their last analysis are analyzed (and vacuumed where autovacuum is off), then not again
    until they change; nothing is done while another process holds the lock."""
    url = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    last_vacuum = "SELECT last_vacuum FROM pg_stat_user_tables WHERE relname = 'memories'"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE memories, memory_lexical, memory_lexical_terms")
        _grow(conn, "user:keeper", 5000)
        [(vacuumed_before,)] = conn.execute(last_vacuum).fetchall()
    first, again, held = asyncio.run(_keep(postgres_url))
    assert first == ["memories"]
    assert again == []
    assert held == []
    with psycopg.connect(url, autocommit=True) as conn:
        [(analyzed, rows, autovacuum)] = conn.execute(
            "SELECT last_analyze IS NOT NULL, n_live_tup, current_setting('autovacuum') = 'on' "
            "FROM pg_stat_user_tables WHERE relname = 'memories'"
        ).fetchall()
        [(vacuumed_after,)] = conn.execute(last_vacuum).fetchall()
        assert analyzed
        assert (vacuumed_after != vacuumed_before) is not autovacuum
        assert rows >= 5000
