"""Who owns an embedded data directory: one process at a time.

The embedded stores (the SQLite file, the qdrant-edge shard, mem0's local files) belong to the
one process that serves them. That process (``agentcore serve``, ``agentcore mcp``,
``agentcore reembed``) takes an exclusive ``flock`` on ``agentcore.lock`` in the directory
before anything else opens it, and writes there its pid, its command and, for a service, its
address. The lock lasts as long as the open file: the kernel lets go of it when the process
ends, however it ends (kill -9 included), so a file left behind never blocks the next owner.
A second process finds the lock taken and stops at once: ``own_data_dir`` raises a
``ConfigurationError`` whose one-line message names the directory, the owner's pid and the
ways out.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from agentcore.domain.errors import ConfigurationError

LOCK_FILE = "agentcore.lock"
_OWNER_WRITE_WAIT = 1.0  # seconds a second process waits to read what a new owner writes


class DataDirLock:
    """The held lock: ``release()`` (or leaving ``with``) lets the directory go."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.ftruncate(fd, 0)  # the next owner's readers never see this process's pid
            os.close(fd)  # closing the last descriptor drops the flock

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def own_data_dir(data_dir: Path, command: str, url: str | None = None) -> DataDirLock:
    """Make ``data_dir`` if needed and own it, or raise ``ConfigurationError`` naming the
    process that does. ``command`` and ``url`` say what this process serves, for the message
    another process would show."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the engines' own checks only
        return DataDirLock(None)
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _owner(fd)
        os.close(fd)
        raise ConfigurationError(_in_use(data_dir, owner)) from None
    except BaseException:
        os.close(fd)
        raise
    record = {"pid": os.getpid(), "command": command, "url": url}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
    return DataDirLock(fd)


def _owner(fd: int) -> dict[str, Any]:
    """What the owner wrote; it writes right after taking the lock, so wait a moment for it."""
    deadline = time.monotonic() + _OWNER_WRITE_WAIT
    while True:
        try:
            record = json.loads(os.pread(fd, 4096, 0))
        except ValueError:  # empty or half written
            record = None
        if isinstance(record, dict) or time.monotonic() > deadline:
            return record if isinstance(record, dict) else {}
        time.sleep(0.05)


def _in_use(data_dir: Path, owner: dict[str, Any]) -> str:
    pid, command, url = owner.get("pid"), owner.get("command"), owner.get("url")
    who = f"process {pid}" if isinstance(pid, int) else "another process"
    if isinstance(command, str):
        who += f" (agentcore {command}{f' at {url}' if isinstance(url, str) else ''})"
    service = url if isinstance(url, str) else "<its URL>"
    return (
        f"the data directory {data_dir.resolve()} is in use by {who}: stop that process, "
        f"or use the running service instead (`agentcore mcp --url {service}`), or set "
        "AGENTCORE_DATA_DIR to another directory"
    )
