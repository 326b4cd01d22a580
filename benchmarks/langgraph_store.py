"""LangGraph's store interface three ways, same items and questions, one machine: this
service through ``AgentCoreStore`` (``agentcore serve`` in a process of its own, embedded or
PostgreSQL + Redis), LangGraph's ``PostgresStore`` on the local PostgreSQL, and LangGraph's
``InMemoryStore`` with the service's embedder (multilingual-e5-small) in process.

Items are LoCoMo's turns (``{"content": "Speaker: text", "dia_id": ...}``), a namespace per
conversation (``("locomo", "conv-N")``; the service's store maps the second label to a user,
``user_label=1``), the text that search matches is ``content`` on every store. Timed one call
at a time from this process (wall clock, the call as the framework makes it):

- put: each turn of the first conversations until ``--items``;
- get: each of them by key;
- search by filter: ``filter={"dia_id": ...}`` in the conversation's namespace;
- search with a query: LoCoMo's questions (categories 1-4) of those conversations, limit 10,
  once the service has written the puts' vectors (it acknowledges a put before embedding it;
  InMemoryStore embeds within the put).

Then evidence recall@10 of the search with a query over every conversation (all turns
stored, questions of categories 1-4; a question's recall is the share of its evidence turns
in the top 10) on the stores that search by meaning. PostgresStore searches by meaning only
with the pgvector extension, which this machine's PostgreSQL lacks (no Debian package for
PostgreSQL 15 here): its put, get and filtered search are timed, and it is left out of the
query columns. Its ranking with pgvector would be InMemoryStore's (exact cosine over the
same vectors), or an approximation of it with an HNSW index.

    .venv/bin/python benchmarks/langgraph_store.py [--items 1000] [--mode embedded|production]
        [--conversations N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_retrieval import CATEGORIES, DEFAULT, evidence, sessions, turn_content
from serving import PG_ADMIN, running

from agentcore.adapters.embedders import LocalE5Embedder
from agentcore.client import MemoryClient
from agentcore.integrations.langgraph import AgentCoreStore

FIELDS = ["content"]
K = 10


class E5(Embeddings):
    """The service's default embedder in process, as LangChain embeddings (passages and
    queries prefixed as e5 expects)."""

    def __init__(self) -> None:
        self._model = LocalE5Embedder()
        self._loop = asyncio.new_event_loop()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = self._loop.run_until_complete(self._model.embed(texts))
        return np.asarray(vectors, dtype=np.float32).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        vector = self._loop.run_until_complete(self._model.embed_query(text))
        return np.asarray(vector, dtype=np.float32).reshape(-1).tolist()  # type: ignore[no-any-return]


Turn = tuple[tuple[str, str], str, dict[str, str]]  # namespace, key, value


def turns(data: list[dict[str, Any]]) -> list[Turn]:
    found: list[Turn] = []
    for n, conversation in enumerate(data):
        for _, _, session_turns in sessions(conversation):
            for turn in session_turns:
                value = {"content": turn_content(turn), "dia_id": str(turn["dia_id"])}
                found.append((("locomo", f"conv-{n}"), str(turn["dia_id"]), value))
    return found


def questions(data: list[dict[str, Any]]) -> list[tuple[tuple[str, str], str, list[str], int]]:
    found = []
    for n, conversation in enumerate(data):
        known = {str(t["dia_id"]) for _, _, ts in sessions(conversation) for t in ts}
        for qa in conversation["qa"]:
            wanted = evidence(qa.get("evidence", []), known)
            if qa.get("category") in CATEGORIES and wanted:
                found.append((("locomo", f"conv-{n}"), str(qa["question"]), wanted, qa["category"]))
    return found


def percentiles(ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50": round(statistics.median(ordered), 2), "p95": round(p95, 2), "n": len(ordered)}


def timed(calls: Iterator[Callable[[], object]]) -> dict[str, float]:
    ms = []
    for call in calls:
        started = time.perf_counter()
        call()
        ms.append((time.perf_counter() - started) * 1000)
    return percentiles(ms)


def latency(
    store: BaseStore,
    items: list[Turn],
    asked: list[Any],
    by_meaning: bool,
    settle: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    result = {
        "put": timed((lambda i=i: store.put(i[0], i[1], i[2])) for i in items),
        "get": timed((lambda i=i: store.get(i[0], i[1])) for i in items),
        "search_filter": timed(
            (lambda i=i: store.search(i[0], filter={"dia_id": i[2]["dia_id"]}, limit=K))
            for i in items
        ),
    }
    if by_meaning:
        settle()  # the puts' vectors written: searches do not share the CPU with them
        result["search_query"] = timed(
            (lambda q=q: store.search(q[0], query=q[1], limit=K)) for q in asked
        )
    return result


def recall(store: BaseStore, asked: list[Any]) -> dict[str, Any]:
    scores: dict[int, list[float]] = {c: [] for c in CATEGORIES}
    for namespace, question, wanted, category in asked:
        got = [item.key for item in store.search(namespace, query=question, limit=K)]
        scores[category].append(len(set(got) & set(wanted)) / len(wanted))
    every = [s for rows in scores.values() for s in rows]
    return {
        "questions": len(every),
        "recall@10": round(statistics.fmean(every), 3),
        "by_category": {
            name: round(statistics.fmean(scores[c]), 3)
            for c, name in CATEGORIES.items()
            if scores[c]
        },
    }


def load(store: BaseStore, items: list[Turn]) -> None:
    for start in range(0, len(items), 100):
        store.batch([PutOp(ns, key, value) for ns, key, value in items[start : start + 100]])


@contextmanager
def agentcore_store(mode: str) -> Iterator[tuple[AgentCoreStore, Callable[[], None]]]:
    with running(mode) as (port, _):
        base = f"http://127.0.0.1:{port}"
        with AgentCoreStore(base, user_label=1, index={"fields": FIELDS}) as store:
            yield store, lambda: settle(base)


def settle(base: str) -> None:
    """Until the service has written every vector it owes (questions then see them all)."""
    with MemoryClient(base) as client:
        while client.health()["indexing_backlog"] > 0:
            time.sleep(0.2)


@contextmanager
def postgres_store() -> Iterator[BaseStore]:
    import psycopg
    from langgraph.store.postgres import PostgresStore

    name = f"langgraph_bench_{secrets.token_hex(4)}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = PG_ADMIN.rsplit("/", 1)[0] + f"/{name}"
        with PostgresStore.from_conn_string(url) as store:
            store.setup()
            yield store
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--items", type=int, default=1000, help="items timed")
    parser.add_argument("--mode", choices=["embedded", "production"], default="embedded")
    parser.add_argument("--conversations", type=int, default=None, help="recall: the first N")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    data = json.loads(args.path.read_text())[: args.conversations]
    every = turns(data)
    items = every[: args.items]
    timed_ns = {ns for ns, _, _ in items}
    asked = questions(data)
    timed_questions = [q for q in asked if q[0] in timed_ns]
    embeddings = E5()
    out: dict[str, Any] = {"items": len(items), "questions_timed": len(timed_questions)}

    with agentcore_store(args.mode) as (store, settled):
        out[f"agentcore ({args.mode})"] = latency(store, items, timed_questions, True, settled)
        load(store, every)
        settled()
        out[f"agentcore ({args.mode})"]["recall"] = recall(store, asked)
    with postgres_store() as pg:
        out["PostgresStore (no pgvector)"] = latency(pg, items, timed_questions, False)
    memory = InMemoryStore(index={"dims": 384, "embed": embeddings, "fields": FIELDS})
    out["InMemoryStore (e5)"] = latency(memory, items, timed_questions, True)
    load(memory, every)
    out["InMemoryStore (e5)"]["recall"] = recall(memory, asked)

    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{len(items)} items, {len(timed_questions)} questions timed; p50 / p95 ms")
    heads = ("put", "get", "search filter", "search query")
    print(f"{'store':28} " + " ".join(f"{h:>15}" for h in heads) + f" {'R@10':>6}")
    for name, row in out.items():
        if not isinstance(row, dict):
            continue
        cells = [
            f"{row[op]['p50']:6.2f} / {row[op]['p95']:6.2f}" if op in row else f"{'-':>15}"
            for op in ("put", "get", "search_filter", "search_query")
        ]
        r10 = f"{row['recall']['recall@10']:6.3f}" if "recall" in row else f"{'-':>6}"
        print(f"{name:28} {' '.join(cells)} {r10}")


if __name__ == "__main__":
    main()
