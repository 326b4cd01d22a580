"""The OpenSpec Knowledge Provider face over real HTTP (uvicorn on a loopback port), on both
backends, with API keys: every endpoint, bad input, scopes, and the change stream."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agentcore.api.app import create_app
from agentcore.api.openspec.openapi import ENDPOINTS
from agentcore.config import Settings
from agentcore.domain.access import key_digest
from tests.conftest import REDIS_SHIFT, empty_redis, migrate

REDIS_DB = 10 - REDIS_SHIFT
K = "/openspec/v1/knowledge"
KEYS = {
    "admin": ("admin", {}),
    "alice": ("write", {"user_id": ["alice", "alice-*"], "session_id": ["s-*"], "agent_id": ["*"]}),
    "alice_read": ("read", {"user_id": ["alice", "alice-*"]}),
    "bob": ("write", {"user_id": ["bob"]}),
}


@dataclass
class Served:
    base: str
    secrets: dict[str, str]

    def headers(self, key: str | None = "admin") -> dict[str, str]:
        return {} if key is None else {"authorization": f"Bearer {self.secrets[key]}"}

    def client(self, key: str | None = "admin") -> httpx.Client:
        return httpx.Client(base_url=self.base, headers=self.headers(key), timeout=60)


def _keys_file(path: Path) -> dict[str, str]:
    secrets = {name: f"key-{name}-{uuid.uuid4().hex}" for name in KEYS}
    entries = [
        {"id": name, "sha256": key_digest(secrets[name]), "access": access, "scopes": scopes}
        for name, (access, scopes) in KEYS.items()
    ]
    path.write_text(json.dumps({"keys": entries}))
    return secrets


@pytest.fixture(
    scope="module",
    params=[
        "embedded",
        pytest.param("production", marks=[pytest.mark.postgres, pytest.mark.redis]),
    ],
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("data")
    secrets = _keys_file(data / "keys.json")
    common: dict[str, Any] = {
        "agentcore_data_dir": data,
        "agentcore_api_keys_file": data / "keys.json",
        "api_rate_limit_burst": 0,
        "expiry_sweep_seconds": 0.2,
    }
    if request.param == "embedded":
        settings = Settings(**common)
        migrate(settings.sqlalchemy_url)
    else:
        database: str = request.getfixturevalue("postgres_url")
        settings = Settings(**common, database_url=database, redis_url=empty_redis(REDIS_DB))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        create_app(settings), ws="none", log_level="error", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert thread.is_alive(), "the server stopped"
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", secrets)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        if request.param == "production":
            empty_redis(REDIS_DB)


def _user() -> str:
    return f"alice-{uuid.uuid4().hex[:8]}"


def _create(c: httpx.Client, **body: Any) -> dict[str, Any]:
    r = c.post(f"{K}/create", json=body)
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


def _error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    error: dict[str, Any] = r.json()["error"]
    assert error["code"] == code, error
    assert "Traceback" not in r.text
    return error


# -- discovery and the document -------------------------------------------------------------


def test_discovery_names_the_seven_layers_and_what_serves_them(served: Served) -> None:
    with served.client("alice_read") as c:
        found = c.get(K).json()
    assert [layer["name"] for layer in found["layers"]] == [
        "Working", "Session", "Episodic", "Semantic", "Procedural", "UserPersonal", "Archival"
    ]  # fmt: skip
    by_name = {layer["name"]: layer for layer in found["layers"]}
    assert by_name["UserPersonal"]["scope_levels"] == ["user"]
    assert by_name["Session"]["agentcore_layers"] == ["episodic"]
    assert found["protocol_version"] == "1.0.0"
    assert found["max_batch"] == 100
    assert found["embedding"]["dimension"] > 0
    assert found["embedding"]["model"]
    assert next(s["level"] for s in found["scopes"]) == "task"
    assert "create" in found["stream"]["event_types"]


def test_the_openapi_document_lists_every_route_and_its_refs_resolve(served: Served) -> None:
    with served.client() as c:
        doc = c.get("/openspec/v1/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    for method, path, _ in ENDPOINTS:
        assert method.lower() in doc["paths"][path], (method, path)
    schemas = doc["components"]["schemas"]
    refs = {
        ref.rsplit("/", 1)[1]
        for ref in _values(doc, "$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/")
    }
    assert refs <= set(schemas)
    create = schemas["CreateRequest"]["properties"]["layer"]["enum"]
    assert "UserPersonal" in create
    assert "memory_id" not in schemas["UpdateRequest"]["properties"]


def _values(node: Any, name: str) -> Iterator[Any]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == name:
                yield value
            yield from _values(value, name)
    elif isinstance(node, list):
        for value in node:
            yield from _values(value, name)


# -- create, update, metadata, delete, query -------------------------------------------------


def test_each_spec_layer_is_stored_where_its_mapping_says(served: Served) -> None:
    user = _user()
    ids = {"user_id": user, "session_id": f"s-{user}", "agent_id": f"a-{user}"}
    with served.client("alice") as c:
        for layer, ours, level in [
            ("Session", "episodic", "session"),
            ("Episodic", "episodic", "agent"),
            ("Semantic", "semantic", "agent"),
            ("procedural", "procedural", "agent"),
            ("user_personal", "semantic", "user"),
        ]:
            made = _create(c, content=f"a note for {layer}", layer=layer, **ids)
            assert made["layer"].lower() == layer.lower().replace("_", "")
            assert (made["memory"]["layer"], made["memory"]["scope"]) == (ours, level)
        working = _create(c, content="the goal now", layer="Working", session_id=f"s-{user}")
        assert working["layer"] == "Working"
        assert working["working_item"]["content"]
        _error(c.post(f"{K}/create", json={"content": "x", "layer": "Archival", **ids}), 400,
               "MISSING_IDENTIFIER")  # fmt: skip
        found = c.post(
            f"{K}/query", json={"query": "goal", "layers": ["Working"], "session_id": f"s-{user}"}
        ).json()
        assert [i["content"] for i in found["working"]] == ["the goal now"]


def test_query_ranks_with_the_factor_breakdown_and_serves_a_layer_by_its_mapping(
    served: Served,
) -> None:
    user = _user()
    with served.client("alice") as c:
        fact = _create(c, content="Alice drinks oolong tea every morning", layer="UserPersonal",
                       user_id=user)  # fmt: skip
        _create(c, content="The deploy runs on Fridays", layer="Session", user_id=user,
                session_id=f"s-{user}")  # fmt: skip
        body = {"query": "what tea does alice drink", "user_id": user, "session_id": f"s-{user}"}
        mine = c.post(f"{K}/query", json={**body, "layers": ["UserPersonal"]}).json()
        everything = c.post(f"{K}/query", json={**body, "limit": 5}).json()
    assert [h["id"] for h in mine["results"]] == [fact["id"]]
    hit = mine["results"][0]
    assert hit["layer"] == "UserPersonal"
    assert 0 < hit["score"] <= 1
    assert set(hit["factors"]) == {
        "similarity", "recency", "frequency", "stage_relevance", "criticality", "error_correction"
    }  # fmt: skip
    assert everything["results"][0]["id"] == fact["id"]
    assert {h["layer"] for h in everything["results"]} == {"UserPersonal", "Session"}


def test_update_metadata_and_delete(served: Served) -> None:
    user = _user()
    with served.client("alice") as c:
        made = _create(c, content="Alice likes green tea", user_id=user, tags=["drinks"])
        url = f"{K}/{made['id']}"
        updated = c.put(url, json={"content": "Alice likes black tea", "user_id": user})
        assert updated.status_code == 200, updated.text
        assert updated.json()["memory"]["content"] == "Alice likes black tea"
        meta = c.get(f"{url}/metadata", params={"user_id": user}).json()
        assert "content" not in json.dumps(meta)
        assert meta["history"]["by_type"] == {"create": 1, "update": 1}
        assert meta["access"]["access_count"] == 0
        assert meta["tags"] == ["drinks"]
        assert meta["provenance"]["source"] == "api"
        assert meta["validity"]["valid_to"] is None
        assert c.delete(url, params={"user_id": user}).json() == {"id": made["id"], "deleted": True}
        _error(c.get(f"{url}/metadata", params={"user_id": user}), 404, "MEMORY_NOT_FOUND")
        _error(c.delete(url, params={"user_id": user}), 404, "MEMORY_NOT_FOUND")


def test_an_id_of_another_scope_is_a_404_that_reveals_nothing(served: Served) -> None:
    with served.client("bob") as c:
        bobs = _create(c, content="Bob's secret plan", user_id="bob")["id"]
    missing = str(uuid.uuid4())
    with served.client("admin") as c:  # may name any scope: only the scope decides
        answers = []
        for memory_id in (bobs, missing):
            url = f"{K}/{memory_id}"
            answers.append(
                [
                    _error(c.get(f"{url}/metadata", params={"user_id": "alice"}), 404,
                           "MEMORY_NOT_FOUND"),
                    _error(c.put(url, json={"content": "x", "user_id": "alice"}), 404,
                           "MEMORY_NOT_FOUND"),
                    _error(c.delete(url, params={"user_id": "alice"}), 404, "MEMORY_NOT_FOUND"),
                ]
            )  # fmt: skip
        assert json.dumps(answers[0]).replace(bobs, "ID") == json.dumps(answers[1]).replace(
            missing, "ID"
        )
        assert c.get(f"{K}/{bobs}/metadata", params={"user_id": "bob"}).status_code == 200


def test_bad_input_is_refused_with_its_code(served: Served) -> None:
    with served.client("alice") as c:
        e = _error(c.post(f"{K}/query", json={"query": "x", "user_id": "alice", "limit": "ten"}),
                   400, "INVALID_PARAMS")  # fmt: skip
        assert e["details"]["errors"][0]["field"] == "limit"
        _error(c.post(f"{K}/query", json={"query": "x", "user_id": "alice", "layers": ["Dreams"]}),
               400, "INVALID_LAYER")  # fmt: skip
        _error(c.post(f"{K}/query", json={"query": "x", "user_id": "alice", "layers": "Semantic"}),
               400, "INVALID_PARAMS")  # fmt: skip
        _error(c.post(f"{K}/create", json={"content": ["x"], "user_id": "alice"}), 400,
               "INVALID_PARAMS")  # fmt: skip
        _error(c.post(f"{K}/create", json={"content": "x", "user_id": 7, "layer": "Semantic"}),
               400, "INVALID_PARAMS")  # fmt: skip
        _error(c.post(f"{K}/create", json={"content": "x"}), 400, "MISSING_IDENTIFIER")
        _error(c.post(f"{K}/create", content=b"{not json"), 400, "PARSE_ERROR")
        _error(c.post(f"{K}/create", json=[1, 2]), 400, "INVALID_REQUEST")
        _error(c.get(f"{K}/x/metadata", params={"user_id": "alice", "debug": "1"}), 400,
               "INVALID_PARAMS")  # fmt: skip
        _error(c.get(f"{K}/stream", params={"user_id": "alice", "last_event_id": "-1"}), 400,
               "INVALID_PARAMS")  # fmt: skip


def test_keys_limit_every_endpoint_to_their_scopes_and_access(served: Served) -> None:
    with httpx.Client(base_url=served.base) as anonymous:
        _error(anonymous.get(K), 401, "UNAUTHORIZED")
        _error(anonymous.get(f"{K}/stream", params={"user_id": "alice"}), 401, "UNAUTHORIZED")
    with served.client("alice_read") as c:
        _error(c.post(f"{K}/create", json={"content": "x", "user_id": "alice"}), 403, "FORBIDDEN")
        _error(c.post(f"{K}/query", json={"query": "x", "user_id": "bob"}), 403, "FORBIDDEN")
        _error(c.get(f"{K}/stream", params={"user_id": "bob"}), 403, "FORBIDDEN")
        assert c.post(f"{K}/query", json={"query": "x", "user_id": "alice"}).status_code == 200
    with served.client("alice") as c:
        _error(c.delete(f"{K}/{uuid.uuid4()}", params={"user_id": "bob"}), 403, "FORBIDDEN")


def test_a_batch_answers_each_operation_alone(served: Served) -> None:
    user = _user()
    with served.client("alice") as c:
        kept = _create(c, content="to be changed", user_id=user)["id"]
        gone = _create(c, content="to be deleted", user_id=user)["id"]
        operations = [
            {"op": "create", "content": "made in a batch", "user_id": user},
            {"op": "update", "id": kept, "content": "changed in a batch", "user_id": user},
            {"op": "delete", "id": gone, "user_id": user},
            {"op": "delete", "id": str(uuid.uuid4()), "user_id": user},
            {"op": "create", "content": 3, "user_id": user},
            {"op": "create", "content": "not mine", "user_id": "bob"},
            {"op": "explode"},
        ]
        r = c.post(f"{K}/batch", json={"operations": operations})
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [x["status"] for x in results] == [201, 200, 200, 404, 400, 403, 400]
        assert [x["error"]["code"] for x in results[3:]] == [
            "MEMORY_NOT_FOUND", "INVALID_PARAMS", "FORBIDDEN", "INVALID_PARAMS"
        ]  # fmt: skip
        assert r.json()["succeeded"] == 3
        meta = c.get(f"{K}/{kept}/metadata", params={"user_id": user}).json()
        assert meta["history"]["by_type"] == {"create": 1, "update": 1}
        too_many = [{"op": "create", "content": f"n{i}", "user_id": user} for i in range(101)]
        _error(c.post(f"{K}/batch", json={"operations": too_many}), 400, "INVALID_PARAMS")


# -- the stream ------------------------------------------------------------------------------


@dataclass
class Sse:
    id: str | None
    event: str
    data: dict[str, Any]


@asynccontextmanager
async def _subscribe(
    served: Served, key: str, params: dict[str, str], last_event_id: str | None = None
) -> AsyncIterator[tuple[asyncio.Queue[Sse], httpx.Response]]:
    """The stream's events arrive in the queue while the block runs."""
    headers = served.headers(key)
    if last_event_id is not None:
        headers["last-event-id"] = last_event_id
    queue: asyncio.Queue[Sse] = asyncio.Queue()
    async with (
        httpx.AsyncClient(base_url=served.base, timeout=60) as client,
        client.stream("GET", f"{K}/stream", params=params, headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")

        async def read() -> None:
            fields: dict[str, str] = {}
            async for line in response.aiter_lines():
                if line == "":
                    if "data" in fields:
                        queue.put_nowait(
                            Sse(fields.get("id"), fields.get("event", "message"),
                                json.loads(fields["data"]))
                        )  # fmt: skip
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.3)  # subscribed: the stream starts at the head
        try:
            yield queue, response
        finally:
            reader.cancel()


async def _take(queue: asyncio.Queue[Sse], count: int, seconds: float = 120) -> list[Sse]:
    got: list[Sse] = []
    try:
        async with asyncio.timeout(seconds):
            while len(got) < count:
                got.append(await queue.get())
    except TimeoutError:
        last = got[-1].id if got else None
        pytest.fail(f"in {seconds} s the stream brought {len(got)} of {count} events (last {last})")
    return got


async def test_a_thousand_concurrent_writes_arrive_in_order_and_resume_exactly(
    served: Served,
) -> None:
    user = _user()
    async with _subscribe(served, "alice", {"user_id": user}) as (queue, _):
        async with httpx.AsyncClient(
            base_url=served.base, headers=served.headers("alice"), timeout=120
        ) as client:
            gate = asyncio.Semaphore(32)

            async def create(n: int) -> str:
                async with gate:
                    r = await client.post(
                        f"{K}/create", json={"content": f"event {n}", "user_id": user}
                    )
                    assert r.status_code == 201, r.text
                    return str(r.json()["id"])

            written = await asyncio.gather(*(create(n) for n in range(1000)))
        events = await _take(queue, 1000)
        await asyncio.sleep(0.3)
        assert queue.empty()  # nothing more, nothing twice
    positions = [int(e.id or 0) for e in events]
    assert positions == sorted(set(positions))
    assert sorted(e.data["memory_id"] for e in events) == sorted(written)
    assert {e.event for e in events} == {"create"}

    middle = events[499].id
    async with _subscribe(served, "alice", {"user_id": user}, last_event_id=middle) as (again, _):
        resumed = await _take(again, 500)
        await asyncio.sleep(0.3)
        assert again.empty()
    assert [e.id for e in resumed] == [e.id for e in events[500:]]


async def test_two_subscribers_see_only_their_own_scopes(served: Served) -> None:
    one, two = _user(), _user()
    async with (
        _subscribe(served, "alice", {"user_id": one}) as (first, _),
        _subscribe(served, "alice", {"user_id": two}) as (second, _),
        httpx.AsyncClient(base_url=served.base, headers=served.headers("alice")) as client,
    ):
        for n in range(6):
            user = (one, two)[n % 2]
            r = await client.post(f"{K}/create", json={"content": f"m{n}", "user_id": user})
            assert r.status_code == 201
        got_one, got_two = await _take(first, 3), await _take(second, 3)
        await asyncio.sleep(0.3)
        assert first.empty()
        assert second.empty()
    assert {e.data["scope_id"] for e in got_one} == {one}
    assert {e.data["scope_id"] for e in got_two} == {two}
    assert [e.data["after"]["content"] for e in got_one] == ["m0", "m2", "m4"]


async def test_a_key_streams_only_what_it_may_read(served: Served) -> None:
    async with (
        _subscribe(served, "alice_read", {"user_id": "alice"}) as (queue, _),
        httpx.AsyncClient(base_url=served.base) as client,
    ):
        for key, user in (("bob", "bob"), ("alice", "alice")):
            body = {"content": f"said by {user}", "user_id": user}
            r = await client.post(f"{K}/create", json=body, headers=served.headers(key))
            assert r.status_code == 201
        (event,) = await _take(queue, 1)
        await asyncio.sleep(0.3)
        assert queue.empty()
    assert event.data["after"]["content"] == "said by alice"


async def test_every_kind_of_change_is_on_the_stream(served: Served) -> None:
    user = _user()
    rpc = f"{served.base}/rpc"

    async def call(client: httpx.AsyncClient, method: str, **params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = (await client.post(rpc, json=body)).json()
        assert "result" in reply, reply
        return reply["result"]

    async with (
        _subscribe(served, "admin", {"user_id": user, "project_id": f"p-{user}"}) as (queue, _),
        httpx.AsyncClient(headers=served.headers("admin"), timeout=60) as c,
    ):
        seen: set[str] = set()

        async def until(*kinds: str) -> None:
            try:
                async with asyncio.timeout(60):
                    while not set(kinds) <= seen:
                        seen.add((await queue.get()).event)
            except TimeoutError:
                pytest.fail(f"in 60 s the stream brought {sorted(seen)}, not {sorted(kinds)}")

        a = (await call(c, "memory.add", content="I live in Berlin.", user_id=user))["memory_id"]
        await call(c, "memory.add", content="I moved to Munich last month.", user_id=user)
        # The update is read behind the reply: wait for it before ``a`` is deleted below (a
        # deleted memory is superseded by nothing).
        await until("supersede")
        await call(c, "memory.update", memory_id=a, tags=["home"], user_id=user)
        b = (await call(c, "memory.add", content="Standup is at nine.", user_id=user))["memory_id"]
        c2 = (await call(c, "memory.add", content="Standup is in room 4.", user_id=user))[
            "memory_id"
        ]
        await call(c, "memory.compact", memory_ids=[b, c2], user_id=user)
        d = (await call(c, "memory.add", content="Ship on Fridays.", user_id=user))["memory_id"]
        await call(
            c, "memory.promote", memory_id=d, user_id=user, project_id=f"p-{user}",
            target_scope="project",
        )  # fmt: skip
        await call(c, "memory.add", content="a passing note", ttl_seconds=1, user_id=user)
        await call(c, "memory.delete", memory_id=a, user_id=user)
        await until("create", "update", "delete", "supersede", "promote", "compact", "expire")
