"""``agentcore serve --workers N``: several serving processes on one port, for production
stores (Postgres, Redis, a Qdrant server), and a clear refusal where a store lives in the
process (the embedded default)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import REDIS_TEST_DB, empty_redis
from tests.server_process import Server, free_port


def _workers(pid: int) -> list[int]:
    """The serving processes uvicorn spawned under ``pid`` (not its resource tracker)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"spawn_main" in command:
                found.append(int(child))
    return found


@pytest.mark.postgres
@pytest.mark.redis
def test_two_workers_serve_the_same_store(tmp_path: Path, postgres_url: str) -> None:
    if not Path("/proc/self/task").is_dir():
        pytest.skip("reads the process tree from /proc (Linux)")
    env = {
        "DATABASE_URL": postgres_url,
        "REDIS_URL": empty_redis(REDIS_TEST_DB),
        "REDIS_MEMORY_DB": str(REDIS_TEST_DB),
        "QDRANT_URL": f"http://127.0.0.1:{free_port()}",  # away: adds are served, vectors owed
        "STORE_TIMEOUT_SECONDS": "2",
        "AGENTCORE_ALLOW_OPEN": "true",
    }
    server = Server(tmp_path / "data", env=env, serve_args=["--workers", "2"])
    server.start(until="/livez")
    try:
        assert server.process is not None
        assert len(_workers(server.process.pid)) == 2
        stored = []
        for i in range(30):  # a new connection each: the kernel spreads them over the workers
            reply = httpx.post(
                server.url,
                json={
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "memory.add",
                    "params": {"user_id": "w", "content": f"note {i} for two workers"},
                },
                timeout=30,
            ).json()
            stored.append(reply["result"]["memory_id"])
        for memory_id in stored:  # whichever worker answers reads what the other wrote
            reply = httpx.post(
                server.url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "memory.get",
                    "params": {"user_id": "w", "memory_id": memory_id},
                },
                timeout=30,
            ).json()
            assert reply["result"]["id"] == memory_id
    finally:
        server.stop()
        empty_redis(REDIS_TEST_DB)


def test_more_than_one_worker_needs_server_stores(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")  # the embedded default: nothing but a data directory
    done = subprocess.run(
        [sys.executable, "-m", "agentcore.cli", "serve", "--workers", "2", "--port", "1"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    message = done.stderr.strip()
    assert message.startswith("agentcore: 2 worker processes need every store to be a server")
    assert "DATABASE_URL, REDIS_URL, QDRANT_URL" in message
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists()  # refused before anything was made
