"""API keys, access levels, scopes, rate limits, the metrics token and TLS, against the real
server process over a socket (docs/security.md)."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server_process import Server

METRICS_TOKEN = "metrics-secret"


def create_key(keys_file: Path, key_id: str, access: str, *scopes: str) -> str:
    """``agentcore keys create``: the key on stdout once, its hash in the file."""
    argv = [sys.executable, "-m", "agentcore.cli", "keys", "create", "--id", key_id]
    argv += ["--access", access, "--file", str(keys_file), *scopes]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keys") / "keys.json"


@pytest.fixture(scope="module")
def keys(keys_file: Path) -> dict[str, str]:
    return {
        "admin": create_key(keys_file, "ops-admin", "admin"),
        "alice_rw": create_key(
            keys_file, "alice-rw", "write", "--user-id", "alice", "--agent-id", "*"
        ),
        "alice_r": create_key(keys_file, "alice-r", "read", "--user-id", "alice"),
        "burst": create_key(keys_file, "burst", "read", "--user-id", "*"),
    }


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, keys_file: Path, keys: dict[str, str]
) -> Iterator[Server]:
    settings = {
        "AGENTCORE_API_KEYS_FILE": str(keys_file),
        "AGENTCORE_METRICS_TOKEN": METRICS_TOKEN,
        "API_RATE_LIMIT_PER_SECOND": "2",
        "API_RATE_LIMIT_BURST": "40",
    }
    s = Server(tmp_path_factory.mktemp("data"), env=settings)
    s.start()
    yield s
    s.stop()


def post(server: Server, body: Any, key: str | None) -> httpx.Response:
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    return httpx.post(server.url, json=body, headers=headers, timeout=60)


def call(server: Server, key: str | None, method: str, **params: Any) -> dict[str, Any]:
    reply: dict[str, Any] = post(
        server, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, key
    ).json()
    return reply


def error_code(reply: dict[str, Any]) -> str:
    code: str = reply["error"]["data"]["code"]
    return code


def test_health_needs_no_key_and_rpc_needs_one(server: Server) -> None:
    assert httpx.get(f"{server.base}/health", timeout=10).status_code == 200
    for key in (None, "ak_not-a-key", "ak"):
        response = post(server, {"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"}, key)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == -32012
        assert error_code(response.json()) == "UNAUTHORIZED"
    basic = httpx.post(server.url, json={}, headers={"authorization": "Basic YTpi"}, timeout=10)
    assert basic.status_code == 401


def test_read_key_reads_its_scope_and_writes_nothing(server: Server, keys: dict[str, str]) -> None:
    added = call(
        server, keys["alice_rw"], "memory.add", content="Alice prefers tea", user_id="alice"
    )
    memory_id = added["result"]["memory_id"]
    found = call(
        server, keys["alice_r"], "memory.search", query="what does alice drink", user_id="alice"
    )
    assert found["result"]["results"][0]["memory"]["id"] == memory_id
    assert (
        call(server, keys["alice_r"], "memory.get", memory_id=memory_id, user_id="alice")["result"][
            "content"
        ]
        == "Alice prefers tea"
    )
    for method, params in (
        ("memory.add", {"content": "Alice likes coffee now", "user_id": "alice"}),
        ("memory.delete", {"memory_id": memory_id, "user_id": "alice"}),
        ("memory.stage.start", {"task_id": "t1", "stage": "planning", "user_id": "alice"}),
    ):
        refused = call(server, keys["alice_r"], method, **params)
        assert refused["error"]["code"] == -32013
        assert error_code(refused) == "FORBIDDEN"
        assert "read access" in refused["error"]["message"]
    listed = call(server, keys["admin"], "memory.list", user_id="alice")["result"]
    assert [m["content"] for m in listed["memories"]] == ["Alice prefers tea"]


def test_write_key_is_bound_to_its_scopes(server: Server, keys: dict[str, str]) -> None:
    key = keys["alice_rw"]
    assert "result" in call(
        server,
        key,
        "memory.add",
        content="Alice's plan is due",
        user_id="alice",
        agent_id="planner",
    )
    for params in (
        {"content": "Bob's secret", "user_id": "bob"},  # another user
        {"content": "A session note", "session_id": "s1"},  # a field it has no values for
        {"content": "A team note", "user_id": "alice", "team_id": "red"},
    ):
        refused = call(server, key, "memory.add", **params)
        assert error_code(refused) == "FORBIDDEN", params
    batch = call(
        server,
        key,
        "memory.add_batch",
        items=[{"content": "mine", "user_id": "alice"}, {"content": "theirs", "user_id": "bob"}],
    )
    assert error_code(batch) == "FORBIDDEN"
    assert "user_id='bob'" in batch["error"]["message"]
    assert (
        call(server, key, "memory.search", query="secret", user_id="bob")["error"]["data"]["code"]
        == "FORBIDDEN"
    )
    assert (
        call(server, key, "memory.clear", layer="episodic", user_id="alice")["error"]["data"][
            "code"
        ]
        == "FORBIDDEN"
    )
    bob = call(server, keys["admin"], "memory.list", user_id="bob")["result"]
    assert bob["total_count"] == 0  # nothing refused was stored


def test_admin_clears_any_scope_and_reports_every_cost(
    server: Server, keys: dict[str, str]
) -> None:
    admin = keys["admin"]
    call(server, admin, "memory.add", content="Carol's note", user_id="carol")
    assert (
        call(server, admin, "memory.clear", layer="episodic", user_id="carol")["result"][
            "deleted_count"
        ]
        == 1
    )
    assert "result" in call(server, admin, "memory.cost.report")
    assert error_code(call(server, keys["alice_rw"], "memory.cost.report")) == "FORBIDDEN"


def test_a_batch_refuses_only_its_forbidden_calls(server: Server, keys: dict[str, str]) -> None:
    body = [
        {"jsonrpc": "2.0", "id": 1, "method": "memory.list", "params": {"user_id": "alice"}},
        {"jsonrpc": "2.0", "id": 2, "method": "memory.list", "params": {"user_id": "bob"}},
    ]
    replies = {r["id"]: r for r in post(server, body, keys["alice_r"]).json()}
    assert "result" in replies[1]
    assert error_code(replies[2]) == "FORBIDDEN"


def test_rate_limit_answers_rate_limited_with_retry_after(
    server: Server, keys: dict[str, str]
) -> None:
    body = [
        {"jsonrpc": "2.0", "id": n, "method": "memory.list", "params": {"user_id": "x"}}
        for n in range(60)
    ]
    replies = post(server, body, keys["burst"]).json()
    limited = [r for r in replies if "error" in r]
    assert 15 <= len(limited) <= 20  # a burst of 40, refilled at 2/s while the batch runs
    assert {r["error"]["code"] for r in limited} == {-32011}
    assert all(0 < r["error"]["data"]["retry_after"] <= 0.5 for r in limited)
    time.sleep(1.0)  # two tokens back
    assert "result" in call(server, keys["burst"], "memory.list", user_id="x")
    assert "result" in call(server, keys["alice_r"], "memory.list", user_id="alice")  # own bucket


def test_metrics_need_their_token_and_name_keys_by_id(server: Server, keys: dict[str, str]) -> None:
    assert httpx.get(f"{server.base}/metrics", timeout=10).status_code == 401
    wrong = {"authorization": f"Bearer {keys['admin']}"}
    assert httpx.get(f"{server.base}/metrics", headers=wrong, timeout=10).status_code == 401
    right = {"authorization": f"Bearer {METRICS_TOKEN}"}
    text = httpx.get(f"{server.base}/metrics", headers=right, timeout=10).text
    assert 'agentcore_api_key_calls_total{key_id="alice-r",outcome="forbidden"}' in text
    assert 'agentcore_rate_limited_total{key_id="burst"}' in text
    assert all(key not in text for key in keys.values())


def test_a_key_added_to_the_file_works_without_a_restart(server: Server, keys_file: Path) -> None:
    new_key = create_key(keys_file, "dave-rw", "write", "--user-id", "dave")
    stored = json.loads(keys_file.read_text())
    assert new_key not in keys_file.read_text()
    assert {k["id"] for k in stored["keys"]} >= {"dave-rw", "ops-admin"}
    deadline = time.monotonic() + 5
    while "error" in (
        reply := call(server, new_key, "memory.add", content="Dave's note", user_id="dave")
    ):
        assert error_code(reply) == "UNAUTHORIZED"
        assert time.monotonic() < deadline, "the new key was not picked up"
        time.sleep(0.3)
    duplicate = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentcore.cli",
            "keys",
            "create",
            "--id",
            "dave-rw",
            "--access",
            "read",
            "--file",
            str(keys_file),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert duplicate.returncode == 2
    assert "exists already" in duplicate.stderr


def test_the_cli_sends_its_api_key(server: Server, keys: dict[str, str]) -> None:
    refused = server.cli("list", "--user-id", "alice")
    assert refused.returncode == 1
    assert "UNAUTHORIZED" in refused.stderr
    listed = server.cli("list", "--user-id", "alice", "--api-key", keys["alice_r"])
    assert listed.returncode == 0, listed.stderr
    server.env["AGENTCORE_API_KEY"] = keys["alice_r"]
    try:
        assert server.cli("list", "--user-id", "alice").returncode == 0
    finally:
        del server.env["AGENTCORE_API_KEY"]


def test_production_mode_refuses_to_serve_open(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "agentcore.cli", "serve", "--port", "1"]
    servers = {  # the keys are checked before any store is reached
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/none",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "QDRANT_URL": "http://127.0.0.1:1",
    }
    env = {**Server(tmp_path).env, "AGENTCORE_MODE": "production", **servers}
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "AGENTCORE_API_KEYS_FILE" in refused.stderr


def test_tls_serves_https(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    s = Server(
        tmp_path / "data",
        serve_args=["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)],
        tls=True,
    )
    s.verify = ssl.create_default_context(cafile=str(cert))
    s.start()
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory.add",
            "params": {"content": "over TLS", "user_id": "t"},
        }
        reply = httpx.post(s.url, json=body, verify=s.verify, timeout=60).json()
        assert reply["result"]["memory_id"]
        with pytest.raises(httpx.HTTPError):
            httpx.post(s.url.replace("https", "http"), json=body, timeout=10)
    finally:
        s.stop()
