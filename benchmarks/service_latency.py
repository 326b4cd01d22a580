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

    .venv/bin/python benchmarks/service_latency.py [--memories 10000] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

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


def percentiles(samples: list[float], cpu: list[float]) -> dict[str, float | None]:
    """Latency percentiles, and the server's mean CPU time per call (None off Linux)."""
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(pick(0.95), 2),
        "p99_ms": round(pick(0.99), 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
        "server_cpu_ms_per_call": round(statistics.fmean(cpu), 2) if cpu else None,
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
    args = parser.parse_args()
    turns, questions = corpus()
    texts = [f"{turns[i % len(turns)]} (#{i // len(turns)})" for i in range(args.memories)]

    with tempfile.TemporaryDirectory() as data_dir, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        env = {**os.environ, "AGENTCORE_DATA_DIR": data_dir, "LOG_LEVEL": "WARNING"}
        for name in ("DATABASE_URL", "QDRANT_URL", "REDIS_URL"):
            env.pop(name, None)
        server = subprocess.Popen(
            [sys.executable, "-m", "agentcore.cli", "serve", "--port", str(port)], env=env
        )
        try:
            cpu = ServerCpu(server.pid)
            report = run(f"http://127.0.0.1:{port}", texts, questions, args.calls, cpu)
        finally:
            server.terminate()
            server.wait(timeout=60)
    report["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(json.dumps(report, indent=2))


def run(
    base: str, texts: list[str], questions: list[str], calls: int, cpu: ServerCpu
) -> dict[str, object]:
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

    rng = random.Random(11)
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

    for i in range(calls):
        timed("add", "memory.add", content=f"{rng.choice(texts)} (extra {i})", **scope)
    # The first search of a scope starts loading its lexical documents into memory (about a
    # second at 10k, on a thread of its own; FTS5 answers meanwhile): reported, not timed.
    warm: list[float] = []
    for query in rng.sample(questions, WARM_UP):
        started = time.perf_counter()
        rpc("memory.search", query=query, limit=10, **scope)
        warm.append((time.perf_counter() - started) * 1000)
    for _ in range(calls):
        query = rng.choice(questions)
        timed("search", "memory.search", query=query, limit=10, **scope)
        timed("full", "memory.search", query=query, limit=10, current_stage="execution", **task)
    return {
        "memories_in_scope": len(texts) + calls,
        "bulk_load": {
            "seconds": round(load_seconds, 1),
            "memories_per_second": round(len(texts) / load_seconds),
        },
        "warm_up": {
            "searches": WARM_UP,
            "first_ms": round(warm[0], 2),
            "mean_ms": round(statistics.fmean(warm), 2),
        },
        "memory.add": percentiles(latency["add"], used["add"]),
        "memory.search": percentiles(latency["search"], used["search"]),
        "memory.search, all factors": percentiles(latency["full"], used["full"]),
        "calls_each": calls,
    }


if __name__ == "__main__":
    main()
