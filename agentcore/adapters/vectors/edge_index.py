"""HNSW builds of the embedded shard, made beside the process that serves it.

A search of a plain segment scores every point its filter keeps (~14 ms at 100,000 points).
The engine's ``optimize()`` builds HNSW segments but holds its process's GIL for the whole
build, so the process that serves the shard (the only writer) builds elsewhere: once the
points outside an indexed segment reach ``threshold``, it

1. flushes the live shard and copies its directory (``shard-<n>/`` beside it) on a thread:
   searches go on meanwhile, a write waits for the copy to end;
2. starts ``edge_builder`` on the copy (another process, lower priority) and keeps serving,
   appending every write it applies from then on to a journal (``shard-<n>.journal``);
3. once the builder exits 0, loads the built copy beside the live shard and replays the
   journal into it a slice at a time between calls;
4. when the journal is replayed, hands the built shard to ``switch``, which flushes it,
   names it in ``collection.json`` (the commit: one atomic rename), serves from it and drops
   the old directory.

A failed or killed builder costs the build only (retried after ``_RETRY_SECONDS``). A crash
anywhere leaves ``collection.json`` naming a complete shard: before the switch the old one,
which received every write; after it the new one, flushed with the whole journal. Directories
it does not name are removed at the next open, unless a builder still holds their lock
(``shard-<n>.building``). Upserts and deletes by id replay idempotently, and writes not yet
flushed stay owed in the database's outbox as always.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 20_000  # a plain scan of 20,000 points takes ~3 ms
SHARD_NAME = re.compile(r"shard(?:-(\d+))?")
_LEFTOVER = re.compile(r"(shard(?:-\d+)?)(?:\.journal|\.building)?")
_IDLE_SECONDS = 1.0  # an idle store counts its unindexed points (7 µs) after writes
_COPY_SECONDS = 0.05
_BUILD_SECONDS = 0.5
_REPLAY_SECONDS = 0.02  # journal replayed per step; then a waiting call is answered
_RETRY_SECONDS = 600.0

Load = Callable[[Path], qe.EdgeShard]
Apply = Callable[[qe.EdgeShard, str, Any], None]
Switch = Callable[[qe.EdgeShard, str], None]  # raises only before its commit


class Journal:
    """The writes applied to the live shard since its copy, in order, in a file (memory stays
    bounded however long the build takes). Not made durable: the live shard holds them."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._out: IO[bytes] = path.open("wb")
        self._in: IO[bytes] | None = None
        self.entries = 0
        self.replayed = 0

    def append(self, op: str, arg: Any) -> None:
        pickle.dump((op, arg), self._out, protocol=pickle.HIGHEST_PROTOCOL)
        self.entries += 1

    def replay(self, apply: Callable[[str, Any], None], seconds: float) -> bool:
        """Apply entries not yet replayed for up to ``seconds``; True once all are."""
        self._out.flush()
        if self._in is None:
            self._in = self._path.open("rb")
        deadline = time.monotonic() + seconds
        while self.replayed < self.entries and time.monotonic() < deadline:
            op, arg = pickle.load(self._in)
            apply(op, arg)
            self.replayed += 1
        return self.replayed == self.entries

    def discard(self) -> None:
        self._out.close()
        if self._in is not None:
            self._in.close()
        self._path.unlink(missing_ok=True)


@dataclass(eq=False)
class _Build:
    name: str
    path: Path
    lock: IO[bytes]  # held by this process and the builder while the build is theirs
    journal: Journal
    indexed_before: int
    started: float = field(default_factory=time.monotonic)
    copier: threading.Thread | None = None
    copy_error: BaseException | None = None
    builder: subprocess.Popen[bytes] | None = None
    shard: qe.EdgeShard | None = None


