"""A real Celery worker (``agentcore worker``) in a process of its own, for the tests that run
jobs the way production does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def celery_worker(
    data_dir: Path, database_url: str, redis_url: str, **extra_env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on ``redis_url`` (broker and results) and ``database_url``; stopped with
    SIGTERM (or found dead, when a test killed it) on exit."""
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
        yield worker
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
