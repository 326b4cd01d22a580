"""``agentcore serve --workers N``: several serving processes on one port, for production
stores (Postgres, Redis, a Qdrant server), and a clear refusal where a store lives in the
process (the embedded default)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.agent_trace import STAGES
from tests.conftest import REDIS_TEST_DB, empty_redis
from tests.server_process import Server, free_port
from tests.worker_process import celery_worker


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


def _call(url: str, method: str, **params: object) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    reply: dict[str, Any] = httpx.post(url, json=body, timeout=60).json()
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


def _samples(text: str) -> dict[str, float]:
    """A scrape's samples by name and sorted labels."""
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


@pytest.mark.postgres
@pytest.mark.redis
def test_one_scrape_counts_every_worker_and_the_jobs(tmp_path: Path, postgres_url: str) -> None:
    """``serve --workers 2`` sums its processes' metrics through AGENTCORE_DATA_DIR/metrics, and
    a Celery worker given that directory adds the compression it ran; the worker also serves
    its own /metrics (its token required), with the job it ran."""
    if not Path("/proc/self/task").is_dir():
        pytest.skip("reads the process tree from /proc (Linux)")
    broker = empty_redis(REDIS_TEST_DB)
    env = {
        "DATABASE_URL": postgres_url,
        "REDIS_URL": broker,
        "REDIS_MEMORY_DB": str(REDIS_TEST_DB),
        "QDRANT_URL": f"http://127.0.0.1:{free_port()}",  # away: adds are served, vectors owed
        "STORE_TIMEOUT_SECONDS": "2",
        "AGENTCORE_ALLOW_OPEN": "true",
    }
    metrics_dir = (tmp_path / "data" / "metrics").resolve()
    metrics_dir.mkdir(parents=True)
    (metrics_dir / "counter_999999999.db").write_bytes(b"")  # a previous run's: cleared
    server = Server(tmp_path / "data", env=env, serve_args=["--workers", "2"])
    server.start(until="/livez")
    metrics_port = free_port()
    extra = {
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "REDIS_MEMORY_DB": env["REDIS_MEMORY_DB"],
        "AGENTCORE_WORKER_METRICS_PORT": str(metrics_port),  # its own /metrics too
        "AGENTCORE_METRICS_TOKEN": "worker-metrics-token",
    }
    try:
        with celery_worker(tmp_path / "worker", postgres_url, broker, **extra) as worker:
            assert server.process is not None
            serving = _workers(server.process.pid)
            for i in range(30):  # a new connection each: the kernel spreads them over workers
                _call(server.url, "memory.add", user_id="w", content=f"note {i} of two workers")
            stage = _call(server.url, "memory.stage.start", task_id="t", stage_type="planning")
            for text in STAGES["planning"]:
                _call(server.url, "memory.add", task_id="t", content=text)
            started = _call(
                server.url,
                "memory.stage.complete",
                task_id="t",
                stage_id=stage["stage_id"],
                wait=False,
            )
            deadline = time.monotonic() + 60
            while (job := _call(server.url, "memory.job.get", job_id=started["job_id"]))[
                "status"
            ] not in ("succeeded", "failed"):
                assert time.monotonic() < deadline, job
                time.sleep(0.1)
            assert job["status"] == "succeeded", job
            scrape = httpx.get(f"{server.base}/metrics", timeout=30)
            own = f"http://127.0.0.1:{metrics_port}/metrics"
            refused = httpx.get(own, timeout=30)
            bearer = {"authorization": "Bearer worker-metrics-token"}
            worker_scrape = httpx.get(own, headers=bearer, timeout=30)
            writers = {int(path.stem.rpartition("_")[2]) for path in metrics_dir.glob("*.db")}
    finally:
        server.stop()
        empty_redis(REDIS_TEST_DB)
    assert scrape.status_code == 200
    samples = _samples(scrape.text)
    adds = 30 + len(STAGES["planning"])
    assert samples["agentcore_rpc_requests_total{method=memory.add,outcome=ok}"] == adds
    assert samples["agentcore_rpc_latency_seconds_count{method=memory.add}"] == adds
    assert (
        samples["agentcore_compressions_total{engine=extractive,fallback=false,level=stage}"] == 1
    )
    assert samples["agentcore_compression_factor_count{engine=extractive,level=stage}"] == 1
    assert "agentcore_store_up{store=database}" in samples  # this process's collector too
    assert set(serving) | {worker.pid} <= writers  # both serving processes and the worker
    assert 999999999 not in writers
    assert refused.status_code == 401
    assert worker_scrape.status_code == 200
    jobs = _samples(worker_scrape.text)
    ran = {name: n for name, n in jobs.items() if name.startswith("agentcore_worker_jobs_total{")}
    assert list(ran.values()) == [1], ran  # the compression: one job, its outcome "ok"
    assert "outcome=ok" in next(iter(ran))
    assert any(name.startswith("agentcore_worker_job_seconds_count") for name in jobs)
