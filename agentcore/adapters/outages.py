"""Which store a failure says is out of reach: the one place that knows the drivers' errors.

A store that cannot be reached (refused, reset, timed out, shutting down, SQLite's lock held
past its busy timeout) is a condition the caller can wait out: it becomes a retryable
``ProviderError`` naming the store, and is logged on one line. Everything else a driver raises
(a constraint, a syntax error, a missing table) is a defect and stays as it is.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import psycopg
import redis.exceptions
import sqlalchemy.exc
from kombu.exceptions import OperationalError as BrokerError

from agentcore.domain.errors import ProviderError

# What ``data.store`` of the error says (the names of /health's components where they match).
DATABASE = "database"
REDIS = "redis"
BROKER = "job_broker"
VECTOR_STORE = "vector_store"  # named by the Qdrant server adapter itself
_SAID = {DATABASE: "the database", REDIS: "Redis", BROKER: "the job broker"}

P = ParamSpec("P")
T = TypeVar("T")

# sqlite3.OperationalError covers a locked database and an unknown column alike; only these
# are conditions that pass.
_SQLITE_TRANSIENT = ("database is locked", "database table is locked", "disk i/o error")


def unavailable_store(exc: BaseException) -> str | None:
    """The store ``exc`` says could not be reached, or None when it is not an outage."""
    if isinstance(exc, ProviderError):
        return None  # already named by its adapter
    if isinstance(exc, sqlalchemy.exc.TimeoutError):  # no pooled connection came free
        return DATABASE
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        if exc.connection_invalidated:
            return DATABASE
        return unavailable_store(exc.orig) if exc.orig is not None else None
    if isinstance(exc, psycopg.OperationalError):
        return DATABASE  # refused, reset, terminated by the server, timed out
    if isinstance(exc, sqlite3.OperationalError):
        message = str(exc).lower()
        return DATABASE if message.startswith(_SQLITE_TRANSIENT) else None
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return REDIS
    if isinstance(exc, BrokerError):
        return BROKER
    # A library's own error raised from an outage is that outage (Celery's result backend
    # gives up on Redis with a RuntimeError raised from the ConnectionError).
    cause = exc.__cause__
    return None if cause is None or cause is exc else unavailable_store(cause)


def as_provider_error(exc: BaseException) -> ProviderError | None:
    """``exc`` as the retryable error a caller gets, when it is an outage."""
    store = unavailable_store(exc)
    return None if store is None else _unavailable(store, exc)


def _unavailable(store: str, cause: BaseException) -> ProviderError:
    said = _SAID.get(store, store)
    error = ProviderError(f"{said} is unavailable; retry later", store=store)
    error.__cause__ = cause
    return error


def names_outages(
    store: str,
) -> Callable[[Callable[P, Coroutine[Any, Any, T]]], Callable[P, Coroutine[Any, Any, T]]]:
    """For an adapter's async methods on ``store``: its outages reach callers as
    ``ProviderError``. A failure of the connection itself counts too: an ``OSError``, or the
    ``RuntimeError`` uvloop raises on a transport the peer has closed (redis-py lets it
    through when a write races the reset)."""

    def decorate(
        method: Callable[P, Coroutine[Any, Any, T]],
    ) -> Callable[P, Coroutine[Any, Any, T]]:
        @functools.wraps(method)
        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return await method(*args, **kwargs)
            except Exception as exc:
                outage = as_provider_error(exc)
                if outage is None and _connection_lost(exc):
                    outage = _unavailable(store, exc)
                if outage is None:
                    raise
                raise outage from exc

        return call

    return decorate


def _connection_lost(exc: Exception) -> bool:
    if isinstance(exc, OSError):
        return True
    return isinstance(exc, RuntimeError) and "handler is closed" in str(exc)