class IndexBuilds:
    """Builds for one shard directory, driven by its single caller through ``step``, with
    ``before_write``/``record`` around every write it applies (module doc). ``threshold`` 0
    never builds; ``load`` opens a shard directory, ``apply`` writes ``(op, arg)`` to one,
    ``switch`` serves from a built shard (given with its directory's name) from then on."""

    def __init__(
        self, data_dir: Path, threshold: int, load: Load, apply: Apply, switch: Switch
    ) -> None:
        self._dir = data_dir
        self._threshold = threshold if _can_lock() else 0
        self._load = load
        self._apply = apply
        self._switch = switch
        self._build: _Build | None = None
        self._writes = 1  # unindexed points are counted after writes (and once at first)
        self._retry_at = 0.0
        self._builds = 0
        self._failures = 0
        self._last_seconds: float | None = None

    def status(self) -> dict[str, Any]:
        build = self._build
        state = "idle"
        if build is not None:
            state = "copying" if build.copier else "building" if not build.shard else "catching up"
        return {
            "state": state,
            "threshold": self._threshold,
            "builds": self._builds,
            "failures": self._failures,
            "last_build_seconds": self._last_seconds,
            "builder_pid": build.builder.pid if build and build.builder else None,
        }

    def before_write(self) -> None:
        """A write must not change the files being copied: wait for the copy."""
        build = self._build
        if build is not None and build.copier is not None:
            build.copier.join()

    def record(self, op: str, arg: Any) -> None:
        """A write applied to the live shard: journaled while a build is under way."""
        self._writes += 1
        if self._build is not None:
            self._build.journal.append(op, arg)

    def step(self, live: qe.EdgeShard, live_name: str, dimension: int) -> float:
        """One bounded step of the build (the switch, once the built shard holds every
        write); returns the seconds until the next step is due."""
        try:
            return self._step(live, live_name, dimension)
        except Exception:  # a failed build must not stop the shard's service: logged
            logger.exception("index build of %s failed; the shard serves on unindexed", self._dir)
            self.abort()
            self._failures += 1
            self._retry_at = time.monotonic() + _RETRY_SECONDS
            return _IDLE_SECONDS

    def abort(self) -> None:
        """Stop a build under way (the builder killed) and remove what it made."""
        build, self._build = self._build, None
        if build is None:
            return
        if build.builder is not None and build.builder.poll() is None:
            build.builder.kill()
            build.builder.wait()
        if build.copier is not None:
            build.copier.join()
        if build.shard is not None:
            build.shard.close()
        build.journal.discard()
        _remove(build.path)
        build.lock.close()
        (self._dir / f"{build.name}.building").unlink(missing_ok=True)

    def remove_leftovers(self, active: str) -> None:
        """Remove shard directories, journals and locks that are not ``active``'s, not this
        process's build's and not held by a builder still running."""
        mine = self._build.name if self._build else None
        for entry in list(self._dir.iterdir()):
            match = _LEFTOVER.fullmatch(entry.name)
            if match is None or match[1] in (active, mine):
                continue
            if _held(self._dir / f"{match[1]}.building"):
                continue
            logger.info("removing %s, left by an earlier shard or build", entry)
            _remove(entry)

    def _step(self, live: qe.EdgeShard, live_name: str, dimension: int) -> float:
        build = self._build
        if build is None:
            if self._due(live):
                self._start(live, live_name)
                return _COPY_SECONDS
            return _IDLE_SECONDS
        if build.copier is not None:
            if build.copier.is_alive():
                return _COPY_SECONDS
            self._copied(build, dimension)
            return _BUILD_SECONDS
        if build.shard is None:
            assert build.builder is not None
            code = build.builder.poll()
            if code is None:
                return _BUILD_SECONDS
            if code != 0:
                raise RuntimeError(f"the index builder exited with {code}")
            build.shard = self._load(build.path)
            indexed = build.shard.info().indexed_vectors_count
            if indexed <= build.indexed_before:
                raise RuntimeError(f"the build indexed nothing new ({indexed} points indexed)")
        shard = build.shard
        if not build.journal.replay(lambda op, arg: self._apply(shard, op, arg), _REPLAY_SECONDS):
            return 0.0
        self._switch(shard, build.name)
        self._finish(build)
        return _IDLE_SECONDS

    def _due(self, live: qe.EdgeShard) -> bool:
        if self._threshold <= 0 or not self._writes or time.monotonic() < self._retry_at:
            return False
        self._writes = 0
        info = live.info()
        return info.points_count - info.indexed_vectors_count >= self._threshold

    def _start(self, live: qe.EdgeShard, live_name: str) -> None:
        self.remove_leftovers(live_name)
        name = f"shard-{self._next_number()}"
        lock = (self._dir / f"{name}.building").open("wb")
        _lock(lock)
        build = _Build(
            name,
            self._dir / name,
            lock,
            Journal(self._dir / f"{name}.journal"),
            live.info().indexed_vectors_count,
        )
        self._build = build  # from here on, ``abort`` removes what the build made
        live.flush()
        build.copier = threading.Thread(
            target=self._copy, args=(build, self._dir / live_name), name="qdrant-edge-copy"
        )
        build.copier.start()
        logger.info("building the HNSW index of %s in %s", self._dir / live_name, build.path)

    @staticmethod
    def _copy(build: _Build, source: Path) -> None:
        try:
            shutil.copytree(source, build.path)
        except BaseException as exc:  # re-raised by the next step, on the serving thread
            build.copy_error = exc

    def _copied(self, build: _Build, dimension: int) -> None:
        assert build.copier is not None
        build.copier.join()
        build.copier = None
        if build.copy_error is not None:
            raise build.copy_error
        level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
        build.builder = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentcore.adapters.vectors.edge_builder",
                str(build.path),
                f"--dimension={dimension}",
                f"--parent={os.getpid()}",
                f"--log-level={level}",
            ],
            stdin=subprocess.DEVNULL,
            pass_fds=(build.lock.fileno(),),  # the lock is the builder's too, while it lives
        )

    def _finish(self, build: _Build) -> None:
        self._build = None
        build.journal.discard()
        build.lock.close()
        (self._dir / f"{build.name}.building").unlink(missing_ok=True)
        self._builds += 1
        self._last_seconds = round(time.monotonic() - build.started, 1)
        logger.info(
            "HNSW index of %s built in %.1f s (%d writes replayed)",
            self._dir,
            self._last_seconds,
            build.journal.entries,
        )

    def _next_number(self) -> int:
        numbers = [0]
        for entry in self._dir.iterdir():
            match = _LEFTOVER.fullmatch(entry.name)
            if match is not None and (found := SHARD_NAME.fullmatch(match[1])) and found[1]:
                numbers.append(int(found[1]))
        return max(numbers) + 1


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _can_lock() -> bool:
    try:
        import fcntl  # noqa: F401
    except ImportError:  # not POSIX: no builds (a build's lock is what keeps its files safe)
        return False
    return True


def _lock(handle: IO[bytes]) -> None:
    import fcntl

    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _held(path: Path) -> bool:
    """True if a process holds the lock file at ``path`` (closing the file drops ours)."""
    if not path.exists():
        return False
    with path.open("ab") as handle:
        try:
            _lock(handle)
        except BlockingIOError:
            return True
    return False
