"""Hostile input against the real server process (issue 17): every method of ``rpc.discover``
gets params that fit its schema and mutations of them (wrong types, boundary and oversized
values, hostile unicode, unknown and missing params), and the endpoint gets broken JSON, broken
envelopes, deep nesting and huge and mixed batches. For every case:

- no internal error (-32603 / ``INTERNAL_ERROR``) and a well-formed JSON-RPC reply;
- nothing internal in a reply (tracebacks, file paths, driver or class names) that the request
  did not contain itself;
- a rejected call leaves the stored state unchanged (the SQLite file's rows, and working memory
  through the API);
- the server keeps answering, and logs no unexpected exception.

Hypothesis runs derandomized (the same cases on every run); the counts of cases are printed
at the end of the module and recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore.api.runtime import PENDING_STAGES_SECONDS
from tests.fuzz.hostile import SCOPE_IDS, Schemas, hostile_text, hostile_value
from tests.server_process import Server

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LEAK_MARKERS = (
    "Traceback",
    'File "',
    ".py",
    "sqlalchemy",
    "sqlite3",
    "psycopg",
    "asyncpg",
    "qdrant",
    "onnxruntime",
    "pydantic_core",
    "object at 0x",
    "NoneType",
    "KeyError",
    "AttributeError",
    "TypeError",
    "IndexError",
    "UnicodeEncodeError",
    "RecursionError",
)
# Tables whose rows change without a call: derived indexes and queues, and access counters.
VOLATILE_TABLES = ("vector_outbox", "store_settings", "alembic_version")
VOLATILE_COLUMNS = {"access_count", "last_accessed_at"}

COUNTS: Counter[str] = Counter()


class Stored:
    """The stored state of the server's SQLite file, hashed; re-hashed only after a commit."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._version: int | None = None
        self._tables: dict[str, str] = {}

    def close(self) -> None:
        self._db.close()

    def digest(self) -> str:
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._version, self._tables = version, self._hash()
        return ",".join(f"{table}:{digest}" for table, digest in sorted(self._tables.items()))

    def _hash(self) -> dict[str, str]:
        tables = [
            row[0]
            for row in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
            )
            if not row[0].startswith(("sqlite_", "memory_lexical"))
            and row[0] not in VOLATILE_TABLES
        ]
        digests = {}
        for table in tables:
            columns = [r[1] for r in self._db.execute(f'PRAGMA table_info("{table}")')]
            kept = ", ".join(f'"{c}"' for c in columns if c not in VOLATILE_COLUMNS)
            h = hashlib.sha256()
            for row in self._db.execute(f'SELECT {kept} FROM "{table}" ORDER BY 1'):
                h.update(repr(row).encode())
            digests[table] = h.hexdigest()[:16]
        return digests


def changed(before: str, after: str) -> list[str]:
    """The tables whose rows differ between two digests."""
    old, new = (
        dict(p.split(":") for p in before.split(",")),
        dict(p.split(":") for p in after.split(",")),
    )
    return sorted(t for t in old.keys() | new.keys() if old.get(t) != new.get(t))


