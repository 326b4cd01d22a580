"""Outages: which driver errors name an unreachable store, how a call and the log see them,
and start-up work that waits for a store."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
import redis.exceptions
import sqlalchemy.exc
from kombu.exceptions import OperationalError as BrokerError
from prometheus_client import CollectorRegistry

from agentcore.adapters.outages import (
    BROKER,
    DATABASE,
    REDIS,
    as_provider_error,
    names_outages,
    unavailable_store,
)
from agentcore.api.metrics import RpcMetrics
from agentcore.api.params import Params
from agentcore.api.rpc import JsonRpcEndpoint, RpcMethod
from agentcore.domain.errors import ConfigurationError, ProviderError
from agentcore.services.startup import Check, StartupChecks


def _wrapped(orig: BaseException) -> sqlalchemy.exc.DBAPIError:
    return sqlalchemy.exc.OperationalError("SELECT 1", {}, orig)  # type: ignore[arg-type]


def _raised_from(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    ("error", "store"),
    [
        (_wrapped(psycopg.OperationalError("connection refused")), DATABASE),
        (psycopg.OperationalError("terminating connection due to administrator command"), DATABASE),
        (sqlalchemy.exc.TimeoutError("QueuePool limit reached"), DATABASE),
        (_wrapped(sqlite3.OperationalError("database is locked")), DATABASE),
        (_wrapped(sqlite3.OperationalError("no such column: nope")), None),  # a defect
        (sqlalchemy.exc.IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE")), None),
        (redis.exceptions.ConnectionError("Error 111 connecting"), REDIS),
        (redis.exceptions.TimeoutError("Timeout reading from socket"), REDIS),
        (BrokerError("Error 111 connecting to 127.0.0.1:6379"), BROKER),
        (ValueError("not an outage"), None),
        (
            _raised_from(RuntimeError("retry limit exceeded"), redis.exceptions.ConnectionError()),
            REDIS,
        ),
        (_raised_from(RuntimeError("a defect"), ValueError("bad value")), None),
        (ProviderError("already named", store="vector_store"), None),
    ],
)
def test_which_errors_are_outages(error: BaseException, store: str | None) -> None:
    assert unavailable_store(error) == store


def test_an_outage_is_a_retryable_provider_error_naming_the_store() -> None:
    cause = redis.exceptions.ConnectionError("Error 111 connecting to 10.0.0.7:6379")
    error = as_provider_error(cause)
    assert error is not None
    assert (error.code, error.retryable, error.details) == (
        "PROVIDER_ERROR",
        True,
        {"store": REDIS},
    )
    assert error.message == "Redis is unavailable; retry later"  # no address, no driver text
    assert error.__cause__ is cause


async def test_an_adapter_method_names_a_lost_connection_of_its_store() -> None:
    @names_outages(REDIS)
    async def fails(exc: Exception) -> None:
        raise exc

    for lost in (RuntimeError("unable to perform operation: the handler is closed"), OSError()):
        with pytest.raises(ProviderError) as caught:
            await fails(lost)
        assert caught.value.details == {"store": REDIS}
    with pytest.raises(RuntimeError, match="something else"):
        await fails(RuntimeError("something else"))


class NoParams(Params):
    pass


async def test_a_call_gets_provider_error_and_the_log_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def handler(_: NoParams) -> Any:
        raise _wrapped(psycopg.OperationalError("connection to 10.0.0.5 refused"))

    method = RpcMethod("probe", NoParams, NoParams, handler, "Probe.")
    endpoint = JsonRpcEndpoint(
        {"probe": method}, RpcMetrics(CollectorRegistry()), as_provider_error
    )
    with caplog.at_level(logging.WARNING):
        reply = await endpoint.call("probe", {})
    assert reply["error"]["code"] == -32010
    assert reply["error"]["data"] == {
        "code": "PROVIDER_ERROR",
        "retryable": True,
        "store": DATABASE,
    }
    assert "10.0.0.5" not in str(reply)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.exc_info is None
    assert (
        record.getMessage() == "probe: the database is unavailable; retry later (OperationalError)"
    )


async def test_start_up_waits_for_its_store_and_guards_calls_until_done() -> None:
    up = {"database": False}
    ran: list[str] = []

    async def embedder_check() -> None:
        if not up["database"]:
            raise ProviderError("the database is unavailable; retry later", store=DATABASE)
        ran.append("embedder")

    async def collection() -> None:
        ran.append("collection")

    checks = StartupChecks(
        [
            Check("the embedder check", DATABASE, embedder_check, guards_calls=True),
            Check("the vector collection", "vector_store", collection),
        ]
    )
    assert await checks.run() is False
    assert checks.waiting_for == ["the embedder check", "the vector collection"]
    with pytest.raises(ProviderError) as caught:
        checks.admit()
    assert caught.value.details == {"store": DATABASE}
    up["database"] = True
    stop = asyncio.Event()
    await asyncio.wait_for(checks.keep_trying(0.01, stop), 5)
    assert checks.done
    assert ran == ["embedder", "collection"]
    checks.admit()  # takes calls


async def test_a_check_that_fails_for_good_refuses_every_call() -> None:
    async def mismatch() -> None:
        raise ConfigurationError("this store was built with another embedder")

    checks = StartupChecks([Check("the embedder check", DATABASE, mismatch, guards_calls=True)])
    with pytest.raises(ConfigurationError):
        await checks.run()
    with pytest.raises(ConfigurationError):
        checks.admit()


async def test_a_worker_runs_a_job_once_its_start_up_is_done() -> None:
    from agentcore.worker import _job

    up = {"database": False}

    async def embedder_check() -> None:
        if not up["database"]:
            raise ProviderError("the database is unavailable; retry later", store=DATABASE)

    async def echo(payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    container: Any = SimpleNamespace(
        startup=StartupChecks(
            [Check("the embedder check", DATABASE, embedder_check, guards_calls=True)]
        ),
        job_handlers={"echo": echo},
    )
    waiting = await _job(container, "echo", {"n": 1})
    assert waiting["ok"] is False
    assert (waiting["error"]["code"], waiting["error"]["retryable"]) == ("PROVIDER_ERROR", True)
    up["database"] = True
    assert await _job(container, "echo", {"n": 1}) == {"ok": True, "result": {"n": 1}}
