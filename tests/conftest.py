"""Fixtures for the machine's real services. Unreachable services skip, or fail when CI=true."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import redis

from agentcore.adapters.db.migrate import upgrade

PG_HOST = "127.0.0.1:5432"
PG_ROLES = ("postgres", "root")
REDIS_URL = "redis://127.0.0.1:6379"
# Concurrent test runs on one machine (e.g. two checkouts) pick apart Redis databases:
# AGENTCORE_TEST_REDIS_SHIFT=3 moves every database the suite uses three lower.
REDIS_SHIFT = int(os.environ.get("AGENTCORE_TEST_REDIS_SHIFT", "0"))
REDIS_TEST_DB = 13 - REDIS_SHIFT


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true requires it")
    pytest.skip(reason)


def migrate(url: str) -> None:
    """As ``agentcore serve`` does: off the event loop's thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(upgrade, url).result()


def _postgres_role() -> str | None:
    for role in PG_ROLES:
        try:
            with psycopg.connect(f"postgresql://{role}@{PG_HOST}/test", connect_timeout=3):
                return role
        except psycopg.Error:
            continue
    return None


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A fresh, migrated database per test module, dropped afterwards."""
    role = _postgres_role()
    if role is None:
        unavailable(f"PostgreSQL is not reachable at {PG_HOST} (roles {', '.join(PG_ROLES)})")
    name = f"agentcore_it_{secrets.token_hex(6)}"
    admin = f"postgresql://{role}@{PG_HOST}/test"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = f"postgresql+psycopg://{role}@{PG_HOST}/{name}"
        migrate(url)
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def empty_redis(db: int) -> str:
    """The URL of Redis database ``db``, emptied; skips (fails with CI=true) without Redis."""
    url = f"{REDIS_URL}/{db}"
    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError:
        unavailable(f"Redis is not reachable at {REDIS_URL}")
    client.flushdb()
    client.close()
    return url


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis database of its own, emptied before and after the test."""
    url = empty_redis(REDIS_TEST_DB)
    try:
        yield url
    finally:
        empty_redis(REDIS_TEST_DB)