class Fuzzer:
    def __init__(self, server: Server, stored: Stored) -> None:
        self.server = server
        self.http = httpx.Client(timeout=120)
        self.stored = stored
        self.memory_ids: list[str] = []
        document = self.call_ok("rpc.discover")
        self.methods = {m["name"]: m for m in document["methods"]}
        self.schemas = Schemas(document, self.memory_ids)

    def close(self) -> None:
        self.http.close()
        self.stored.close()

    def call_ok(self, method: str, **params: Any) -> Any:
        reply = self.post(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        )
        assert "result" in reply, reply
        return reply["result"]

    def post(self, body: str | bytes) -> Any:
        response = self.http.post(
            self.server.url, content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code in (200, 204, 413), response.status_code
        if response.status_code == 204:
            return None
        text = response.text
        request_text = body if isinstance(body, str) else body.decode("utf-8", "replace")
        for marker in LEAK_MARKERS:
            assert marker not in text or marker in request_text, f"{marker!r} leaked: {text[:500]}"
        return response.json()

    def settled(self, working: bool, quiet: float = 0.3) -> tuple[str, str]:
        """The state once two reads ``quiet`` seconds apart agree (background steps have
        finished)."""
        state = self.stored.digest(), self.working_state() if working else ""
        for _ in range(50):
            time.sleep(quiet)
            previous, state = state, (self.stored.digest(), self.working_state() if working else "")
            if state == previous:
                break
        return state

    def assert_rejection_changed_nothing(
        self, body: str | bytes, before: tuple[str, str], working: bool
    ) -> None:
        """A rejected ``body`` left the state as ``before``; if a background step committed
        meanwhile, the body is sent once more when nothing else is being written."""
        after = self.stored.digest(), self.working_state() if working else ""
        if after == before:
            return
        before = self.settled(working)
        again = self.post(body)
        after = self.stored.digest(), self.working_state() if working else ""
        shown = body if isinstance(body, str) else body.decode("utf-8", "replace")
        assert "error" not in again or after == before, (
            f"rejected call changed {changed(before[0], after[0])}: {shown[:300]}"
        )

    def working_state(self) -> str:
        views = [
            self.call_ok("memory.working.get", session_id=session)
            for session in SCOPE_IDS["session_id"]
        ]
        return json.dumps(views, sort_keys=True)

    def check(self, method: Any, params: Any, *, raw_params: bool = False) -> None:
        """One call: a well-formed reply, no internal error; a rejection changes nothing."""
        member: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
        if raw_params or params is not None:
            member["params"] = params
        body = json.dumps(member, allow_nan=True)
        working = isinstance(method, str) and method.startswith(
            ("memory.working", "memory.session")
        )
        before = self.stored.digest(), self.working_state() if working else ""
        reply = self.post(body)
        COUNTS["calls"] += 1
        assert_reply(reply, 7)
        if "error" in reply:
            COUNTS["rejected"] += 1
            self.assert_rejection_changed_nothing(body, before, working)
        else:
            COUNTS["accepted"] += 1
            result = reply["result"]
            if isinstance(result, dict) and isinstance(result.get("memory_id"), str):
                self.memory_ids.append(result["memory_id"])


def assert_reply(reply: Any, request_id: Any) -> None:
    assert isinstance(reply, dict), reply
    assert reply.get("jsonrpc") == "2.0", reply
    assert reply.get("id") in (request_id, None), reply
    assert ("result" in reply) != ("error" in reply), reply
    if "error" in reply:
        error = reply["error"]
        assert isinstance(error["code"], int), reply
        assert isinstance(error["message"], str), reply
        assert error["code"] != -32603, f"internal error: {reply}"
        assert error["data"]["code"] != "INTERNAL_ERROR", reply
        COUNTS["code:" + error["data"]["code"]] += 1


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzer]:
    data = tmp_path_factory.mktemp("data")
    log = data / "server.log"
    quiet = {"EXPIRY_SWEEP_SECONDS": "86400", "CONSOLIDATION_INTERVAL_SECONDS": "0"}
    server = Server(data, env=quiet, log=log)
    server.start()
    fuzzer = None
    try:
        fuzzer = Fuzzer(server, Stored(data / "agentcore.db"))
        yield fuzzer
        assert httpx.get(f"{server.base}/health", timeout=30).status_code == 200
        assert server.process is not None
        assert server.process.poll() is None
    finally:
        if fuzzer is not None:
            fuzzer.close()
        server.stop()
        logged = log.read_text(errors="replace")
        print(f"\nhostile input: {dict(sorted(COUNTS.items()))}")
    assert "failed unexpectedly" not in logged, logged[-3000:]
    assert "Traceback" not in logged, logged[-3000:]


def _mutated(fuzzer: Fuzzer, data: st.DataObject) -> tuple[str, Any, bool]:
    name = data.draw(st.sampled_from(sorted(fuzzer.methods)), label="method")
    schema = {
        "properties": {p["name"]: p["schema"] for p in fuzzer.methods[name]["params"]},
        "required": [p["name"] for p in fuzzer.methods[name]["params"] if p["required"]],
    }
    params: Any = dict(data.draw(fuzzer.schemas.params(schema), label="plausible"))
    mutation = data.draw(
        st.sampled_from(
            ["none", "none", "value", "value", "value", "drop", "extra", "not_object", "method"]
        ),
        label="mutation",
    )
    if mutation == "value":
        names = sorted(schema["properties"]) or ["x"]
        for target in data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3)):
            params[target] = data.draw(hostile_value(), label=target)
    elif mutation == "drop" and params:
        params.pop(data.draw(st.sampled_from(sorted(params))))
    elif mutation == "extra":
        params[data.draw(hostile_text(), label="extra name")] = data.draw(hostile_value())
    elif mutation == "not_object":
        return (
            name,
            data.draw(
                st.one_of(st.lists(hostile_value(), max_size=3), hostile_text(), st.integers())
            ),
            True,
        )
    elif mutation == "method":
        name = data.draw(
            st.sampled_from(
                [name.upper(), name + ".", "rpc." + name, " " + name, name.split(".")[0]]
            )
        )
    return name, params, False


@settings(FUZZ, max_examples=2500)
@given(data=st.data())
def test_every_method_survives_hostile_params(fuzzer: Fuzzer, data: st.DataObject) -> None:
    method, params, raw = _mutated(fuzzer, data)
    fuzzer.check(method, params, raw_params=raw)


