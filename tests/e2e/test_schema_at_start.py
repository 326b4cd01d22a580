"""The database schema at start-up, and production mode's refusal of the embedded stores.

A database behind this release's schema (a fresh one included) keeps the service not ready and
every call refused with a retryable PROVIDER_ERROR that says to run `agentcore migrate`; once
it is migrated the service serves without a restart. ``AGENTCORE_MIGRATE_ON_START`` migrates it
at start instead, and a schema this release does not know refuses every call for good. Either
way the start-up log says what was done to the schema in one line, with none of Alembic's.
"""

from __future__ import annotations

import logging
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from agentcore.adapters.db.migrate import head_revision
from agentcore.api.app import create_app
from agentcore.config import Settings
from tests.conftest import PG_HOST, REDIS_SHIFT, empty_redis, migrate
from tests.server_process import Server

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

REDIS_DB = 12 - REDIS_SHIFT
ADMIN = f"postgresql://postgres@{PG_HOST}/test"


@pytest.fixture
def empty_database() -> Iterator[str]:
    """A Postgres database nobody migrated."""
    name = f"agentcore_fresh_{secrets.token_hex(6)}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@{PG_HOST}/{name}"
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _settings(tmp_path: Path, database: str, **extra: Any) -> Settings:
    return Settings(
        agentcore_data_dir=tmp_path,
        database_url=database,
        redis_url=empty_redis(REDIS_DB),
        redis_memory_db=REDIS_DB,
        **extra,
    )


def _add(client: TestClient) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory.add",
        "params": {"content": "The deploy runs every Tuesday.", "user_id": "u1"},
    }
    reply: dict[str, Any] = client.post("/rpc", json=body).json()
    return reply


def test_a_fresh_database_waits_for_migrate_and_then_serves(
    tmp_path: Path, empty_database: str
) -> None:
    with TestClient(create_app(_settings(tmp_path, empty_database))) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert "the database schema" in ready.json()["starting"]
        refused = _add(client)["error"]
        assert refused["data"]["code"] == "PROVIDER_ERROR"
        assert refused["data"]["retryable"] is True
        assert "agentcore migrate" in refused["message"]

        migrate(empty_database)  # what the operator (or the k8s migration Job) does
        deadline = time.monotonic() + 10
        while "error" in (reply := _add(client)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "result" in reply, reply
        assert "the database schema" not in client.get("/readyz").json()["starting"]


def test_migrate_on_start_migrates_a_fresh_database(
    tmp_path: Path, empty_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(tmp_path, empty_database, agentcore_migrate_on_start=True)
    caplog.set_level(logging.INFO)
    with TestClient(create_app(settings)) as client:
        assert "result" in _add(client)
    with psycopg.connect(empty_database.replace("+psycopg", "")) as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    assert row == (head_revision(),)
    said = [r.getMessage() for r in caplog.records if "database schema at" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith(f"database schema at {head_revision()} (was empty; applied ")
    assert not [r for r in caplog.records if r.name.startswith("alembic")]


def test_serve_logs_the_schema_in_one_line(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(tmp_path / "data", env={"LOG_LEVEL": "INFO"}, log=log)
    server.start(timeout=120, until="/livez")  # the embedded database is migrated before
    server.stop()
    lines = log.read_text().splitlines()
    schema = [line for line in lines if "database schema at" in line]
    assert len(schema) == 1, lines
    assert re.search(rf"at {head_revision()} \(was empty; applied \d+ migrations in ", schema[0])
    assert not [line for line in lines if "alembic" in line], lines


def test_a_schema_from_a_newer_release_stops_start_up(tmp_path: Path, empty_database: str) -> None:
    migrate(empty_database)
    with psycopg.connect(empty_database.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_future'")
    env = {
        "PATH": "/usr/bin:/bin",
        "AGENTCORE_DATA_DIR": str(tmp_path),
        "DATABASE_URL": empty_database,
        "REDIS_URL": empty_redis(REDIS_DB),
    }
    argv = [sys.executable, "-m", "agentcore.cli", "serve", "--port", "1"]
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "9999_future, which this release does not know" in refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr


def test_production_mode_refuses_the_embedded_stores(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "agentcore.cli", "serve", "--port", "1"]
    env = {
        "PATH": "/usr/bin:/bin",
        "AGENTCORE_DATA_DIR": str(tmp_path),
        "AGENTCORE_MODE": "production",
        "REDIS_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
    }
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "not set: DATABASE_URL, QDRANT_URL" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "agentcore.db").exists()  # nothing was created
