"""PostgreSQL's lexical search at scale: how close its best documents are to exact BM25, and how
long it takes.

A fresh database migrated with `agentcore migrate`; --documents LoCoMo turns, numbered, in
sessions of 20, one user's scope, written straight into the memories and the lexical index
(each document with its neighbours' text, as the writer makes it; the postings come from the
index's trigger), then ANALYZE (autovacuum's work; it is off on this machine's server). Then
--queries LoCoMo questions: the service's lexical search (``SqlLexicalIndex.search``, limit
30: a search's pool) against exact BM25 over every posting of the query's lexemes, with the
same statistics. Reports the agreement of their best 10 and 30 (shared documents over 10 and
30) and the latency of each.

    .venv/bin/python benchmarks/lexical_pg.py [--documents 20000] [--queries 150]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_latency import corpus, percentiles
from serving import drop_database, production_env

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical.postgres import TermStats
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.lexical.writer import neighbour_text, query_terms
from agentcore.services.ports import VectorFilter

SCOPE = "user:lexical"
_MEMORIES = (
    "INSERT INTO memories (id, content, layer, scope_level, scope_key, user_id, session_id, "
    "metadata, tags, critical, flagged, sensitive, importance, access_count, created_at, "
    "updated_at, source, compacted_from_ids) "
    "SELECT d.id, d.content, 'episodic', 'user', %(scope)s, 'lexical', d.session, '{}', '[]', "
    "false, false, false, 0.5, 0, now() + d.n * interval '1 second', now(), 'api', '[]' "
    "FROM unnest(%(ids)s::text[], %(contents)s::text[], %(sessions)s::text[], %(ns)s::int[]) "
    "AS d (id, content, session, n)"
)
_DOCUMENTS = (
    "INSERT INTO memory_lexical (memory_id, scope_key, layer, session_id, created_at, body, "
    "ctx_before, ctx_after) SELECT m.id, m.scope_key, m.layer, m.session_id, m.created_at, "
    "m.content, d.before, d.after FROM unnest(%(ids)s::text[], %(befores)s::text[], "
    "%(afters)s::text[]) AS d (id, before, after) JOIN memories AS m ON m.id = d.id"
)
_EXACT = """
SELECT t.memory_id
FROM memory_lexical_terms AS t
JOIN unnest(%(lexemes)s::text[], %(weights)s::float8[]) AS w (lexeme, weight)
    ON w.lexeme = t.lexeme
WHERE t.scope_key = %(scope)s
GROUP BY t.memory_id
ORDER BY sum(
    w.weight * t.tf * 2.2 / (t.tf + 1.2 * (0.25 + 0.75 * t.doc_len / %(average)s))
) DESC, t.memory_id
LIMIT 30
"""


def load(url: str, turns: list[str], documents: int) -> float:
    started = time.monotonic()
    texts = [f"{turns[i % len(turns)]} (#{i})" for i in range(documents)]
    with psycopg.connect(url) as conn:
        for start in range(0, documents, 2000):
            rows = range(start, min(start + 2000, documents))
            ids = [f"d-{i}" for i in rows]
            conn.execute(
                _MEMORIES,
                {
                    "scope": SCOPE,
                    "ids": ids,
                    "contents": [texts[i] for i in rows],
                    "sessions": [f"s{i // 20}" for i in rows],
                    "ns": list(rows),
                },
            )
            first = [i % 20 == 0 for i in rows]
            last = [(i + 1) % 20 == 0 or i + 1 == documents for i in rows]
            conn.execute(
                _DOCUMENTS,
                {
                    "ids": ids,
                    "befores": [
                        "" if f else neighbour_text(texts[i - 1])
                        for i, f in zip(rows, first, strict=True)
                    ],
                    "afters": [
                        "" if e else neighbour_text(texts[i + 1])
                        for i, e in zip(rows, last, strict=True)
                    ],
                },
            )
            conn.commit()
        conn.autocommit = True
        conn.execute("ANALYZE memories, memory_lexical, memory_lexical_terms")
    return documents / (time.monotonic() - started)


async def compare(sqlalchemy_url: str, url: str, questions: list[str]) -> dict[str, Any]:
    engine = create_engine(sqlalchemy_url)
    index = SqlLexicalIndex(engine)
    flt = VectorFilter([SCOPE], alive_at=time.time() + 86_400)
    stats = TermStats()
    at10: list[float] = []
    at30: list[float] = []
    fast: list[float] = []
    exact_ms: list[float] = []
    try:
        with psycopg.connect(url) as conn:
            await index.search("warm up", flt, 30)
            for question in questions:
                started = time.perf_counter()
                found = [hit.id for hit in await index.search(question, flt, 30)]
                fast.append((time.perf_counter() - started) * 1000)
                async with engine.connect() as aconn:
                    weights = await stats.weights(aconn, query_terms(question), [SCOPE])
                if not weights.lexemes:
                    continue
                params = {
                    "lexemes": weights.lexemes,
                    "weights": weights.bm25,
                    "scope": SCOPE,
                    "average": weights.average_length,
                }
                started = time.perf_counter()
                exact = [str(row[0]) for row in conn.execute(_EXACT, params)]
                exact_ms.append((time.perf_counter() - started) * 1000)
                for depth, shared in ((10, at10), (30, at30)):
                    wanted = exact[:depth]
                    if wanted:
                        shared.append(len(set(found[:depth]) & set(wanted)) / len(wanted))
    finally:
        await index.close()
        await engine.dispose()
    return {
        "questions": len(at10),
        "agreement_at_10": round(sum(at10) / len(at10), 4),
        "agreement_at_30": round(sum(at30) / len(at30), 4),
        "search": percentiles(fast, []),
        "exact_over_every_posting": percentiles(exact_ms, []),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=150)
    args = parser.parse_args()
    turns, questions = corpus()
    asked = random.Random(3).sample(questions, min(args.queries, len(questions)))
    env, database = production_env("/tmp")
    try:
        sqlalchemy_url = env["DATABASE_URL"]
        url = sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://")
        report: dict[str, Any] = {"documents": args.documents}
        report["loaded_per_second"] = round(load(url, turns, args.documents), 1)
        report.update(asyncio.run(compare(sqlalchemy_url, url, asked)))
    finally:
        drop_database(database)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