BROKEN_BODIES = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200),
    st.sampled_from(
        [
            "",
            "{",
            "[",
            "[]",
            "null",
            "0",
            '"x"',
            '{"jsonrpc":"2.0","method":"memory.get","params":{"memory_id":"a","user_id":"u"},"id":1',
            '{"jsonrpc":"2.0","method":"memory.add","params":{"content":NaN,"user_id":"u"},"id":1}',
            '{"jsonrpc":"2.0","method":"memory.add","params":{"content":"x","user_id":"u","importance":Infinity},"id":1}',
            '{"jsonrpc":"2.0","method":"memory.list","params":{"user_id":"u","limit":1e999},"id":1}',
            '{"jsonrpc":"2.0","method":"memory.list","params":{"user_id":"u","limit":'
            + "9" * 5000
            + '},"id":1}',
            '{"jsonrpc":"2.0","jsonrpc":"1.0","method":"memory.health","id":1}',
            '{"jsonrpc":"2.0","method":"memory.health","id":{"a":1}}',
            '{"jsonrpc":"2.0","method":"memory.health","id":1.5}',
            '{"jsonrpc":"2.0","method":"memory.health","id":true}',
            '{"jsonrpc":"2.0","method":"memory.health","params":null,"id":1}',
            '{"jsonrpc":"2.0","method":null,"id":1}',
            '{"jsonrpc":2.0,"method":"memory.health","id":1}',
            '{"method":"memory.health","id":1}',
            '\ufeff{"jsonrpc":"2.0","method":"memory.health","id":1}',
        ]
    ),
    st.integers(min_value=1, max_value=100_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=1, max_value=100_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(min_value=1, max_value=200).map(
        lambda n: json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "memory.add",
                "params": {"content": "x", "user_id": "fz-u1", "metadata": _nested(n)},
            }
        )
    ),
)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


@settings(FUZZ, max_examples=400)
@given(body=BROKEN_BODIES)
def test_broken_bodies_get_json_rpc_errors(fuzzer: Fuzzer, body: str | bytes) -> None:
    before = fuzzer.stored.digest(), ""
    reply = fuzzer.post(body)
    COUNTS["bodies"] += 1
    if isinstance(reply, list):
        for member in reply:
            assert_reply(member, member.get("id"))
        return
    if reply is None:  # a notification
        return
    assert_reply(reply, reply.get("id"))
    if "error" in reply:
        fuzzer.assert_rejection_changed_nothing(body, before, working=False)


@settings(FUZZ, max_examples=150)
@given(data=st.data())
def test_mixed_batches_answer_each_member(fuzzer: Fuzzer, data: st.DataObject) -> None:
    members = []
    for n in range(data.draw(st.integers(min_value=1, max_value=40), label="size")):
        method, params, _ = _mutated(fuzzer, data)
        member: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if data.draw(st.booleans(), label="has id"):
            member["id"] = n
        members.append(data.draw(st.one_of(st.just(member), hostile_value()), label="member"))
    reply = fuzzer.post(json.dumps(members, allow_nan=True))
    COUNTS["batches"] += 1
    COUNTS["batch members"] += len(members)
    expected = {m["id"] for m in members if isinstance(m, dict) and isinstance(m.get("id"), int)}
    replies = reply or []
    assert isinstance(replies, list)
    for member in replies:
        assert_reply(member, member.get("id"))
    assert expected <= {m.get("id") for m in replies}


@pytest.mark.parametrize("size", [1000, 10_000])
def test_huge_batches_are_answered_whole(fuzzer: Fuzzer, size: int) -> None:
    members = [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "memory.get",
            "params": {"memory_id": f"m{n}", "user_id": "fz-u1"},
        }
        if n % 3
        else {"jsonrpc": "2.0", "id": n, "method": "memory.nope"}
        for n in range(size)
    ]
    # Earlier calls' background work is done: the stages they ended are compressed by a loop
    # every PENDING_STAGES_SECONDS, so the state must hold still for longer than that.
    before = fuzzer.settled(working=False, quiet=PENDING_STAGES_SECONDS + 1)[0]
    replies = fuzzer.post(json.dumps(members))
    COUNTS["batch members"] += size
    assert len(replies) == size
    for member in replies:
        assert_reply(member, member["id"])
    assert fuzzer.stored.digest() == before


def test_a_body_over_the_limit_is_refused(fuzzer: Fuzzer) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory.add",
            "params": {"content": "x" * (17 * 2**20), "user_id": "fz-u1"},
        }
    )
    reply = fuzzer.post(body)
    assert reply["error"]["data"]["code"] == "INVALID_REQUEST"
