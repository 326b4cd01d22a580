"""A real Celery worker (``agentcore worker``) in a process of its own, for the tests that run
jobs the way production does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from agentcore.adapters.jobs.presence import WORKERS_KEY

START_SECONDS = 180  # imports and the container, on a loaded 2-core machine


@contextmanager
def celery_worker(
    data_dir: Path, database_url: str, redis_url: str, **extra_env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on ``redis_url`` (broker and results) and ``database_url``, yielded once its
    heartbeat says it consumes jobs (as a deployment waits for it); stopped with SIGTERM (or
    found dead, when a test killed it) on exit."""
    env = {
        **os.environ,
        "AGENTCORE_DATA_DIR": str(data_dir),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        **extra_env,
    }
    env.pop("QDRANT_URL", None)
    worker = subprocess.Popen(
        [sys.executable, "-m", "agentcore.cli", "worker", "--loglevel", "WARNING"], env=env
    )
    try:
        _until_alive(worker, redis_url)
        yield worker
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)


def _until_alive(worker: subprocess.Popen[bytes], redis_url: str) -> None:
    name = f"{socket.gethostname()}:{worker.pid}"
    client = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + START_SECONDS
    try:
        while client.zscore(WORKERS_KEY, name) is None:
            if worker.poll() is not None:
                raise AssertionError(f"the worker exited with {worker.returncode}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no heartbeat from the worker in {START_SECONDS} s")
            time.sleep(0.1)
    finally:
        client.close()
