"""`agentcore serve` in a process of its own, for the benchmarks that time it over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def embedded_env(data_dir: str) -> dict[str, str]:
    """The environment of the embedded default in ``data_dir`` (no server store configured)."""
    env = {**os.environ, "AGENTCORE_DATA_DIR": data_dir, "LOG_LEVEL": "WARNING"}
    for name in ("DATABASE_URL", "QDRANT_URL", "REDIS_URL"):
        env.pop(name, None)
    return env


def serve(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentcore.cli", "serve", "--port", str(port)], env=env
    )
