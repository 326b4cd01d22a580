"""The clients' retries, API key and address, against a fake service behind httpx's
MockTransport (the real service over HTTP: tests/e2e/test_clients.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agentcore.client import AsyncMemoryClient, MemoryClient, RpcError, method_name, rpc_url

Reply = Callable[[httpx.Request], httpx.Response]


def result(value: Any) -> Reply:
    return lambda request: httpx.Response(
        200, json={"jsonrpc": "2.0", "result": value, "id": json.loads(request.content)["id"]}
    )


def error(code: str, *, retryable: bool, number: int = -32010, **data: Any) -> Reply:
    body = {
        "code": number,
        "message": code.lower(),
        "data": {"code": code, "retryable": retryable, **data},
    }
    return lambda request: httpx.Response(200, json={"jsonrpc": "2.0", "error": body, "id": 1})


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def cut_off(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadError("connection reset after the request was sent", request=request)


class FakeService:
    """Answers each request with the next scripted reply and keeps what it was sent."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies.pop(0)(request)

    @property
    def methods(self) -> list[str]:
        return [json.loads(r.content)["method"] for r in self.requests]


def sync_client(service: FakeService, **options: Any) -> MemoryClient:
    return MemoryClient(transport=httpx.MockTransport(service), backoff=0, **options)


def test_a_retryable_error_is_retried_until_it_succeeds() -> None:
    service = FakeService(
        error("PROVIDER_ERROR", retryable=True, store="database"),
        refused,
        result({"memory_id": "m1"}),
    )
    with sync_client(service) as client:
        assert client.add("Alice likes tea", user_id="alice") == {"memory_id": "m1"}
    assert service.methods == ["memory.add"] * 3


async def test_the_async_client_retries_the_same_way() -> None:
    service = FakeService(
        error("RATE_LIMITED", retryable=True, retry_after=0.01), result({"results": []})
    )
    client = AsyncMemoryClient(transport=httpx.MockTransport(service), backoff=0)
    async with client:
        assert await client.search("tea", user_id="alice") == {"results": []}
    assert service.methods == ["memory.search"] * 2


def test_a_non_retryable_error_is_raised_at_once() -> None:
    service = FakeService(error("MEMORY_NOT_FOUND", retryable=False, number=-32004))
    with sync_client(service) as client, pytest.raises(RpcError) as raised:
        client.get("m404", user_id="alice")
    assert len(service.requests) == 1
    assert (raised.value.number, raised.value.code, raised.value.retryable) == (
        -32004,
        "MEMORY_NOT_FOUND",
        False,
    )
    assert raised.value.message == "memory_not_found"
    assert raised.value.data["code"] == "MEMORY_NOT_FOUND"


def test_invalid_params_name_the_first_failing_fields_in_the_message() -> None:
    fields = ["query", "limit", "tags", "k"]
    problems = [{"field": f, "message": f"bad {f}"} for f in fields]
    service = FakeService(error("INVALID_PARAMS", retryable=False, number=-32602, errors=problems))
    with sync_client(service) as client, pytest.raises(RpcError) as raised:
        client.search("", user_id="alice", limit=0, tags=3, k=1)
    assert str(raised.value) == (
        "invalid_params (-32602): query: bad query; limit: bad limit; tags: bad tags; and 1 more"
    )
    assert raised.value.message == "invalid_params"
    assert raised.value.data["errors"] == problems  # all of them
    assert raised.value.field_errors == [f"{f}: bad {f}" for f in fields]
    service = FakeService(error("MEMORY_NOT_FOUND", retryable=False, number=-32004))
    with sync_client(service) as client, pytest.raises(RpcError) as raised:
        client.get("m404", user_id="alice")
    assert str(raised.value) == "memory_not_found (-32004)"


def test_retries_stop_after_the_configured_number() -> None:
    service = FakeService(*[error("PROVIDER_ERROR", retryable=True)] * 3)
    with sync_client(service, retries=2) as client, pytest.raises(RpcError) as raised:
        client.list(user_id="alice")
    assert raised.value.retryable
    assert len(service.requests) == 3  # the call and two retries


def test_an_add_cut_off_after_sending_is_not_repeated_but_a_read_is() -> None:
    """memory.add has no idempotency key: a second try could store the memory twice."""
    service = FakeService(cut_off)
    with sync_client(service) as client, pytest.raises(httpx.ReadError):
        client.add("Alice likes tea", user_id="alice")
    assert len(service.requests) == 1
    service = FakeService(cut_off, result({"memories": []}))
    with sync_client(service) as client:
        assert client.list(user_id="alice") == {"memories": []}
    assert len(service.requests) == 2


def test_an_add_whose_memory_was_stored_is_not_repeated() -> None:
    """``infer``: the memory is stored, the extraction failed (retryable, naming the memory)."""
    service = FakeService(error("PROVIDER_ERROR", retryable=True, memory_id="m1"))
    with sync_client(service) as client, pytest.raises(RpcError) as raised:
        client.add("Alice likes tea", user_id="alice", infer=True)
    assert raised.value.data["memory_id"] == "m1"
    assert len(service.requests) == 1


def test_the_api_key_is_sent_as_a_bearer_token() -> None:
    service = FakeService(result({"status": "ok"}))
    with sync_client(service, api_key="ak_secret") as client:
        client.health()
    assert service.requests[0].headers["authorization"] == "Bearer ak_secret"
    service = FakeService(result({"status": "ok"}))
    with sync_client(service) as client:
        client.health()
    assert "authorization" not in service.requests[0].headers


def test_a_refused_key_is_its_error_object_not_an_http_error() -> None:
    body = {
        "code": -32012,
        "message": "a valid API key is needed",
        "data": {"code": "UNAUTHORIZED"},
    }
    service = FakeService(lambda _: httpx.Response(401, json={"jsonrpc": "2.0", "error": body}))
    with sync_client(service) as client, pytest.raises(RpcError) as raised:
        client.health()
    assert raised.value.code == "UNAUTHORIZED"
    assert not raised.value.retryable


@pytest.mark.parametrize(
    "given",
    ["http://h:8080", "http://h:8080/", "http://h:8080/rpc", "http://h:8080/rpc/"],
)
def test_the_address_is_the_service_or_its_rpc_endpoint(given: str) -> None:
    assert rpc_url(given) == "http://h:8080/rpc"


def test_calls_are_named_params_of_the_rpc_method() -> None:
    service = FakeService(result({}), result({}), result({}))
    with sync_client(service) as client:
        client.stage_start("t1", "planning", agent_id="a1")
        client.call("memory.task.progress", task_id="t1")
        client.import_([{"content": "x"}], user_id="u")
    bodies = [json.loads(r.content) for r in service.requests]
    assert bodies[0]["params"] == {"task_id": "t1", "stage_type": "planning", "agent_id": "a1"}
    assert [b["method"] for b in bodies] == [
        "memory.stage.start",
        "memory.task.progress",
        "memory.import",
    ]
    assert [b["id"] for b in bodies] == [1, 2, 3]


@pytest.mark.parametrize(
    ("rpc", "python"),
    [
        ("memory.add", "add"),
        ("memory.stage.start", "stage_start"),
        ("memory.ace.strategic_context", "ace_strategic_context"),
        ("rpc.discover", "discover"),
        ("memory.import", "import_"),
    ],
)
def test_method_names(rpc: str, python: str) -> None:
    assert method_name(rpc) == python
