"""`agentcore serve` in a process of its own, for the benchmarks that time it over HTTP."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


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


def production_env(data_dir: str, name: str | None = None) -> tuple[dict[str, str], str]:
    """A fresh Postgres database (or the one named, kept from an earlier run), migrated; Redis.
    Returns the env and the database's name (``drop_database`` when done)."""
    import psycopg

    if name is None:
        name = f"agentcore_bench_{secrets.token_hex(4)}"
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    env = {
        **os.environ,
        "AGENTCORE_DATA_DIR": data_dir,
        "DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}",
        "REDIS_URL": "redis://127.0.0.1:6379/12",
        "LOG_LEVEL": "WARNING",
    }
    migrate = [sys.executable, "-m", "agentcore.cli", "migrate"]
    subprocess.run(migrate, env=env, check=True, stdout=subprocess.DEVNULL)
    return env, name


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def wait_ready(base: str, seconds: float = 120) -> None:
    """Until ``base``/readyz answers 200 (the stores reachable, the schema at head)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{base} was not ready within {seconds:.0f} s")


@contextmanager
def running(mode: str, worker: bool = False) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """``agentcore serve`` in a fresh data directory, on the embedded default or (``mode``
    "production") a fresh PostgreSQL database and Redis, with ``worker`` a Celery worker
    (``agentcore worker``) beside it: the server's port and process once it is ready;
    stopped, and the database dropped, afterwards."""
    with tempfile.TemporaryDirectory() as data_dir:
        database = None
        if mode == "production":
            env, database = production_env(data_dir)
        else:
            env = embedded_env(data_dir)
        port = free_port()
        server = serve(env, port)
        jobs = None
        if worker:
            command = [sys.executable, "-m", "agentcore.cli", "worker", "--loglevel", "WARNING"]
            jobs = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        try:
            wait_ready(f"http://127.0.0.1:{port}")
            yield port, server
        finally:
            for process in (server, jobs):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=60)
            if database is not None:
                drop_database(database)
