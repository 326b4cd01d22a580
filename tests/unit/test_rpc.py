"""The JSON-RPC 2.0 edge on a tiny method table: envelopes, batches, errors, sanitizing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from agentcore.api.metrics import RpcMetrics
from agentcore.api.params import Params
from agentcore.api.rpc import JsonRpcEndpoint, RpcMethod
from agentcore.domain.errors import Forbidden, MemoryNotFound
from agentcore.services.admission import Admission


class EchoParams(Params):
    text: str
    times: int = 1


class EchoResult(BaseModel):
    text: str


async def echo(p: EchoParams) -> EchoResult:
    if p.text == "missing":
        raise MemoryNotFound("no memory m1 in the given scope")
    if p.text == "boom":
        raise RuntimeError("password=hunter2 at /srv/secret.py line 3")
    return EchoResult(text=p.text * p.times)


@pytest.fixture
def endpoint() -> JsonRpcEndpoint:
    method = RpcMethod("echo", EchoParams, EchoResult, echo, "Echo.")
    return JsonRpcEndpoint({"echo": method}, RpcMetrics(CollectorRegistry()))


async def call(endpoint: JsonRpcEndpoint, payload: Any) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await endpoint.handle(body)


def req(params: Any = None, id_: Any = 1, method: str = "echo") -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": id_}
    if params is not None:
        out["params"] = params
    return out


async def test_success(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, req({"text": "ab", "times": 2}, id_="x"))
    assert reply == {"jsonrpc": "2.0", "result": {"text": "abab"}, "id": "x"}


async def test_malformed_json_is_a_parse_error(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, b'{"jsonrpc": "2.0", "method": ')
    assert reply["error"]["code"] == -32700
    assert reply["error"]["data"] == {"code": "PARSE_ERROR", "retryable": False}
    assert reply["id"] is None


@pytest.mark.parametrize(
    "payload",
    [
        [],
        42,
        {"jsonrpc": "1.0", "method": "echo", "id": 1},
        {"jsonrpc": "2.0", "method": 7, "id": 1},
        {"jsonrpc": "2.0", "method": "echo", "id": {"a": 1}},
        {"jsonrpc": "2.0", "method": "echo", "params": ["positional"], "id": 1},
        {"jsonrpc": "2.0", "method": "echo", "id": 1, "extra": True},
    ],
)
async def test_invalid_requests(endpoint: JsonRpcEndpoint, payload: Any) -> None:
    reply = await call(endpoint, payload)
    assert reply["error"]["code"] == -32600
    assert reply["error"]["data"]["code"] == "INVALID_REQUEST"


async def test_deeply_nested_bodies_are_bad_requests_not_crashes(
    endpoint: JsonRpcEndpoint,
) -> None:
    thousands = await call(endpoint, b"[" * 5000 + b"]" * 5000)  # past the parser's recursion
    assert thousands["error"]["code"] == -32700
    nested: Any = "x"
    for _ in range(100):
        nested = {"a": nested}
    deep = await call(endpoint, req({"text": "a", "times": 1, "extra": nested}))
    assert deep["error"]["code"] == -32600
    assert "nested deeper than 64" in deep["error"]["message"]
    assert (await call(endpoint, req({"text": "a", "times": 1})))["result"] == {"text": "a"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "method": "echo", "params": {"text": "a\\ud800"}, "id": 1}',
        b'{"jsonrpc": "2.0", "method": "echo", "params": {"text": "a", "\\udfff": 1}, "id": 1}',
        b'{"jsonrpc": "2.0", "method": "echo\\ud800", "id": 1}',
    ],
)
async def test_lone_surrogates_are_invalid_requests(endpoint: JsonRpcEndpoint, body: bytes) -> None:
    reply = await call(endpoint, body)
    assert reply["error"]["code"] == -32600
    assert "lone surrogate" in reply["error"]["message"]
    assert reply["id"] == 1
    json.dumps(reply).encode()  # the reply itself encodes
    paired = await call(endpoint, req({"text": "\U0001f642"}))  # a pair in JSON: one character
    assert paired["result"] == {"text": "\U0001f642"}


async def test_a_surrogate_in_the_id_is_answered_without_it(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, b'{"jsonrpc": "2.0", "method": "echo", "id": "\\ud800"}')
    assert reply["error"]["code"] == -32600
    assert reply["id"] is None


async def test_unknown_method(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, req({}, method="memory.nope"))
    assert reply["error"]["code"] == -32601
    assert reply["error"]["data"] == {"code": "METHOD_NOT_FOUND", "retryable": False}


async def test_wrong_types_name_the_fields(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, req({"text": 5, "times": "2", "colour": "red"}))
    error = reply["error"]
    assert error["code"] == -32602
    assert error["data"]["code"] == "INVALID_PARAMS"
    fields = {e["field"] for e in error["data"]["errors"]}
    assert fields == {"text", "times", "colour"}


async def test_missing_params_are_invalid_params(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, req())
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"]["errors"][0]["field"] == "text"


async def test_application_errors_carry_code_and_retryable(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, req({"text": "missing"}))
    assert reply["error"]["code"] == -32004
    assert reply["error"]["data"] == {"code": "MEMORY_NOT_FOUND", "retryable": False}


async def test_internal_errors_leak_nothing(endpoint: JsonRpcEndpoint) -> None:
    reply = await call(endpoint, req({"text": "boom"}))
    assert reply["error"] == {
        "code": -32603,
        "message": "Internal error",
        "data": {"code": "INTERNAL_ERROR", "retryable": True},
    }
    assert "hunter2" not in json.dumps(reply)


async def test_notifications_get_no_answer(endpoint: JsonRpcEndpoint) -> None:
    note = {"jsonrpc": "2.0", "method": "echo", "params": {"text": "hi"}}
    assert await call(endpoint, note) is None
    assert await call(endpoint, [note, {**note, "method": "nope"}]) is None


async def test_a_batch_answers_each_member(endpoint: JsonRpcEndpoint) -> None:
    batch = [
        req({"text": "a"}, id_=1),
        {"jsonrpc": "2.0", "method": "echo", "params": {"text": "note"}},
        req({"text": 1}, id_=2),
        "not a request",
        req({"text": "b"}, id_=3, method="nope"),
        req({"text": "c"}, id_=4),
    ]
    replies = await call(endpoint, batch)
    assert len(replies) == 5
    by_id = {r["id"]: r for r in replies if r["id"] is not None}
    assert by_id[1]["result"] == {"text": "a"}
    assert by_id[2]["error"]["code"] == -32602
    assert by_id[3]["error"]["code"] == -32601
    assert by_id[4]["result"] == {"text": "c"}
    assert [r["error"]["code"] for r in replies if r["id"] is None] == [-32600]


async def test_metrics_count_every_outcome_and_time_only_calls_that_ran() -> None:
    registry = CollectorRegistry()
    method = RpcMethod("echo", EchoParams, EchoResult, echo, "Echo.")
    endpoint = JsonRpcEndpoint({"echo": method}, RpcMetrics(registry))

    def refuse(_: str, params: Any) -> None:
        if params.get("text") == "refused":
            raise Forbidden("not this one")

    for text in ("a", "b", "missing", "refused"):
        await endpoint.handle(json.dumps(req({"text": text})).encode(), refuse)
    await call(endpoint, req({"text": "a"}, method="nope"))
    await call(endpoint, b"{")
    await call(endpoint, [])

    def count(method: str, outcome: str) -> float | None:
        labels = {"method": method, "outcome": outcome}
        return registry.get_sample_value("agentcore_rpc_requests_total", labels)

    assert count("echo", "ok") == 2
    assert count("echo", "MEMORY_NOT_FOUND") == 1
    assert count("echo", "FORBIDDEN") == 1
    assert count("unknown", "METHOD_NOT_FOUND") == 1
    assert count("unknown", "PARSE_ERROR") == 1
    assert count("unknown", "INVALID_REQUEST") == 1
    timed = registry.get_sample_value("agentcore_rpc_latency_seconds_count", {"method": "echo"})
    assert timed == 3  # the refused call did not run
    unknown = {"method": "unknown"}
    assert registry.get_sample_value("agentcore_rpc_latency_seconds_count", unknown) is None


async def test_a_read_runs_while_writes_wait_for_their_turn() -> None:
    """With an admission of two places (one for writes), a second write waits for the first
    while a read runs at once; every call is answered once let in."""
    release = asyncio.Event()
    ran: list[str] = []

    async def work(p: EchoParams) -> EchoResult:
        ran.append(p.text)
        if p.text.startswith("write"):
            await release.wait()
        return EchoResult(text=p.text)

    methods = {
        name: RpcMethod(name, EchoParams, EchoResult, work, "Work.")
        for name in ("memory.add", "memory.search")
    }
    endpoint = JsonRpcEndpoint(
        methods, RpcMetrics(CollectorRegistry()), admission=Admission(2, write_wait=60)
    )
    writes = [
        asyncio.create_task(endpoint.call("memory.add", {"text": f"write{n}"})) for n in (1, 2)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    read = await endpoint.call("memory.search", {"text": "read"})
    assert read["result"] == {"text": "read"}
    assert ran == ["write1", "read"]  # the second write still waits
    release.set()
    replies = await asyncio.gather(*writes)
    assert [r["result"]["text"] for r in replies] == ["write1", "write2"]
