"""Stores going away under a running service, and missing at its start: what callers get.

The service runs in production mode (Postgres, Redis) as its own process, connected to the
real Postgres and Redis through proxies the tests cut (tests/outage_proxy.py), and to a Qdrant
server address where nothing listens. Each call that needs a missing store must fail fast with
a retryable PROVIDER_ERROR naming the store, the others must go on, the service must recover
without a restart once the store is back, nothing acknowledged may be lost, and its log must
hold no traceback.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import REDIS_TEST_DB, empty_redis
from tests.outage_proxy import CuttableProxy
from tests.server_process import Server, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

TIMEOUT = 2.0  # STORE_TIMEOUT_SECONDS of the service under test
FAIL_FAST = TIMEOUT + 4.0  # the longest a call may take to fail while its store is away
RECOVERY = 15.0  # the longest the service may take to serve again once the store is back


@pytest.fixture
def database_proxy(postgres_url: str) -> Iterator[tuple[CuttableProxy, str]]:
    url = make_url(postgres_url)
    with CuttableProxy(url.port or 5432) as proxy:
        yield proxy, url.set(port=proxy.port).render_as_string(hide_password=False)


@pytest.fixture
def redis_proxy() -> Iterator[tuple[CuttableProxy, str]]:
    empty_redis(REDIS_TEST_DB)
    with CuttableProxy(6379) as proxy:
        yield proxy, f"redis://127.0.0.1:{proxy.port}/{REDIS_TEST_DB}"
    empty_redis(REDIS_TEST_DB)


def _server(tmp_path: Path, database: str, redis: str, **env: str) -> Server:
    settings = {
        "DATABASE_URL": database,
        "REDIS_URL": redis,
        "REDIS_MEMORY_DB": str(REDIS_TEST_DB),
        "STORE_TIMEOUT_SECONDS": str(TIMEOUT),
        "LOG_LEVEL": "INFO",
        **env,
    }
    return Server(tmp_path / "data", env=settings, log=tmp_path / "server.log")


class Caller:
    def __init__(self, server: Server) -> None:
        self._server = server
        self._http = httpx.Client(timeout=60)
        self._id = 0

    def call(self, method: str, **params: Any) -> tuple[dict[str, Any], float]:
        """The reply (result or error) and the seconds it took."""
        self._id += 1
        body = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        started = time.monotonic()
        reply = self._http.post(self._server.url, json=body).json()
        return reply, time.monotonic() - started

    def ok(self, method: str, **params: Any) -> Any:
        reply, _ = self.call(method, **params)
        assert "result" in reply, reply
        return reply["result"]

    def unavailable(self, method: str, store: str, **params: Any) -> None:
        """The call fails fast with a retryable PROVIDER_ERROR that names ``store``."""
        reply, seconds = self.call(method, **params)
        error = reply.get("error")
        assert error is not None, reply
        assert error["data"]["code"] == "PROVIDER_ERROR", error
        assert error["data"]["retryable"] is True
        assert error["data"]["store"] == store, error
        assert seconds < FAIL_FAST, f"{method} took {seconds:.1f} s to fail"

    def until_ok(self, method: str, **params: Any) -> tuple[Any, float]:
        """Retried as a client would, until it succeeds: the result and the seconds it took."""
        started = time.monotonic()
        while True:
            reply, _ = self.call(method, **params)
            if "result" in reply:
                return reply["result"], time.monotonic() - started
            assert reply["error"]["data"]["retryable"] is True, reply
            assert time.monotonic() - started < RECOVERY, reply
            time.sleep(0.2)

    def close(self) -> None:
        self._http.close()

    def probe(self, path: str) -> tuple[int, dict[str, Any]]:
        response = self._http.get(f"{self._server.base}{path}")
        return response.status_code, response.json()


@contextlib.contextmanager
def _running(server: Server, until: str = "/health") -> Iterator[Server]:
    try:
        server.start(until=until)
        yield server
    finally:
        server.stop()


def _no_traceback(log: Path) -> None:
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


def test_postgres_then_redis_go_away_mid_load_and_come_back(
    tmp_path: Path,
    database_proxy: tuple[CuttableProxy, str],
    redis_proxy: tuple[CuttableProxy, str],
) -> None:
    (database, db_url), (redis, redis_url) = database_proxy, redis_proxy
    server = _server(tmp_path, db_url, redis_url)
    with _running(server), contextlib.closing(Caller(server)) as caller:
        _drill(caller, database, redis)
    _no_traceback(tmp_path / "server.log")


def _drill(caller: Caller, database: CuttableProxy, redis: CuttableProxy) -> None:
    scope = {"user_id": "outage-user"}
    acknowledged = [
        caller.ok("memory.add", content=f"Deploy step {n} of the outage drill", **scope)[
            "memory_id"
        ]
        for n in range(5)
    ]
    session = {"session_id": "outage-session", "user_id": "outage-user"}
    caller.ok("memory.working.append", content="The drill started", **session)
    try:
        database.cut()
        caller.unavailable("memory.add", "database", content="Lost while away?", **scope)
        caller.unavailable("memory.search", "database", query="deploy step", **scope)
        # What needs only Redis goes on; the process is alive but not ready.
        caller.ok("memory.working.append", content="The database is away", **session)
        assert caller.probe("/livez")[0] == 200
        status, ready = caller.probe("/readyz")
        assert status == 503
        assert ready["unavailable"] == ["database"]
    finally:
        database.restore()
    added, seconds = caller.until_ok("memory.add", content="Back after the cut", **scope)
    acknowledged.append(added["memory_id"])
    assert seconds < RECOVERY
    assert caller.probe("/readyz")[0] == 200

    try:
        redis.cut()
        caller.unavailable("memory.working.append", "redis", content="Lost?", **session)
        # What needs only the database goes on.
        acknowledged.append(caller.ok("memory.add", content="Redis is away", **scope)["memory_id"])
        assert caller.ok("memory.search", query="deploy step", **scope)["results"]
        assert caller.probe("/livez")[0] == 200  # kubernetes restarts nothing
        status, ready = caller.probe("/readyz")
        assert (status, ready["unavailable"]) == (503, ["redis"])
    finally:
        redis.restore()
    caller.until_ok("memory.working.append", content="Redis is back", **session)

    for memory_id in acknowledged:
        assert caller.ok("memory.get", memory_id=memory_id, **scope)["id"] == memory_id
    found = caller.ok("memory.search", query="Back after the cut", limit=3, **scope)["results"]
    assert acknowledged[5] in [hit["memory"]["id"] for hit in found]


def test_the_service_starts_without_its_database_and_its_qdrant_server(
    tmp_path: Path,
    database_proxy: tuple[CuttableProxy, str],
    redis_proxy: tuple[CuttableProxy, str],
) -> None:
    (database, db_url), (_, redis_url) = database_proxy, redis_proxy
    qdrant = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    server = _server(tmp_path, db_url, redis_url, QDRANT_URL=qdrant)
    database.cut()
    with _running(server, until="/livez"), contextlib.closing(Caller(server)) as caller:
        _late_stores(caller, database)
    _no_traceback(tmp_path / "server.log")


def _late_stores(caller: Caller, database: CuttableProxy) -> None:
    scope = {"user_id": "late-user"}
    try:
        status, ready = caller.probe("/readyz")
        assert status == 503
        assert ready["starting"] == [
            "the database schema",
            "the embedder check",
            "the vector collection",
        ]
        assert ready["unavailable"] == ["database", "vector_store"]
        caller.unavailable("memory.add", "database", content="Too early", **scope)
    finally:
        database.restore()
    added, seconds = caller.until_ok("memory.add", content="The database came back", **scope)
    assert seconds < RECOVERY
    # Start-up finished what needs the database; the vector collection waits for Qdrant.
    status, ready = caller.probe("/readyz")
    assert (status, ready["starting"]) == (503, ["the vector collection"])
    # Acknowledged and durable; its vector waits in the outbox for the vector store.
    stored = caller.ok("memory.get", memory_id=added["memory_id"], **scope)
    assert stored["content"] == "The database came back"
    caller.unavailable("memory.search", "vector_store", query="database came back", **scope)
    assert caller.probe("/health")[1]["pending_vector_writes"] >= 1


def test_the_service_starts_without_redis_and_its_broker(tmp_path: Path) -> None:
    """The embedded database with Redis (working memory) at a port where nothing listens: what
    needs Redis fails, named and retryable; the rest is served, jobs included (with the SQLite
    file they run in the serving process: no worker could open it)."""
    server = _server(tmp_path, "", f"redis://127.0.0.1:{free_port()}/0")
    server.env.pop("DATABASE_URL")
    with _running(server, until="/livez"), contextlib.closing(Caller(server)) as caller:
        status, ready = caller.probe("/readyz")
        assert (status, ready["unavailable"], ready["starting"]) == (503, ["redis"], [])
        scope = {"user_id": "no-redis", "task_id": "no-redis-task"}
        added = caller.ok("memory.add", content="Stored without Redis", **scope)
        found = caller.ok("memory.search", query="stored without redis", **scope)["results"]
        assert [hit["memory"]["id"] for hit in found] == [added["memory_id"]]
        session = {"session_id": "no-redis-session", "user_id": "no-redis"}
        caller.unavailable("memory.working.append", "redis", content="Lost?", **session)
        stage = caller.ok("memory.stage.start", stage_type="planning", **scope)["stage"]
        caller.ok("memory.add", content="Plan: ship the fix on Monday", **scope)
        done = caller.ok("memory.stage.complete", stage_id=stage["id"], **scope)
        assert "ship the fix on Monday" in done["stage_memory"]["summary"]  # compressed here
    _no_traceback(tmp_path / "server.log")
