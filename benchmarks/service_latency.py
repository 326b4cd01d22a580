"""memory.add and memory.search latency through the public API on the embedded default.

Starts `agentcore serve` (SQLite file, qdrant-edge, local ONNX embedder) in a fresh data
directory, loads N memories into ONE scope with memory.add_batch (sessions of 20 turns, so the
lexical documents carry their neighbours), then times single memory.add and memory.search calls
over HTTP JSON-RPC, one at a time. Searches are timed twice: plain (similarity, recency,
frequency, criticality) and with every factor at work (a task with recorded errors, so the
error-correction factor reads them, and a current stage, so stage relevance looks up the stage
of each candidate). Searches are timed after 50 warm-up searches (reported apart: the first
search of a scope starts loading its lexical documents into memory). Texts are the turns of the
LoCoMo conversations (read from ../shared/data/locomo, cycled to reach N), queries are its
questions; without the data set it falls back to generated sentences. Each kind of call also
reports the server's mean CPU time per call (all its threads, from /proc; Linux only).

In the same run, after the server has stopped, mem0 OSS (mem0ai) gets the same texts and
queries (benchmarks/mem0_oss.py): run in-process as its users would here, with its default
embedded Qdrant on disk, its SQLite history, no LLM (infer=False) and our embedder on the
server's embedder settings; it loads the first --mem0-memories texts (default: all N, one
session of 20 a call, untimed), then times the same single adds and, after the same warm-up,
the same searches (filters={"user_id": ...}, top_k=10), each with perf_counter around the mem0
call only; its CPU time per call is this process's. "ours_over_mem0_p95" divides our p95 by
mem0's (below 1: we are faster). --no-mem0 skips it.

    .venv/bin/python benchmarks/service_latency.py [--memories 10000] [--calls 300]
        [--no-mem0] [--mem0-memories N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mem0_oss import SESSION_TURNS as MEM0_SESSION_TURNS
from mem0_oss import Mem0Timings, run_mem0
from serving import embedded_env, free_port, serve

from agentcore.config import Settings

SESSION_TURNS = 20
ERRORS = 5  # recorded for the task whose searches use every factor
WARM_UP = 50  # searches before the timed ones
LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"


def corpus() -> tuple[list[str], list[str]]:
    if LOCOMO.is_file():
        data = json.loads(LOCOMO.read_text())
        turns = [
            f"{turn['speaker']}: {turn['text']}"
            for conv in data
            for key, session in conv["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
            for turn in session
        ]
        questions = [qa["question"] for conv in data for qa in conv["qa"]]
        return turns, questions
    rng = random.Random(7)
    words = [
        "alice",
        "bob",
        "deploy",
        "tea",
        "garden",
        "python",
        "meeting",
        "paris",
        "budget",
        "dog",
        "painting",
    ]
    turns = [" ".join(rng.choices(words, k=12)) for _ in range(2000)]
    return turns, [" ".join(rng.choices(words, k=6)) + "?" for _ in range(500)]


def percentiles(
    samples: list[float], cpu: list[float], cpu_key: str = "server_cpu_ms_per_call"
) -> dict[str, float | None]:
    """Latency percentiles, and the server's mean CPU time per call (None off Linux)."""
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(pick(0.95), 2),
        "p99_ms": round(pick(0.99), 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
        cpu_key: round(statistics.fmean(cpu), 2) if cpu else None,
    }


