"""The qdrant-edge shard in a process of its own.

A search of the engine holds the GIL for its whole length (``edge_shard``); in a child process
it holds the child's, and the serving process goes on with its event loop, its SQLite reads
and its embeddings meanwhile. The child is started (``spawn``) when the store is first used,
answers one call at a time over a pipe, and stops when told to or when the pipe closes (its
parent gone): it flushes and closes the shard first. A child that dies fails the call under
way with a retryable ``PROVIDER_ERROR`` (the vector writes stay owed in the outbox) and is
started again, and the shard opened again, on the next call.

Between calls, and at least every few seconds under a stream of them, the child runs the
steps of an HNSW build (``ShardStore.maintain``: ``edge_index``), whose slow part runs in a
third process.

Only one process may hold a shard's files: the child holds an exclusive lock on the data
directory (``shard.lock``) while the shard is open, and a child of a restarted service waits
for the previous one to let go (past the wait it logs one line and stops; the call fails as
above). The CLI keeps a second service off the whole data directory before this
(``adapters.data_dir``).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from agentcore.adapters.vectors.edge_shard import ShardStore
from agentcore.domain.errors import AgentCoreError, ProviderError

logger = logging.getLogger(__name__)

_LOCK_FILE = "shard.lock"
_LOCK_WAIT_SECONDS = 30.0
_CALLS = frozenset(
    {
        "open",
        "reset",
        "upsert",
        "delete",
        "search",
        "count",
        "vectors",
        "flush",
        "close",
        "index_status",
    }
)


class _DirectoryHeld(Exception):
    """Another process holds the shard's directory past the wait."""


class EngineError(Exception):
    """The engine failed in the child (it raises bare ``Exception``s); the message is its."""


class ShardProcess:
    """Calls of ``ShardStore`` run in a child process. One caller at a time (the store's own
    thread): each call is a request and its answer over the pipe."""

    def __init__(
        self,
        data_dir: Path,
        max_search_threads: int | None,
        log_level: str,
        index_threshold: int,
    ) -> None:
        self._args = (str(data_dir), max_search_threads, log_level, index_threshold)
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._opened: tuple[str, tuple[Any, ...]] | None = None  # redone after a restart

    def call(self, op: str, *args: Any) -> Any:
        if op not in _CALLS:
            raise ValueError(f"not a call of the shard: {op!r}")
        if self._conn is None:
            if op == "close":
                return None
            self._start()
        try:
            ok, value = self._ask(op, args)
        except (EOFError, OSError) as exc:
            self._stop()
            logger.warning("the vector store's process stopped during %s; it restarts", op)
            raise ProviderError(
                "the embedded vector store's process stopped; retry", operation=op
            ) from exc
        if op == "close":
            self._stop()
        elif op in ("open", "reset") and ok:
            self._opened = ("open", args)  # a reset leaves the shard opened with these
        if ok:
            return value
        raise _rebuilt(value)

    def _ask(self, op: str, args: tuple[Any, ...]) -> tuple[bool, Any]:
        assert self._conn is not None
        self._conn.send((op, args))
        answer: tuple[bool, Any] = self._conn.recv()
        return answer

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(
            target=serve_shard, args=(theirs, *self._args), name="qdrant-edge", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._conn = process, ours
        if self._opened is not None:  # a restart: the shard as it was opened
            ok, value = self._ask(*self._opened)
            if not ok:
                self._stop()
                raise _rebuilt(value)

    def _stop(self) -> None:
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            conn.close()
        if process is not None:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()


def serve_shard(
    conn: Connection,
    data_dir: str,
    max_search_threads: int | None,
    log_level: str,
    index_threshold: int,
) -> None:
    """The child: answer calls until told to close or until the parent is gone, with the
    steps of an index build in between when they are due."""
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        with _directory_lock(Path(data_dir)):
            _serve(conn, ShardStore(data_dir, max_search_threads, index_threshold))
    except _DirectoryHeld as held:  # the parent sees the pipe close: a retryable error
        logger.error("%s", held)


def _serve(conn: Connection, store: ShardStore) -> None:
    try:
        due = 0.0
        while True:
            if time.monotonic() >= due:
                due = time.monotonic() + store.maintain()
            if not conn.poll(max(0.0, due - time.monotonic())):
                continue
            try:
                op, args = conn.recv()
            except EOFError:
                return
            try:
                conn.send((True, getattr(store, op)(*args)))
            except Exception as exc:  # the caller gets it (rebuilt: ``_rebuilt``)
                conn.send((False, _portable(exc)))
            if op == "close":
                return
    finally:
        store.close()


def _portable(exc: Exception) -> tuple[str, Any, str, dict[str, Any]]:
    """An exception as plain data: errors of the hierarchy keep their class and details."""
    if isinstance(exc, AgentCoreError):
        return "agentcore", type(exc), exc.message, exc.details
    if isinstance(exc, TypeError | ValueError):
        return "argument", type(exc).__name__, str(exc), {}
    return "engine", type(exc).__name__, str(exc), {}


def _rebuilt(portable: tuple[str, Any, str, dict[str, Any]]) -> Exception:
    kind, cls, message, details = portable
    if kind == "agentcore":
        error: Exception = cls(message, **details)
        return error
    if kind == "argument":
        return TypeError(message) if cls == "TypeError" else ValueError(message)
    return EngineError(message)


@contextlib.contextmanager
def _directory_lock(data_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``data_dir`` (waiting up to ``_LOCK_WAIT_SECONDS`` for a
    previous holder), where the platform has ``fcntl``."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the engine's own checks only
        yield
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / _LOCK_FILE).open("a") as handle:
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise _DirectoryHeld(
                        f"the embedded vector store {data_dir} is still held by another "
                        f"process after {_LOCK_WAIT_SECONDS:g} s; one process at a time may "
                        "serve a data directory"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
