"""One scope at scale: --memories (100,000 by default; 1,000,000 with patience) in one user's
scope, then search, add, start-up, memory and disk as a user of that store sees them.

Load (the bulk path): ``MemoryManager.add_batch`` of 100 items at a time in this process,
through the service's own container on the data directory (embedded: SQLite + qdrant-edge;
production: a fresh Postgres database, Redis, vectors on qdrant-edge: there is no Qdrant server
here), then the wait until every vector is written. Texts are LoCoMo turns, numbered to keep
them distinct, in sessions of 20; each memory carries one of ten tags (``t0``..``t9``).
Vectors: ``--vectors real`` embeds every text with the local model (about 200 texts/s on two
cores); ``--vectors synthetic`` (the default, so that 1M loads in minutes, not hours) gives each
memory the real vector of its LoCoMo turn plus Gaussian noise (sigma 0.02 per dimension,
about cosine 0.92 to the turn's own vector), normalized: memories cluster around real texts as
they would in a real store, and the store's recorded embedder is the real one, so the server
that opens it afterwards embeds its queries with the real model.

During the load the embedded vector store builds its HNSW index in the background each time
``VECTOR_INDEX_THRESHOLD`` (20,000) points are outside one; once loaded, the store is opened
alone until no build is due (the last build's time is reported), so that the server measures
the steady state: HNSW segments plus fewer unindexed points than the threshold.

Then ``agentcore serve`` opens the directory: start-up until /readyz answers 200, RSS after
start, the first search (which starts loading the scope's lexical index into memory, embedded),
the searches made while it loads (FTS5 answers them) and how long it takes, --queries LoCoMo
questions with ``memory.search`` (limit 10) scoped to the user, then the same with a tag filter
(one tag: a tenth of the scope), single ``memory.add`` calls while the scope is large, RSS after
the searches (the server's; the embedded vector engine's process beside it), and the data
directory's size on disk. Last, with the server stopped, the shard is opened in this process
and --queries questions, embedded by the real model, are searched in the engine with the
service's search parameters and exactly: latency and recall@10, by scope and by scope + tag.

    .venv/bin/python benchmarks/scale.py [--memories 100000] [--mode embedded|production]
        [--vectors synthetic|real] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import qdrant_edge as qe
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rpc_client import RpcConnection
from service_latency import corpus, percentiles
from serving import drop_database, embedded_env, free_port, production_env, serve

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical.coverage import SEARCHED
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.lexical.writer import (
    BODY,
    FTS_DOCS,
    FTS_TABLE,
    META,
    NEIGHBOUR,
    query_terms,
    scope_token,
)
from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.adapters.vectors.edge_shard import SEARCH_PARAMS
from agentcore.bootstrap import build_container, build_embedder
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds, ScopeLevel, scope_key
from agentcore.domain.records import NewMemory
from agentcore.services.ports import Embedder, VectorFilter, Vectors

USER = "scale-user"
BATCH = 100
SESSION_TURNS = 20
TAGS = 10
NOISE = 0.02


class SyntheticEmbedder:
    """The real model's vector of each text's LoCoMo turn, plus noise (module docstring)."""

    def __init__(self, base: dict[str, Vectors], real: Embedder) -> None:
        self._base = base
        self._real = real  # texts that are no LoCoMo turn (the service's own references)
        self._model_name = real.model_name
        self._dimension = real.dimension
        self._background = real.background_similarity
        self._rng = np.random.default_rng(3)

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def precision(self) -> str:
        return "the real model's vectors plus noise"

    @property
    def background_similarity(self) -> float:
        return self._background

    async def embed(self, texts: Sequence[str]) -> Vectors:
        turns = [text.rsplit(" (#", 1)[0] for text in texts]
        unknown = [turn for turn in dict.fromkeys(turns) if turn not in self._base]
        if unknown:
            self._base.update(zip(unknown, await self._real.embed(unknown), strict=True))
        rows = np.stack([self._base[turn] for turn in turns])
        rows = rows + self._rng.normal(0, NOISE, rows.shape).astype(np.float32)
        normalized: Vectors = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return normalized

    async def embed_query(self, text: str) -> Vectors:
        vector: Vectors = (await self.embed([text]))[0]
        return vector

    async def embed_now(self, texts: Sequence[str]) -> Vectors:
        return await self.embed(texts)

    async def close(self) -> None:
        return None


def text_of(turns: list[str], i: int) -> str:
    return f"{turns[i % len(turns)]} (#{i})"


async def load(settings: Settings, turns: list[str], count: int, vectors: str) -> dict[str, Any]:
    """Store ``count`` memories through the container's bulk path; time it."""
    real = build_embedder(settings.model_copy(update={"embedder_threads": os.cpu_count() or 1}))
    embedder: Any = real
    if vectors == "synthetic":
        distinct = list(dict.fromkeys(turns))
        base = dict(zip(distinct, await real.embed(distinct), strict=True))
        embedder = SyntheticEmbedder(base, real)
    container = await build_container(settings, embedder=embedder)
    started = time.monotonic()
    try:
        for start in range(0, count, BATCH):
            items = [
                NewMemory(
                    content=text_of(turns, i),
                    scope=ScopeIds(user_id=USER, session_id=f"s{i // SESSION_TURNS}"),
                    tags=[f"t{i % TAGS}"],
                )
                for i in range(start, min(start + BATCH, count))
            ]
            await container.memory.add_batch(items)
            if start % 50_000 == 0 and start:
                rate = start / (time.monotonic() - started)
                print(f"  {start} stored ({rate:.0f}/s)", file=sys.stderr, flush=True)
        stored = time.monotonic()
        while not await container.memory.indexed(600):
            pass
        await container.vector_sync.flush()
        indexed = time.monotonic()
    finally:
        await container.aclose()
        await real.close()
    return {
        "memories": count,
        "vectors": vectors,
        "stored_per_second": round(count / (stored - started), 1),
        "indexed_per_second": round(count / (indexed - started), 1),
    }


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return -1.0


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (the embedded vector engine's)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return found


def disk_mib(path: str) -> float:
    out = subprocess.run(["du", "-sk", path], capture_output=True, text=True, check=True)
    return round(int(out.stdout.split()[0]) / 1024, 1)


async def finish_index(data_dir: str, dimension: int, model: str) -> dict[str, Any]:
    """Open the loaded store alone until no index build is due; what the last build took."""
    store = EdgeVectorStore(Path(data_dir, "qdrant"), own_process=True)
    await store.ensure_collection(dimension, model)
    started = time.monotonic()
    try:
        await asyncio.sleep(1.5)  # an idle store looks for a build to start every second
        status = await store.index_status()
        while status["state"] != "idle":
            await asyncio.sleep(0.5)
            status = await store.index_status()
    finally:
        await store.close()
    return {
        "directory": status["directory"],
        "points": status["points"],
        "unindexed": status["unindexed"],
        "last_build_seconds": status["last_build_seconds"],
        "waited_seconds": round(time.monotonic() - started, 1),
        "failures": status["failures"],
    }


async def embed_questions(questions: list[str], count: int) -> list[list[float]]:
    model = build_embedder(Settings(embedder_threads=os.cpu_count() or 1))
    rng = random.Random(5)
    queries = [(await model.embed_query(rng.choice(questions))).tolist() for _ in range(count)]
    await model.close()
    return queries


def vector_recall(data_dir: str, queries: list[list[float]]) -> dict[str, Any]:
    """The engine's searches of the loaded shard with the service's parameters against its
    exact search: latency and recall@10, by scope and by scope + tag."""
    meta = json.loads(Path(data_dir, "qdrant", "collection.json").read_text())
    shard = qe.EdgeShard.load(str(Path(data_dir, "qdrant", meta.get("shard", "shard"))))
    key = scope_key(ScopeLevel.USER, USER)
    report: dict[str, Any] = {}
    for tagged in (False, True):
        timings, recalls = [], []
        for i, query in enumerate(queries):
            must: list[qe.ConditionType] = [
                qe.FieldCondition("scope_key", match=qe.MatchAny([key])),
                qe.FieldCondition("expires_at", range=qe.RangeFloat(gt=time.time())),
            ]
            if tagged:
                must.append(qe.FieldCondition("tags", match=qe.MatchAny([f"t{i % TAGS}"])))
            request = {"limit": 10, "query": qe.Query.Nearest(query), "filter": qe.Filter(must)}
            started = time.perf_counter()
            found = shard.query(qe.QueryRequest(**request, params=SEARCH_PARAMS))
            timings.append((time.perf_counter() - started) * 1000)
            exact = shard.query(qe.QueryRequest(**request, params=qe.SearchParams(exact=True)))
            hits = {hit.id for hit in exact}
            recalls.append(len({hit.id for hit in found} & hits) / max(1, len(hits)))
        report["scope_and_tag" if tagged else "scope"] = {
            **percentiles(timings, []),
            "recall_at_10": round(float(np.mean(recalls)), 3),
        }
    info = shard.info()
    report["points"], report["indexed"] = info.points_count, info.indexed_vectors_count
    shard.close()
    return report


async def lexical_agreement(settings: Settings, questions: list[str], count: int) -> dict[str, Any]:
    """The service's lexical search (``SqlLexicalIndex``, in this process, on the stopped
    server's database) against exact BM25: FTS5's bm25() over every query term, ranked in
    full. Agreement@k: the share of the engine's k that are in the exact top k, a hit tied
    with the exact k-th score counting as in it (copies of one turn score alike). Also the
    engine's latency per search (its first search opens or loads the scope: not counted)."""
    engine = create_engine(settings.sqlalchemy_url)
    stored = stored_documents(settings)  # a release before it: the in-memory index only
    index = SqlLexicalIndex(
        engine, settings.lexical_memory_documents, *([stored] if stored else [])
    )
    warming = getattr(index, "warming", list)
    key = scope_key(ScopeLevel.USER, USER)
    flt = VectorFilter([key], alive_at=time.time())
    db = sqlite3.connect(f"file:{settings.agentcore_data_dir / 'agentcore.db'}?mode=ro", uri=True)
    weights = ", ".join(str(w) for w in (0.0, BODY, NEIGHBOUR, NEIGHBOUR, META))
    exact_sql = (
        f"SELECT d.memory_id, -f.rank FROM {FTS_TABLE} AS f "
        f"JOIN {FTS_DOCS} AS d ON d.doc_id = f.rowid WHERE {FTS_TABLE} MATCH ? "
        f"AND f.rank MATCH 'bm25({weights})' ORDER BY f.rank LIMIT ?"
    )
    rng = random.Random(11)
    asked = [rng.choice(questions) for _ in range(count)]
    agreement: dict[int, list[float]] = {10: [], 30: []}
    timings: list[float] = []
    try:
        await index.search(asked[0], flt, 30)
        for _ in range(600):  # a scope that loads aside (or builds) answers from FTS5 first
            if not warming() and index.documents_in_memory:
                break
            await asyncio.sleep(0.5)
            await index.search(asked[0], flt, 30)
        for question in asked:
            started = time.perf_counter()
            hits = await index.search(question, flt, 30)
            timings.append((time.perf_counter() - started) * 1000)
            terms = query_terms(question)
            if not terms:
                continue
            match = (
                f'scope : "{scope_token(key)}" AND {{{SEARCHED}}} : ('
                + " OR ".join(f'"{term}"' for term in terms)
                + ")"
            )
            exact = db.execute(exact_sql, (match, 2_000)).fetchall()
            scores = {str(memory_id): float(score) for memory_id, score in exact}
            for k, shares in agreement.items():
                if len(exact) == 0:
                    continue
                kth = exact[min(k, len(exact)) - 1][1]
                got = [hit.id for hit in hits[:k]]
                inside = [i for i in got if scores.get(i, -1.0) >= kth * (1 - 1e-6)]
                shares.append(len(inside) / min(k, len(exact)))
    finally:
        db.close()
        await index.close()
        await engine.dispose()
    return {
        "documents_searched_outside_fts5": index.documents_in_memory,
        "search": percentiles(timings, []),
        **{f"agreement_at_{k}": round(float(np.mean(v)), 4) for k, v in agreement.items()},
        "questions_with_terms": len(agreement[10]),
    }


def stored_documents(settings: Settings) -> int:
    """``LEXICAL_STORED_DOCUMENTS`` (0 with a release before it)."""
    return int(getattr(settings, "lexical_stored_documents", 0))


async def measure(port: int, turns: list[str], questions: list[str], args: Any) -> dict[str, Any]:
    conn = RpcConnection("127.0.0.1", port)
    rng = random.Random(9)
    asked = [rng.choice(questions) for _ in range(args.queries)]

    async def timed(method: str, params: dict[str, Any]) -> float:
        started = time.perf_counter()
        reply = await conn.call(method, {**params, "user_id": USER})
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        return (time.perf_counter() - started) * 1000

    first = await timed("memory.search", {"query": asked[0], "limit": 10})
    loading: list[float] = []  # embedded: searches while the scope's lexical index loads
    started = time.monotonic()
    # A scope over LEXICAL_MEMORY_DOCUMENTS is never held in memory (FTS5 answers for it).
    in_memory = args.memories <= Settings().lexical_memory_documents
    while args.mode == "embedded" and in_memory:
        health = (await conn.call("memory.health", {}))["result"]
        if health["lexical_documents_in_memory"] >= args.memories:
            break
        if time.monotonic() - started > 900:
            raise SystemExit("the lexical index did not load within 15 minutes")
        q = asked[len(loading) % len(asked)]
        loading.append(await timed("memory.search", {"query": q, "limit": 10}))
    lexical_load = time.monotonic() - started
    plain = [await timed("memory.search", {"query": q, "limit": 10}) for q in asked]
    tagged = [
        await timed("memory.search", {"query": q, "limit": 10, "tags": [f"t{i % TAGS}"]})
        for i, q in enumerate(asked)
    ]
    adds = [
        await timed("memory.add", {"content": text_of(turns, args.memories + i)})
        for i in range(args.queries)
    ]
    await conn.close()
    return {
        "first_search_ms": round(first, 1),
        "lexical_index_load_seconds": round(lexical_load, 1),
        "search_while_lexical_index_loads": percentiles(loading, []) if loading else None,
        "search": percentiles(plain, []),
        "search_one_tag": percentiles(tagged, []),
        "add": percentiles(adds, []),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--mode", choices=["embedded", "production"], default="embedded")
    parser.add_argument("--vectors", choices=["synthetic", "real"], default="synthetic")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep the loaded store here (production: and its database): a second run "
        "measures it again, unloaded",
    )
    args = parser.parse_args()
    turns, questions = corpus()
    report: dict[str, Any] = {"mode": args.mode}
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = str(args.data_dir or scratch)
        loaded = Path(data_dir, "scale.json")
        kept = json.loads(loaded.read_text()) if loaded.is_file() else None
        database = None
        if args.mode == "production":
            env, database = production_env(data_dir, kept["database"] if kept else None)
        else:
            env = embedded_env(data_dir)
            subprocess.run(
                [sys.executable, "-m", "agentcore.cli", "migrate"],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        settings = Settings(
            agentcore_data_dir=Path(data_dir),
            database_url=env.get("DATABASE_URL"),
            redis_url=env.get("REDIS_URL"),
        )
        try:
            if kept:
                report["load"] = kept
            else:
                report["load"] = uvloop.run(load(settings, turns, args.memories, args.vectors))
                if database is not None:
                    report["load"]["database"] = database
                loaded.write_text(json.dumps(report["load"]))
            if args.mode == "embedded":
                real = build_embedder(settings.model_copy(update={"embedder_threads": 1}))
                report["index"] = uvloop.run(
                    finish_index(data_dir, real.dimension, real.model_name)
                )
                uvloop.run(real.close())
            report["disk_mib"] = disk_mib(data_dir)
            port = free_port()
            started = time.monotonic()
            server = serve(env, port)
            try:
                while True:
                    try:
                        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1)
                        if ready.status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.05)
                report["startup_seconds"] = round(time.monotonic() - started, 2)
                report["rss_after_start_mib"] = rss_mib(server.pid)
                report.update(uvloop.run(measure(port, turns, questions, args)))
                report["rss_after_searches_mib"] = rss_mib(server.pid)
                report["rss_vector_process_mib"] = sum(rss_mib(pid) for pid in children(server.pid))
            finally:
                server.terminate()
                server.wait(timeout=60)
            if args.mode == "embedded":
                report["lexical"] = uvloop.run(lexical_agreement(settings, questions, args.queries))
                queries = uvloop.run(embed_questions(questions, args.queries))
                report["engine"] = vector_recall(data_dir, queries)
        finally:
            if database is not None and args.data_dir is None:
                drop_database(database)
    report["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
