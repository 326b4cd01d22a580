"""JSON log lines and request ids (LOG_FORMAT=json)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from agentcore.api.request_ids import RequestIds
from agentcore.config import Settings
from agentcore.logs import (
    JsonFormatter,
    RequestIdFilter,
    configure_logging,
    current_request_id,
    request_id_bound,
)

log = logging.getLogger("agentcore.tests.logs")


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What ``log`` writes, as JSON lines."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield out
    finally:
        log.removeHandler(handler)


def parsed(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_line_is_one_json_object_with_the_request_id_when_in_a_request(
    lines: io.StringIO,
) -> None:
    log.info("outside %s", "any request")
    with request_id_bound("req-1"):
        log.warning("inside", extra={"method": "memory.add", "color_message": "\x1b[1minside"})
    outside, inside = parsed(lines)
    assert outside["message"] == "outside any request"
    assert (outside["level"], outside["logger"]) == ("INFO", "agentcore.tests.logs")
    assert outside["time"].endswith("+00:00")
    assert "request_id" not in outside
    assert inside["request_id"] == "req-1"
    assert inside["method"] == "memory.add"
    assert "color_message" not in inside
    assert current_request_id() is None


def test_a_defect_keeps_its_traceback_in_a_field_of_its_own(lines: io.StringIO) -> None:
    try:
        raise KeyError("k")
    except KeyError:
        log.exception("lookup failed")
    (line,) = parsed(lines)
    assert line["message"] == "lookup failed"
    assert line["exc_type"] == "KeyError"
    assert line["exc_info"].startswith("Traceback (most recent call last)")
    assert len(lines.getvalue().splitlines()) == 1


def test_configure_logging_installs_the_format_asked_for() -> None:
    root = logging.getLogger()
    kept, level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        configure_logging(Settings(log_format="json", log_level="WARNING"))
        (handler,) = root.handlers
        assert isinstance(handler.formatter, JsonFormatter)
        assert root.level == logging.WARNING
        root.handlers.clear()
        configure_logging(Settings())
        (handler,) = root.handlers
        assert not isinstance(handler.formatter, JsonFormatter)
    finally:
        root.handlers[:] = kept
        root.setLevel(level)


def logging_app() -> Starlette:
    async def work(request: Request) -> PlainTextResponse:
        log.info("working")
        return PlainTextResponse("done")

    return Starlette(routes=[Route("/work", work)], middleware=[Middleware(RequestIds)])


def test_the_response_returns_the_request_id_its_log_lines_carry(lines: io.StringIO) -> None:
    with TestClient(logging_app()) as client:
        first = client.get("/work").headers["x-request-id"]
        second = client.get("/work").headers["x-request-id"]
    assert first != second
    assert [line["request_id"] for line in parsed(lines)] == [first, second]


@pytest.mark.parametrize(
    ("presented", "honoured"),
    [
        ("4bf92f3577b34da6a3ce929d0e0e4736", True),
        ("lb-7:req.42_a", True),
        ("", False),
        ("x" * 129, False),
        ("two words", False),
        ('"><script>', False),
    ],
)
def test_a_sane_incoming_request_id_is_honoured(
    lines: io.StringIO, presented: str, honoured: bool
) -> None:
    with TestClient(logging_app()) as client:
        returned = client.get("/work", headers={"X-Request-ID": presented}).headers
    assert (returned["x-request-id"] == presented) is honoured
    assert len(returned.get_list("x-request-id")) == 1
    assert parsed(lines)[0]["request_id"] == returned["x-request-id"]


@pytest.mark.parametrize(("log_format", "hijacked"), [("text", True), ("json", False)])
def test_a_json_worker_keeps_the_root_handler(log_format: str, hijacked: bool) -> None:
    from agentcore.adapters.jobs.celery_app import celery_app

    settings = Settings(redis_url="redis://127.0.0.1:1/0", log_format=log_format)
    assert celery_app(settings).conf.worker_hijack_root_logger is hijacked