class ServerCpu:
    """The CPU time (user + system, all threads) the server process has used, from /proc:
    on two cores a call's CPU time, not its latency, is what no overlap of threads can hide.
    It counts in clock ticks (10 ms), and background work lands on the call it overlaps, so
    only a mean over many calls means anything."""

    def __init__(self, pid: int) -> None:
        self._stat = Path(f"/proc/{pid}/stat")
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def ms(self) -> float | None:
        try:
            fields = self._stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) * 1000 / self._tick


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--mem0",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time mem0 OSS on the same texts and queries too (default: on)",
    )
    parser.add_argument(
        "--mem0-memories",
        type=int,
        default=None,
        help="memories mem0 loads: the first N of the service's (default: all of them)",
    )
    args = parser.parse_args()
    turns, questions = corpus()
    texts = [f"{turns[i % len(turns)]} (#{i // len(turns)})" for i in range(args.memories)]
    # The timed calls, the same for the service and for mem0.
    rng = random.Random(11)
    adds = [f"{rng.choice(texts)} (extra {i})" for i in range(args.calls)]
    warm_up = rng.sample(questions, WARM_UP)
    # Each question asked once (the search keeps the vectors of the questions it was asked:
    # a question asked again is cheaper, benchmarks/repeated_queries.py); the searches with
    # every factor ask others.
    drawn = rng.sample(questions, min(len(questions), 2 * args.calls))
    queries, full_queries = drawn[: args.calls], drawn[args.calls :] or drawn[: args.calls]

    with tempfile.TemporaryDirectory() as data_dir:
        port = free_port()
        server = serve(embedded_env(data_dir), port)
        try:
            cpu = ServerCpu(server.pid)
            base = f"http://127.0.0.1:{port}"
            report = run(base, texts, questions, adds, warm_up, (queries, full_queries), cpu)
        finally:
            server.terminate()
            server.wait(timeout=60)
    if args.mem0:
        # After the server has stopped, so that neither competes with the other for the cores.
        settings = Settings()
        loaded = texts[: args.mem0_memories] if args.mem0_memories is not None else texts
        timings = run_mem0(
            loaded,
            adds,
            warm_up,
            queries,
            settings=settings,
        )
        report.update(mem0_report(report, timings, settings, len(texts)))
    report["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(json.dumps(report, indent=2))


def mem0_report(
    ours: dict[str, object], mem0: Mem0Timings, settings: Settings, our_memories: int
) -> dict[str, object]:
    """mem0's section of the report, and our p95 over mem0's for each kind of call."""
    add = percentiles(mem0.add_ms, mem0.add_cpu_ms, "process_cpu_ms_per_call")
    search = percentiles(mem0.search_ms, mem0.search_cpu_ms, "process_cpu_ms_per_call")

    def ratio(key: str, theirs: dict[str, float | None]) -> float:
        section = ours[key]
        assert isinstance(section, dict)
        return round(section["p95_ms"] / theirs["p95_ms"], 2)

    threads = settings.embedder_threads or os.cpu_count() or 1
    return {
        "mem0": {
            "setup": (
                "mem0ai in-process: Memory, embedded Qdrant (qdrant-client local mode, on "
                "disk) and SQLite history in a temp dir, add(infer=False), search(filters="
                f"user_id, top_k=10); the server's embedder (EMBEDDER={settings.embedder}, "
                f"{threads} thread(s) for stored texts); similarity only "
                "(no spaCy, no fastembed: no BM25, no entity boost)"
            ),
            "memories_loaded": mem0.loaded,
            "memories_loaded_note": (
                "the same memories as the service"
                if mem0.loaded == our_memories
                else f"FEWER than the service's {our_memories}: the first {mem0.loaded}"
            ),
            "memories_in_scope": mem0.loaded + len(mem0.add_ms),
            "bulk_load": {
                "seconds": round(mem0.load_seconds, 1),
                "memories_per_second": round(mem0.loaded / mem0.load_seconds),
                "memories_per_add_call": MEM0_SESSION_TURNS,
            },
            "warm_up": {
                "searches": len(mem0.warm_ms),
                "first_ms": round(mem0.warm_ms[0], 2),
                "mean_ms": round(statistics.fmean(mem0.warm_ms), 2),
            },
            "add": add,
            "search": search,
            "searches_with_no_result": mem0.empty_searches,
            "files_written": mem0.files,
        },
        "ours_over_mem0_p95": {
            "add": ratio("memory.add", add),
            "search": ratio("memory.search", search),
            "search, all factors (ours) / search (mem0)": ratio(
                "memory.search, all factors", search
            ),
        },
    }


def run(
    base: str,
    texts: list[str],
    questions: list[str],
    adds: list[str],
    warm_up: list[str],
    queries: tuple[list[str], list[str]],
    cpu: ServerCpu,
) -> dict[str, object]:
    """``queries``: the plain searches' questions and those of the searches with every factor."""
    http = httpx.Client(timeout=120)
    deadline = time.monotonic() + 60
    while True:
        try:
            if http.get(f"{base}/health").status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("server did not start")
        time.sleep(0.2)

    def rpc(method: str, **params: object) -> dict[str, object]:
        body = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        reply = http.post(f"{base}/rpc", json=body).json()
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        result: dict[str, object] = reply["result"]
        return result

    scope = {"user_id": "bench"}
    started = time.perf_counter()
    for i in range(0, len(texts), 100):
        items = [
            {"content": t, "session_id": f"s{(i + j) // SESSION_TURNS}", **scope}
            for j, t in enumerate(texts[i : i + 100])
        ]
        rpc("memory.add_batch", items=items)
    load_seconds = time.perf_counter() - started
    # The load's vectors are embedded behind its replies; single adds are timed once that is
    # done (while it runs it takes every core: adds then took 2.5x as long).
    while rpc("memory.health")["indexing_backlog"]:
        time.sleep(0.1)
    indexed_seconds = time.perf_counter() - started
    task = {"task_id": "bench-task", **scope}
    rpc("memory.stage.start", task_id="bench-task", stage_type="execution")
    for i in range(ERRORS):
        rpc(
            "memory.error.record",
            task_id="bench-task",
            error_type="incorrect_action",
            description=f"tool call failed: {questions[i]}",
            severity=0.6,
        )

    kinds = ("add", "search", "full")
    latency: dict[str, list[float]] = {kind: [] for kind in kinds}
    used: dict[str, list[float]] = {kind: [] for kind in kinds}

    def timed(kind: str, method: str, **params: object) -> None:
        """One call, its latency and the server CPU time it took noted under ``kind``."""
        before, started = cpu.ms(), time.perf_counter()
        rpc(method, **params)
        latency[kind].append((time.perf_counter() - started) * 1000)
        after = cpu.ms()
        if before is not None and after is not None:
            used[kind].append(after - before)

    for content in adds:
        timed("add", "memory.add", content=content, **scope)
    # The adds' vectors are embedded behind their replies (below the serving priority, so
    # part of that work runs after the last add): searches are timed once it is done.
    while rpc("memory.health")["indexing_backlog"]:
        time.sleep(0.1)
    # The first search of a scope starts loading its lexical documents into memory (about a
    # second at 10k, on a thread of its own; FTS5 answers meanwhile): reported, not timed.
    warm: list[float] = []
    for query in warm_up:
        started = time.perf_counter()
        rpc("memory.search", query=query, limit=10, **scope)
        warm.append((time.perf_counter() - started) * 1000)
    plain, full = queries
    for query, other in zip(plain, full, strict=False):
        timed("search", "memory.search", query=query, limit=10, **scope)
        timed("full", "memory.search", query=other, limit=10, current_stage="execution", **task)
    return {
        "memories_in_scope": len(texts) + len(adds),
        "bulk_load": {
            "seconds": round(load_seconds, 1),
            "memories_per_second": round(len(texts) / load_seconds),
            "indexed_per_second": round(len(texts) / indexed_seconds),
        },
        "warm_up": {
            "searches": WARM_UP,
            "first_ms": round(warm[0], 2),
            "mean_ms": round(statistics.fmean(warm), 2),
        },
        "memory.add": percentiles(latency["add"], used["add"]),
        "memory.search": percentiles(latency["search"], used["search"]),
        "memory.search, all factors": percentiles(latency["full"], used["full"]),
        "calls_each": len(adds),
    }


if __name__ == "__main__":
    main()
