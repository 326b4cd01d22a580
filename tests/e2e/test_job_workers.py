"""Production jobs that cannot stall silently, with the real processes: ``agentcore serve`` on
PostgreSQL + Redis (vectors in its embedded engine: no QDRANT_URL) and ``agentcore worker``
started as a deployment starts it, from the same environment and data directory.

Without a worker, readiness names the cause and a completion that waits fails at once,
retryably; a completion that does not wait is queued, and runs when the worker comes up. With
the worker, COMPASS stages complete with the summaries it produced. A worker that could not
own what it needs refuses to start, on one line."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agent_trace import CRITICAL, STAGES
from tests.conftest import REDIS_TEST_DB, empty_redis
from tests.server_process import Server
from tests.worker_process import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
_ids = itertools.count(1)
WORKER_START_SECONDS = 120  # imports and the container, on a loaded 2-core machine


class Service:
    def __init__(self, server: Server, database_url: str, redis_url: str, data: Path) -> None:
        self.server = server
        self.database_url = database_url
        self.redis_url = redis_url
        self.data = data
        self.http = httpx.Client(base_url=server.base, timeout=90)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
        reply: dict[str, Any] = self.http.post("/rpc", json=body).json()
        return reply

    def ok(self, method: str, **params: Any) -> Any:
        reply = self.call(method, **params)
        assert "error" not in reply, reply
        return reply["result"]

    def probe(self, path: str) -> tuple[int, dict[str, Any]]:
        response = self.http.get(path)
        return response.status_code, response.json()

    def stage_with_memories(self, task_id: str, stage_type: str) -> tuple[str, list[str]]:
        stage_id = self.ok("memory.stage.start", task_id=task_id, stage_type=stage_type)["stage_id"]
        ids = [
            self.ok("memory.add", task_id=task_id, content=text, critical=text in CRITICAL)[
                "memory_id"
            ]
            for text in _texts(stage_type)
        ]
        return stage_id, ids

    def until(self, path: str, status: str, seconds: float) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while True:
            _, body = self.probe(path)
            if body.get("status") == status or time.monotonic() > deadline:
                return body
            time.sleep(0.2)


def _texts(stage_type: str) -> list[str]:
    """A shorter stage than the trace's (the test is about who compresses): its critical
    memories and the first others."""
    texts = STAGES[stage_type]
    return [t for t in texts if t in CRITICAL] + [t for t in texts if t not in CRITICAL][:10]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Service]:
    data = tmp_path_factory.mktemp("jobs") / "data"
    redis_url = empty_redis(REDIS_TEST_DB)
    env = {
        "DATABASE_URL": postgres_url,
        "REDIS_URL": redis_url,
        "REDIS_MEMORY_DB": str(REDIS_TEST_DB),
        "AGENTCORE_ALLOW_OPEN": "true",
    }
    server = Server(data, env=env)
    server.start(timeout=120)
    service = Service(server, postgres_url, redis_url, data)
    try:
        yield service
    finally:
        service.http.close()
        server.stop()
        empty_redis(REDIS_TEST_DB)


def _no_worker(service: Service) -> None:
    """What the service says, and does, with nobody to run its jobs."""
    status, ready = service.probe("/readyz")
    assert (status, ready["ready"], ready["status"]) == (200, True, "degraded")
    assert ready["degraded"][0].startswith("no live job worker")
    _, health = service.probe("/health")
    assert health["jobs"]["workers_alive"] == 0
    assert health["degraded"] == ready["degraded"]


def test_stages_complete_on_a_real_worker_and_fail_fast_without_one(service: Service) -> None:
    task = "jobs-on-a-worker"
    _no_worker(service)

    # A completion that waits: refused at once, retryable, naming the cause; nothing changed.
    planning, planning_ids = service.stage_with_memories(task, "planning")
    started = time.monotonic()
    refused = service.call("memory.stage.complete", task_id=task, stage_id=planning)["error"]
    refused_in = time.monotonic() - started
    assert refused_in < 5, refused_in  # was 60 s, then the stage without its summary
    print(f"refused without a worker in {refused_in:.3f} s")
    assert refused["code"] == -32010
    assert refused["data"] == {"code": "PROVIDER_ERROR", "retryable": True, "store": "job_worker"}
    assert "no live job worker" in refused["message"]
    assert service.ok("memory.stage.current", task_id=task)["stage"]["id"] == planning

    # One that does not wait is acknowledged with a job, which waits in the queue.
    queued = service.ok("memory.stage.complete", task_id=task, stage_id=planning, wait=False)
    job_id = queued["job_id"]
    assert service.ok("memory.job.get", job_id=job_id)["status"] == "queued"
    jobs = service.probe("/health")[1]["jobs"]
    assert jobs["queued"] == 1
    assert jobs["oldest_queued_seconds"] >= 0

    started = time.monotonic()
    with celery_worker(
        service.data,  # the serving process's own directory: the worker opens nothing there
        service.database_url,
        service.redis_url,
        REDIS_MEMORY_DB=str(REDIS_TEST_DB),
    ) as worker:
        ready = service.until("/readyz", "ready", WORKER_START_SECONDS)
        assert ready["degraded"] == [], f"no worker heartbeat after {WORKER_START_SECONDS} s"
        print(f"worker ready {time.monotonic() - started:.1f} s after its start")

        # The queued job ran on the worker: nothing acknowledged was lost.
        job = _finished(service, job_id)
        assert job["status"] == "succeeded", job
        memory = job["result"]["stage_memory"]
        assert memory["summary"]
        assert memory["raw_memory_ids"] == planning_ids

        # The next stages complete with the summaries the worker produced.
        for stage_type in ("execution", "reflection"):
            stage_id, ids = service.stage_with_memories(task, stage_type)
            started = time.monotonic()
            done = service.ok("memory.stage.complete", task_id=task, stage_id=stage_id)
            print(f"{stage_type} completed in {time.monotonic() - started:.3f} s")
            assert done["job_id"] is not None  # run as a job: the API does not compress inline
            memory = done["stage_memory"]
            assert memory["summary"]
            assert memory["raw_memory_ids"] == ids
            flagged = [text for text in _texts(stage_type) if text in CRITICAL]
            assert set(flagged) <= set(memory["critical_facts"])
        progress = service.ok("memory.task.progress", task_id=task)
        assert len(progress["completed_stages"]) == 3
        assert set(CRITICAL) <= set(progress["critical_constraints"])

        worker.send_signal(signal.SIGTERM)  # a clean stop withdraws its heartbeat at once
        worker.wait(timeout=60)
    _no_worker(service)


def _finished(service: Service, job_id: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        job: dict[str, Any] = service.ok("memory.job.get", job_id=job_id)
        if job["status"] in ("succeeded", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.1)


def _worker_refusal(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    server = Server(tmp_path / "data", env=env)  # its environment, without starting it
    return subprocess.run(
        [sys.executable, "-m", "agentcore.cli", "worker", *args],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_worker_that_cannot_own_what_it_needs_refuses_on_one_line(tmp_path: Path) -> None:
    redis_url = f"redis://127.0.0.1:6379/{REDIS_TEST_DB}"
    without_database = _worker_refusal(tmp_path, REDIS_URL=redis_url)
    assert without_database.returncode == 2
    assert without_database.stderr.strip().splitlines() == [
        "agentcore: agentcore worker needs DATABASE_URL (a database server): without it the "
        "database is the SQLite file under AGENTCORE_DATA_DIR, which belongs to the serving "
        "process"
    ]
    database = "postgresql://127.0.0.1:1/none"  # refused before anything is opened
    beat = _worker_refusal(tmp_path, "--beat", REDIS_URL=redis_url, DATABASE_URL=database)
    assert beat.returncode == 2
    (line,) = beat.stderr.strip().splitlines()
    assert line.startswith("agentcore: agentcore worker --beat needs QDRANT_URL: the periodic")
    assert "start the worker without --beat" in line
    assert not (tmp_path / "data").exists()  # nothing was made in the data directory
