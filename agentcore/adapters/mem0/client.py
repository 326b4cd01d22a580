"""mem0ai configured from our settings: telemetry off, its files under our data directory,
our embedder, and Qdrant (a server, or qdrant-client's local mode in the data directory).

mem0 reads ``MEM0_TELEMETRY`` and ``MEM0_DIR`` once, when it is first imported, and writes a
``config.json`` into ``MEM0_DIR`` at import. So mem0 is imported here only, lazily, right after
those two variables are set: the first ``Mem0Client`` of a process fixes ``MEM0_DIR`` (every
other mem0 file path is passed explicitly, so later clients with other directories still keep
their data in their own directory).

mem0's API is synchronous. Its objects are built here and used by the adapters from one worker
thread each; ``EmbedderBridge`` hands mem0's embedding calls back to the event loop that owns
our (asynchronous) embedder.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import portalocker
from qdrant_client import QdrantClient
from qdrant_client.local.qdrant_local import QdrantLocal

from agentcore.domain.errors import AgentCoreError, ConfigurationError, EmbeddingFailed
from agentcore.services.ports import Embedder, Vectors

logger = logging.getLogger(__name__)

_import_lock = threading.Lock()
# An API key is required to build mem0's OpenAI embedder, which is replaced by ours at once.
_UNUSED_KEY = "unused"


def _import_mem0(mem0_dir: Path) -> None:
    """Import mem0 with its telemetry off and ``MEM0_DIR`` set (see the module docstring)."""
    with _import_lock:
        if "mem0" not in sys.modules:
            # mem0 reads these at import time only; there is no other way to turn its
            # telemetry (PostHog) off or keep its config.json out of the home directory.
            os.environ["MEM0_TELEMETRY"] = "False"  # noqa: TID251
            os.environ["MEM0_DIR"] = str(mem0_dir)  # noqa: TID251
        telemetry = importlib.import_module("mem0.memory.telemetry")
        importlib.import_module("mem0.memory.main")
    if telemetry.MEM0_TELEMETRY:
        raise ConfigurationError(
            "mem0 was imported with its telemetry on before agentcore configured it; "
            "import it through agentcore.adapters.mem0 only"
        )


@dataclass(frozen=True, slots=True)
class Mem0LLMOptions:
    """The OpenAI-compatible chat API mem0 extracts facts with (``MEM0_LLM_MODEL``)."""

    model: str
    api_key: str
    base_url: str | None = None  # None: https://api.openai.com/v1
    timeout: float = 30.0
    max_retries: int = 2


class EmbedderBridge:
    """Our ``Embedder`` as a mem0 embedder (mem0 calls ``embed`` and ``embed_batch``).

    mem0 is synchronous and runs on a worker thread; each call is scheduled on ``loop`` (the
    event loop the embedder belongs to) and waited for. Calling it on that loop's own thread
    would deadlock, so that raises ``RuntimeError``. ``failures`` counts failed calls: mem0
    skips a fact whose embedding failed, so the caller checks it to drop nothing silently.
    """

    def __init__(self, embedder: Embedder, timeout: float = 60.0) -> None:
        self._embedder = embedder
        self._timeout = timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self.failures = 0

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        row: list[float] = self._run([text])[0].tolist()
        return row

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        if not texts:
            return []
        rows: list[list[float]] = self._run(list(texts)).tolist()
        return rows

    def _run(self, texts: list[str]) -> Vectors:
        loop = self.loop
        if loop is None or loop.is_closed():
            raise RuntimeError("the embedder bridge has no running event loop")
        if _running_loop() is loop:
            raise RuntimeError("mem0 must run on a worker thread, not on the event loop")
        future = asyncio.run_coroutine_threadsafe(self._embedder.embed(texts), loop)
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self.failures += 1
            raise EmbeddingFailed("embedding for mem0 timed out") from None
        except AgentCoreError:
            self.failures += 1
            raise


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Mem0Client:
    """Builds mem0 objects from explicit settings; owns the Qdrant client they share.

    ``data_dir`` is our data directory: mem0's files go to ``data_dir/mem0`` (``config.json``,
    ``history.db``, and ``qdrant/`` in local mode). ``qdrant_url`` selects a Qdrant server
    (``qdrant_api_key``, ``qdrant_timeout`` seconds); without it, qdrant-client's local mode
    stores the vectors under ``data_dir/mem0/qdrant``, which one process at a time may open.
    Methods that build or close are blocking: call them at start-up or from a worker thread.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_timeout: int = 10,
    ) -> None:
        self._dir = Path(data_dir) / "mem0"
        self._qdrant_url = qdrant_url
        self._qdrant_api_key = qdrant_api_key
        self._qdrant_timeout = qdrant_timeout
        self._qdrant: QdrantClient | None = None
        self._closers: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._dir.mkdir(parents=True, exist_ok=True)
        _import_mem0(self._dir)

    @property
    def directory(self) -> Path:
        return self._dir

    @property
    def history_db_path(self) -> Path:
        return self._dir / "history.db"

    def qdrant(self) -> QdrantClient:
        """The shared Qdrant client, opened on first use."""
        with self._lock:
            if self._qdrant is None:
                self._qdrant = self._open_qdrant()
            return self._qdrant

    def vector_layer(self, collection: str, dimension: int) -> Any:
        """mem0's Qdrant vector store over ``collection`` (created for ``dimension`` if absent,
        with mem0's layout: one unnamed cosine vector plus a ``bm25`` sparse slot)."""
        from mem0.vector_stores.qdrant import Qdrant

        client = self.qdrant()
        with _no_local_index_warning():
            return Qdrant(collection_name=collection, embedding_model_dims=dimension, client=client)

    def extraction_memory(
        self,
        bridge: EmbedderBridge,
        llm: Mem0LLMOptions,
        *,
        instructions: str | None = None,
        on_response: Callable[[Any, Any, Any], None] | None = None,
    ) -> Any:
        """A mem0 ``Memory`` for fact extraction (``add(..., infer=True)``).

        Its vector store is a private in-memory Qdrant collection (scratch space: the facts
        are kept by our own store), its history database ``history_db_path``, its embedder
        ``bridge`` and its LLM ``llm``. ``instructions`` become mem0's custom instructions;
        ``on_response(llm, response, params)`` sees every chat completion (token usage).
        """
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig

        scratch = QdrantClient(location=":memory:")
        # mem0 builds its client without a timeout (600 s) and may send it to OpenRouter when
        # OPENROUTER_API_KEY is set; ours goes where the settings say, with their timeout.
        chat = openai.OpenAI(
            api_key=llm.api_key,
            base_url=llm.base_url or "https://api.openai.com/v1",
            timeout=llm.timeout,
            max_retries=llm.max_retries,
        )
        llm_config: dict[str, Any] = {
            "model": llm.model,
            "api_key": llm.api_key,
            "openai_base_url": llm.base_url,
            "temperature": 0.0,
            "response_callback": on_response,
        }
        config = MemoryConfig(
            vector_store={
                "provider": "qdrant",
                "config": {
                    "collection_name": "agentcore_extraction",
                    "embedding_model_dims": bridge.dimension,
                    "client": scratch,
                },
            },
            llm={"provider": "openai", "config": llm_config},
            embedder={
                "provider": "openai",
                "config": {"api_key": _UNUSED_KEY, "embedding_dims": bridge.dimension},
            },
            history_db_path=str(self.history_db_path),
            custom_instructions=instructions,
        )
        with _no_local_index_warning():
            memory = Memory(config)
        memory.embedding_model = bridge
        memory.llm.client = chat
        with self._lock:
            self._closers += [memory.close, scratch.close, chat.close]
        return memory

    def close(self) -> None:
        """Close the Qdrant client and every ``Memory`` built here (idempotent)."""
        with self._lock:
            closers, self._closers = self._closers, []
            qdrant, self._qdrant = self._qdrant, None
        for close in closers:
            close()
        if qdrant is not None:
            qdrant.close()

    def _open_qdrant(self) -> QdrantClient:
        if self._qdrant_url is not None:
            return QdrantClient(
                url=self._qdrant_url, api_key=self._qdrant_api_key, timeout=self._qdrant_timeout
            )
        path = self._dir / "qdrant"
        _check_unlocked(path)
        try:
            # The adapters serialize their calls on one worker thread, but closing may come
            # from another thread; SQLite's same-thread check would refuse that.
            return QdrantClient(path=str(path), force_disable_check_same_thread=True)
        except RuntimeError as exc:  # lost the race for the lock to another client
            raise _in_use(path) from exc


@contextmanager
def _no_local_index_warning() -> Iterator[None]:
    """mem0 asks a Qdrant client it was handed for payload indexes; local mode ignores them
    and warns (a server builds them)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
        yield


def _check_unlocked(path: Path) -> None:
    """Fail early when another client holds the directory: qdrant-client would first load
    every point, then raise and leak its lock file handle."""
    lock_file = path / ".lock"
    if not lock_file.exists():
        return
    with lock_file.open("r+") as handle:
        try:
            portalocker.lock(
                handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException:
            raise _in_use(path) from None
        portalocker.unlock(handle)


def _in_use(path: Path) -> ConfigurationError:
    return ConfigurationError(
        f"mem0's embedded Qdrant at {path} is open in another process (or client); it serves "
        "one process at a time: set QDRANT_URL to share a Qdrant server"
    )


def is_local_qdrant(client: QdrantClient) -> bool:
    """qdrant-client's local mode (it ignores payload indexes)."""
    return isinstance(client._client, QdrantLocal)
