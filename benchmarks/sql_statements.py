"""Where Postgres's time goes in production mode: the SQL statements of one memory.add and of
one memory.search, counted and timed, and EXPLAIN ANALYZE of the slowest.

Builds the service in this process on a fresh, migrated Postgres database and Redis (vectors on
qdrant-edge in a temporary directory, as benchmarks/load.py --mode production), loads
--preload LoCoMo turns into one user's scope with memory.add_batch, waits until they are
indexed, then sends --calls JSON-RPC memory.add calls and --calls memory.search calls one at a
time through the service's JSON-RPC endpoint. Every statement sent to psycopg is recorded
(with its parameters), plus the pool's checkouts (each pings the server first:
``pool_pre_ping``), the transactions begun (BEGIN, then COMMIT or ROLLBACK; none in
autocommit) and the commits. Statements are attributed to the call they ran in; the
work a call leaves behind it (its vector written, the outbox row deleted, access counts) runs
until the service is idle again, and is reported apart as ``after``; beside the statements, the
service's CPU time per call (this process, every thread: the query's embedding included). Then
each distinct
read statement whose total time is among the highest is run again under
``EXPLAIN (ANALYZE, BUFFERS)`` with the parameters of its slowest run.

    .venv/bin/python benchmarks/sql_statements.py [--preload 3000] [--calls 50] [--explain 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_latency import corpus

from agentcore.api.runtime import running
from agentcore.config import Settings

USER = "sql-user"
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


@dataclass
class Statement:
    sql: str
    seconds: float
    params: Any


@dataclass
class Recorder:
    """What ran while it was the current recording: statements, checkouts, commits."""

    statements: list[Statement] = field(default_factory=list)
    checkouts: int = 0
    commits: int = 0
    transactions: int = 0  # BEGIN sent (not in autocommit)
    cpu_seconds: float = 0.0  # this process's CPU time (every thread) over the recording


CURRENT: list[Recorder] = []  # the recording under way, if any
_PING = ";"  # pool_pre_ping's statement (psycopg): counted with the checkouts


def install() -> None:
    """Listen to every engine and pool of this process, and to psycopg's cursors: the service
    sends some statements straight to the driver (``engine.pg_driver_rows``)."""
    execute = psycopg.AsyncCursor.execute

    async def recorded(cursor: Any, sql: Any, params: Any = None, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await execute(cursor, sql, params, **kwargs)
        finally:
            if CURRENT and str(sql) != _PING:
                seconds = time.perf_counter() - started
                CURRENT[0].statements.append(Statement(str(sql), seconds, params))

    psycopg.AsyncCursor.execute = recorded  # type: ignore[method-assign]

    @event.listens_for(Engine, "begin")
    def begin(conn: Any) -> None:
        if CURRENT and conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            CURRENT[0].transactions += 1

    @event.listens_for(Engine, "commit")
    def commit(conn: Any) -> None:
        if CURRENT:
            CURRENT[0].commits += 1

    @event.listens_for(Pool, "checkout")
    def checkout(*_: Any) -> None:
        if CURRENT:
            CURRENT[0].checkouts += 1


@contextmanager
def recording() -> Iterator[Recorder]:
    CURRENT.append(Recorder())
    started = time.process_time()
    try:
        yield CURRENT[0]
    finally:
        CURRENT[0].cpu_seconds = time.process_time() - started
        CURRENT.clear()


def shape(sql: str) -> str:
    """A statement without its values, its lists of placeholders folded, and a long column
    list cut (``SELECT memories.id, ... FROM``)."""
    text = " ".join(sql.split())
    text = re.sub(r"%\(\w+?\)s(::[A-Z ]+(\[\])?)?", "?", text)
    text = re.sub(r"\?(, \?)+", "?", text)
    text = re.sub(r"\(\?\)(, \(\?\))+", "(?)...", text)
    return re.sub(r"^SELECT (\w+\.\w+), [^()]*? FROM ", r"SELECT \1, ... FROM ", text)


def summary(windows: list[Recorder], calls: int) -> dict[str, Any]:
    by_shape: dict[str, list[Statement]] = defaultdict(list)
    for window in windows:
        for statement in window.statements:
            by_shape[shape(statement.sql)].append(statement)
    rows = sorted(by_shape.items(), key=lambda kv: -sum(s.seconds for s in kv[1]))
    return {
        "statements_per_call": round(sum(len(w.statements) for w in windows) / calls, 2),
        "checkouts_per_call": round(sum(w.checkouts for w in windows) / calls, 2),
        "commits_per_call": round(sum(w.commits for w in windows) / calls, 2),
        "transactions_per_call": round(sum(w.transactions for w in windows) / calls, 2),
        # statements, a ping per checkout (pool_pre_ping), BEGIN and COMMIT/ROLLBACK
        "round_trips_per_call": round(
            sum(len(w.statements) + w.checkouts + 2 * w.transactions for w in windows) / calls, 2
        ),
        "service_cpu_ms_per_call": round(sum(w.cpu_seconds for w in windows) * 1000 / calls, 2),
        "ms_in_statements_per_call": round(
            sum(s.seconds for w in windows for s in w.statements) * 1000 / calls, 2
        ),
        "statements": [
            {
                "per_call": round(len(runs) / calls, 2),
                "mean_ms": round(sum(s.seconds for s in runs) * 1000 / len(runs), 3),
                "max_ms": round(max(s.seconds for s in runs) * 1000, 3),
                "sql": text[:300],
            }
            for text, runs in rows
        ],
    }


async def idle(runtime: Any) -> None:
    """Until the write-behind work of the calls so far is done."""
    container = runtime.container
    await container.memory.indexed(60)
    await container.vector_sync.flush()
    await container.access.flush()


async def rpc(runtime: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    reply: dict[str, Any] = await runtime.rpc.handle(body.encode())
    if "error" in reply:
        raise RuntimeError(f"{method}: {reply['error']}")
    return reply


async def measure(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    turns, questions = corpus()
    rng = random.Random(11)
    rng.shuffle(turns)
    preload, fresh = turns[: args.preload], turns[args.preload :]
    async with running(settings) as runtime:
        for start in range(0, len(preload), 100):
            items = [{"content": text, "user_id": USER} for text in preload[start : start + 100]]
            await rpc(runtime, "memory.add_batch", {"items": items})
        await idle(runtime)
        report: dict[str, Any] = {"preloaded": len(preload)}
        for method, texts, params in (
            ("memory.add", fresh, lambda text: {"user_id": USER, "content": text}),
            ("memory.search", questions, lambda text: {"user_id": USER, "query": text}),
        ):
            during, after = [], []
            for text in texts[: args.calls]:
                with recording() as call:
                    await rpc(runtime, method, params(text))
                with recording() as behind:
                    await idle(runtime)
                during.append(call)
                after.append(behind)
            report[method] = {
                "during": summary(during, args.calls),
                "after": summary(after, args.calls),
            }
            report[method]["explain"] = await explain(settings, during, args.explain)
    return report


async def explain(settings: Settings, windows: list[Recorder], count: int) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the ``count`` read statements with the most total time,
        each with the parameters of its slowest run, with the tables' statistics as they were, then
    after ANALYZE."""
    by_shape: dict[str, list[Statement]] = defaultdict(list)
    for window in windows:
        for statement in window.statements:
            if statement.sql.lstrip().upper().startswith(("SELECT", "WITH")):
                by_shape[shape(statement.sql)].append(statement)
    ranked = sorted(by_shape.values(), key=lambda runs: -sum(s.seconds for s in runs))[:count]
    url = settings.sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://")
    plans = []
    with psycopg.connect(url, autocommit=True) as conn:
        for analyzed in (False, True):
            if analyzed:  # the statistics autovacuum would have gathered by then
                conn.execute("ANALYZE")
            for runs in ranked:
                slowest = max(runs, key=lambda s: s.seconds)
                explain = "EXPLAIN (ANALYZE, BUFFERS) " + slowest.sql
                plan = [row[0] for row in conn.execute(explain, slowest.params).fetchall()]
                title = "after ANALYZE" if analyzed else "statistics as they were"
                plans.append(f"[{title}] {shape(slowest.sql)[:400]}\n" + "\n".join(plan))
    return plans


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preload", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--explain", type=int, default=4)
    parser.add_argument("--redis-db", type=int, default=5)
    args = parser.parse_args()
    name = f"agentcore_sql_{secrets.token_hex(4)}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
            env = {"DATABASE_URL": url, "AGENTCORE_DATA_DIR": data_dir}
            migrate = [sys.executable, "-m", "agentcore.cli", "migrate"]
            subprocess.run(
                migrate, env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL
            )
            settings = Settings(
                agentcore_data_dir=Path(data_dir),
                database_url=url,
                redis_url=f"redis://127.0.0.1:6379/{args.redis_db}",
                log_level="WARNING",
            )
            install()
            report = asyncio.run(measure(settings, args))
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    for method in ("memory.add", "memory.search"):
        plans = report[method].pop("explain")
        print(json.dumps({method: report[method]}, indent=1))
        for plan in plans:
            print("\n" + plan)


if __name__ == "__main__":
    main()
