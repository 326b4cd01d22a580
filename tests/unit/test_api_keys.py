"""API key rules: the keys file, hash lookup, access per method, scope binding, the token
bucket and the reload of the keys file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agentcore.api import auth
from agentcore.api.auth import Gate, KeyRing, RateSettings
from agentcore.domain.access import (
    Access,
    ApiKey,
    TokenBucket,
    authorize,
    find_key,
    key_digest,
    parse_keys,
)
from agentcore.domain.errors import ConfigurationError, Forbidden

ALICE = ApiKey(
    "alice-rw", key_digest("k1"), Access.WRITE, {"user_id": ("alice",), "agent_id": ("*",)}
)
READER = ApiKey("alice-r", key_digest("k2"), Access.READ, {"user_id": ("alice",)})
TASKS = ApiKey(
    "tasks", key_digest("k3"), Access.WRITE, {"user_id": ("alice",), "task_id": ("alice-*",)}
)
ADMIN = ApiKey("root", key_digest("k4"), Access.ADMIN)


def entry(**changes: Any) -> dict[str, Any]:
    return {"id": "a", "sha256": key_digest("x"), "access": "read", "scopes": {}, **changes}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "needs"),
        ({"keys": [entry(id="")]}, "unique non-empty id"),
        ({"keys": [entry(), entry()]}, "unique non-empty id"),
        ({"keys": [entry(sha256="abc")]}, "64 hex digits"),
        ({"keys": [entry(sha256="z" * 64)]}, "64 hex digits"),
        ({"keys": [entry(access="root")]}, "read, write or admin"),
        ({"keys": [entry(scopes={"tenant_id": ["a"]})]}, "scopes maps"),
        ({"keys": [entry(scopes={"user_id": "alice"})]}, "scopes maps"),
        ({"keys": ["key"]}, "not an object"),
    ],
)
def test_a_broken_keys_file_names_what_is_wrong(data: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_keys(data)


def test_keys_are_found_by_their_hash() -> None:
    keys = parse_keys(
        {
            "keys": [
                entry(id="a", sha256=key_digest("s1").upper()),
                entry(id="b", sha256=key_digest("s2")),
            ]
        }
    )
    assert find_key(keys, "s1") == keys[0]
    assert find_key(keys, "s2") == keys[1]
    assert find_key(keys, "s3") is None
    assert find_key(keys, "") is None


@pytest.mark.parametrize(
    ("key", "method", "params"),
    [
        (READER, "memory.search", {"query": "q", "user_id": "alice"}),
        (ALICE, "memory.cost.report", {"agent_id": "planner"}),  # costs are no user data
        (READER, "memory.job.get", {"job_id": "j"}),
        (ALICE, "memory.add", {"content": "c", "user_id": "alice", "agent_id": "any"}),
        (ALICE, "memory.add", {"content": "c", "agent_id": "shared"}),  # agent_id "*" granted
        (ALICE, "memory.add_batch", {"items": [{"user_id": "alice"}, {"user_id": "alice"}]}),
        (ALICE, "memory.import", {"user_id": "alice", "records": [{"content": "c"}]}),
        (TASKS, "memory.stage.start", {"task_id": "alice-42", "user_id": "alice"}),
        (TASKS, "memory.stage.get", {"stage_id": "s", "task_id": "alice-42", "user_id": "alice"}),
        (ADMIN, "memory.clear", {"layer": "episodic", "user_id": "bob"}),
        (ADMIN, "memory.cost.report", {}),
        (READER, "memory.store.batch", {"ops": [{"op": "get", "user_id": "alice"}]}),
        (ALICE, "memory.store.batch", {"ops": [{"op": "put", "user_id": "alice"}]}),
        (ADMIN, "memory.store.batch", {"ops": [{"op": "search", "namespace_prefix": []}]}),
    ],
)
def test_allowed_calls(key: ApiKey, method: str, params: dict[str, Any]) -> None:
    authorize(key, method, params)


@pytest.mark.parametrize(
    ("key", "method", "params", "reason"),
    [
        (READER, "memory.add", {"content": "c", "user_id": "alice"}, "read access"),
        (READER, "memory.stage.start", {"task_id": "t", "user_id": "alice"}, "read access"),
        (ALICE, "memory.clear", {"layer": "episodic", "user_id": "alice"}, "needs admin"),
        (ALICE, "memory.cost.report", {}, "needs admin"),
        (ALICE, "memory.search", {"query": "q", "user_id": "bob"}, "user_id='bob'"),
        (READER, "memory.search", {"query": "q", "agent_id": "planner"}, "agent_id"),
        (ALICE, "memory.add", {"content": "c", "user_id": "alice", "team_id": "t"}, "team_id"),
        (ALICE, "memory.add_batch", {"items": [{"user_id": "alice"}, {"task_id": "t"}]}, "task"),
        (ALICE, "memory.add_batch", {"items": [{"user_id": "alice"}, {"user_id": "bob"}]}, "bob"),
        (ALICE, "memory.import", {"user_id": "alice", "records": [{"user_id": "bob"}]}, "bob"),
        (TASKS, "memory.stage.start", {"task_id": "bob-1", "user_id": "alice"}, "bob-1"),
        (TASKS, "memory.stage.get", {"stage_id": "s", "user_id": "alice"}, "task_id"),
        (ALICE, "memory.stage.current", {"task_id": "t", "user_id": "alice"}, "task_id"),
        (READER, "memory.store.batch", {"ops": [{"op": "put", "user_id": "alice"}]}, "read acc"),
        (ALICE, "memory.store.batch", {"ops": [{"op": "get", "user_id": "bob"}]}, "bob"),
        (ALICE, "memory.store.batch", {"ops": [{"op": "search"}]}, "needs admin"),
        (
            ALICE,
            "memory.store.batch",
            {"ops": [{"op": "get", "user_id": "alice"}, {"op": "list_namespaces"}]},
            "needs admin",
        ),
    ],
)
def test_forbidden_calls(key: ApiKey, method: str, params: dict[str, Any], reason: str) -> None:
    with pytest.raises(Forbidden, match=reason) as refused:
        authorize(key, method, params)
    assert refused.value.details["key_id"] == key.id


def test_unknown_methods_need_write_access() -> None:
    with pytest.raises(Forbidden):
        authorize(READER, "memory.something_new", {"user_id": "alice"})


def test_token_bucket_refills_at_its_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(0.0) == 0.5
    assert bucket.take(0.25) == 0.25
    assert bucket.take(0.5) == 0.0
    assert bucket.take(100.0) == 0.0  # never more than the burst
    assert [bucket.take(100.0) for _ in range(3)][-1] > 0


def test_the_gate_refuses_web_pages_unless_their_origin_is_allowed() -> None:
    gate = Gate(None, RateSettings(), CollectorRegistry(), ["https://app.example"])
    assert gate.admit(None, None) is None  # an agent: no Origin, open service
    assert gate.admit(None, "https://app.example") is None
    with pytest.raises(Forbidden, match="AGENTCORE_ALLOWED_ORIGINS"):
        gate.admit(None, "https://evil.example")
    with pytest.raises(Forbidden):
        gate.admit(None, "null")  # a sandboxed page or a file


def write_keys(path: Path, *entries: dict[str, Any]) -> None:
    path.write_text(json.dumps({"keys": list(entries)}))


def test_key_ring_reloads_a_changed_file_and_keeps_its_keys_when_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(auth.time, "monotonic", lambda: clock[0])
    path = tmp_path / "keys.json"
    write_keys(path, entry(id="first", sha256=key_digest("one")))
    ring = KeyRing(path)
    assert ring.lookup("one") is not None
    write_keys(
        path,
        entry(id="first", sha256=key_digest("one")),
        entry(id="second", sha256=key_digest("two")),
    )
    os.utime(path, ns=(0, 10**18))  # a new modification time even within the clock's tick
    assert ring.lookup("two") is None  # checked at most once a second
    clock[0] += 1.5
    assert ring.lookup("two") is not None
    path.write_text("{not json")
    os.utime(path, ns=(0, 2 * 10**18))
    clock[0] += 1.5
    assert ring.lookup("two") is not None  # a broken file keeps the keys read before
    path.unlink()
    clock[0] += 1.5
    assert ring.lookup("one") is not None


def test_key_ring_refuses_a_broken_file_at_start(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text('{"keys": [{"id": "a"}]}')
    with pytest.raises(ConfigurationError, match=r"keys\.json"):
        KeyRing(path)
    with pytest.raises(ConfigurationError, match=r"missing\.json"):
        KeyRing(tmp_path / "missing.json")
