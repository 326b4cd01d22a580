"""The real server (``agentcore serve``) in a process of its own, for the tests that talk to it
over a socket: crash safety, the CLI, API keys, TLS, MCP and the installed wheel."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """``agentcore serve`` on the embedded default in ``data_dir``; ``env`` adds settings,
    ``command`` replaces ``python -m agentcore.cli`` (an installed wheel's ``agentcore``)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        env: dict[str, str] | None = None,
        command: Sequence[str] = (sys.executable, "-m", "agentcore.cli"),
        serve_args: Sequence[str] = (),
        tls: bool = False,
        cwd: Path | None = None,
        log: Path | None = None,
    ) -> None:
        self.port = free_port()
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.url = f"{self.base}/rpc"
        self.command = list(command)
        self.serve_args = list(serve_args)
        self.cwd = cwd
        self.log = log  # the server's stderr goes there when given
        self.env = {**os.environ, "AGENTCORE_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING"}
        for name in ("DATABASE_URL", "QDRANT_URL", "REDIS_URL", "AGENTCORE_API_KEYS_FILE"):
            self.env.pop(name, None)
        self.env.update(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.verify: bool | ssl.SSLContext = True

    def start(self, timeout: float = 60, *, until: str = "/health") -> None:
        """Start, and wait until ``until`` answers 200 (``/livez``: serving, stores or not)."""
        argv = [*self.command, "serve", "--port", str(self.port), *self.serve_args]
        stderr = None if self.log is None else self.log.open("ab")
        self.process = subprocess.Popen(argv, env=self.env, cwd=self.cwd, stderr=stderr)
        if stderr is not None:
            stderr.close()  # the child holds its own descriptor
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}")
            try:
                health = httpx.get(f"{self.base}{until}", timeout=1, verify=self.verify)
                if health.status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError(f"the server did not become healthy within {timeout:.0f} s")

    def kill(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def cli(self, *args: str, command: str = "memory") -> subprocess.CompletedProcess[str]:
        argv = [*self.command, command, *args, "--url", self.url]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=120)
