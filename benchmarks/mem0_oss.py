"""mem0 OSS (mem0ai) timed in-process, the way a mem0 user would run it on this machine.

``mem0.Memory`` with its default embedded Qdrant on disk (qdrant-client's local mode) and its
SQLite history database, both in a temporary directory; no LLM (``add(..., infer=False)``);
mem0's embedder replaced by ours (``bootstrap.build_embedder`` of the service's settings: the
model the service embeds with, on the same threads and with the same weights), so both pay the
same embedding cost.
mem0's hybrid search needs spaCy (lemmas, entities) and fastembed (BM25), which download models
at run time: without them (as here) it logs that and searches by similarity only.

mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR`` when first imported, so it is imported only in
``run_mem0``, after they are set (telemetry off; ``MEM0_DIR`` is the temporary directory, which
gets mem0's ``config.json``). Used by ``service_latency.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcore.bootstrap import build_embedder
from agentcore.config import Settings
from agentcore.services.ports import Embedder

USER_ID = "bench"
SESSION_TURNS = 20  # texts loaded per mem0 add call (one message each)


@dataclass
class Mem0Timings:
    """Milliseconds per call, and this process's CPU time per call (mem0 runs in it)."""

    loaded: int
    load_seconds: float
    add_ms: list[float] = field(default_factory=list)
    add_cpu_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    search_cpu_ms: list[float] = field(default_factory=list)
    empty_searches: int = 0
    files: list[str] = field(default_factory=list)  # what mem0 wrote in its directory


class SyncEmbedder:
    """Our async embedder behind mem0's synchronous embedder interface (``embed`` and
    ``embed_batch``), driven on a private event loop from the calling thread. Queries (mem0
    passes ``memory_action="search"``) go through ``embed_query``, as the service's do."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._loop = asyncio.new_event_loop()

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        if memory_action == "search":
            query: list[float] = self._loop.run_until_complete(
                self._embedder.embed_query(text)
            ).tolist()
            return query
        row: list[float] = self._loop.run_until_complete(self._embedder.embed([text]))[0].tolist()
        return row

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        if not texts:
            return []
        rows: list[list[float]] = self._loop.run_until_complete(
            self._embedder.embed(list(texts))
        ).tolist()
        return rows

    def close(self) -> None:
        self._loop.run_until_complete(self._embedder.close())
        self._loop.close()


def run_mem0(
    texts: Sequence[str],
    adds: Sequence[str],
    warm_up: Sequence[str],
    queries: Sequence[str],
    *,
    settings: Settings,
) -> Mem0Timings:
    """Load ``texts`` into one user with mem0's ``add`` (a session of ``SESSION_TURNS``
    messages a call, untimed), then time one ``add`` per text of ``adds`` and one ``search``
    per query of ``queries`` (after the untimed ``warm_up`` searches), one call at a time."""
    with tempfile.TemporaryDirectory(prefix="mem0-bench-") as tmp:
        directory = Path(tmp)
        memory, embedder = _open_memory(directory, settings)
        try:
            return _measure(memory, directory, texts, adds, warm_up, queries)
        finally:
            memory.close()
            memory.vector_store.client.close()
            embedder.close()


def _open_memory(directory: Path, settings: Settings) -> tuple[Any, SyncEmbedder]:
    if "mem0" in sys.modules:
        raise RuntimeError("mem0 was imported before its telemetry could be turned off")
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = str(directory)
    from mem0 import Memory
    from mem0.configs.base import MemoryConfig
    from mem0.memory import telemetry

    if telemetry.MEM0_TELEMETRY:
        raise RuntimeError("mem0's telemetry is on")
    dimension = 384
    # mem0 builds its OpenAI LLM and embedder clients at start, which want a key even though
    # neither is called: no LLM with infer=False, and the embedder is replaced below.
    config = MemoryConfig(
        vector_store={
            "provider": "qdrant",
            "config": {
                "collection_name": "mem0",
                "embedding_model_dims": dimension,
                "path": str(directory / "qdrant"),
            },
        },
        llm={"provider": "openai", "config": {"api_key": "unused"}},
        embedder={
            "provider": "openai",
            "config": {"api_key": "unused", "embedding_dims": dimension},
        },
        history_db_path=str(directory / "history.db"),
    )
    memory = Memory(config)
    embedder = SyncEmbedder(build_embedder(settings))
    memory.embedding_model = embedder
    return memory, embedder


def _measure(
    memory: Any,
    directory: Path,
    texts: Sequence[str],
    adds: Sequence[str],
    warm_up: Sequence[str],
    queries: Sequence[str],
) -> Mem0Timings:
    started = time.perf_counter()
    loaded = 0
    for i in range(0, len(texts), SESSION_TURNS):
        messages = [{"role": "user", "content": t} for t in texts[i : i + SESSION_TURNS]]
        loaded += len(memory.add(messages, user_id=USER_ID, infer=False)["results"])
    result = Mem0Timings(loaded=loaded, load_seconds=time.perf_counter() - started)
    if loaded != len(texts):
        raise RuntimeError(f"mem0 stored {loaded} of {len(texts)} memories")

    for text in adds:
        cpu, started = time.process_time(), time.perf_counter()
        reply = memory.add(text, user_id=USER_ID, infer=False)
        result.add_ms.append((time.perf_counter() - started) * 1000)
        result.add_cpu_ms.append((time.process_time() - cpu) * 1000)
        if len(reply["results"]) != 1:
            raise RuntimeError(f"mem0 add stored {reply['results']}")
    scope = {"user_id": USER_ID}
    for query in warm_up:
        started = time.perf_counter()
        memory.search(query, filters=scope, top_k=10)
        result.warm_ms.append((time.perf_counter() - started) * 1000)
    for query in queries:
        cpu, started = time.process_time(), time.perf_counter()
        hits = memory.search(query, filters=scope, top_k=10)["results"]
        result.search_ms.append((time.perf_counter() - started) * 1000)
        result.search_cpu_ms.append((time.process_time() - cpu) * 1000)
        result.empty_searches += not hits
    result.files = sorted(
        str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()
    )
    return result
