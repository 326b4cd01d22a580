"""``AgentCoreStore`` (LangGraph's ``BaseStore``) against a real ``agentcore serve``, embedded
and PostgreSQL + Redis, with API keys: the cases of LangGraph's own store tests (batches,
namespaces and their validation, list_namespaces, filters, search with and without a query,
TTL), sync and async, and what the service adds (scores with factors, users' scopes, keys)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from agentcore.client import MemoryClient, RpcError
from agentcore.integrations.langgraph import AgentCoreStore, ScoredItem, readable
from tests.e2e.conftest import BOTH, served
from tests.server_process import Server


def _key(keys_file: Path, key_id: str, access: str, *scopes: str) -> str:
    argv = [sys.executable, "-m", "agentcore.cli", "keys", "create", "--id", key_id]
    argv += ["--access", access, "--file", str(keys_file), *scopes]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


class Service:
    def __init__(self, server: Server, keys: dict[str, str]) -> None:
        self.server = server
        self.keys = keys

    def store(self, key: str = "admin", **kwargs: object) -> AgentCoreStore:
        return AgentCoreStore(self.server.base, api_key=self.keys[key], **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=BOTH)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    keys_file = tmp_path_factory.mktemp("keys") / "keys.json"
    keys = {
        "admin": _key(keys_file, "admin", "admin"),
        "alice": _key(keys_file, "alice", "write", "--user-id", "alice"),
        "alice-read": _key(keys_file, "alice-read", "read", "--user-id", "alice"),
    }
    env = {"AGENTCORE_API_KEYS_FILE": str(keys_file)}
    with served(request, tmp_path_factory, env) as server:
        yield Service(server, keys)


_runs = iter(range(1_000_000))


@pytest.fixture
def root() -> str:
    """A first label of this test's own (the service lives for the module)."""
    return f"t{next(_runs)}"


@pytest.fixture
def store(service: Service) -> Iterator[AgentCoreStore]:
    with service.store() as s:
        yield s


def test_batch_order(store: AgentCoreStore, root: str) -> None:
    store.put((root, "foo"), "key1", {"data": "value1"})
    store.put((root, "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(namespace=(root, "foo"), key="key1"),
            PutOp(namespace=(root, "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=(root,), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(
                match_conditions=(MatchCondition("prefix", (root,)),), max_depth=None, limit=10
            ),
            GetOp(namespace=(root,), key="key3"),
        ]
    )
    assert isinstance(results[0], Item)
    assert results[0].value == {"data": "value1"}
    assert results[0].key == "key1"
    assert results[0].namespace == (root, "foo")
    assert results[1] is None
    assert [i.key for i in results[2]] == ["key1"]  # type: ignore[union-attr]
    assert sorted(results[3]) == [(root, "bar"), (root, "foo")]  # type: ignore[type-var]
    assert results[4] is None


def test_put_get_replace_delete(store: AgentCoreStore, root: str) -> None:
    ns = (root, "documents")
    store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = store.get(ns, "doc1")
    assert item is not None
    assert item.namespace == ns
    assert item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    store.put(ns, "doc1", {"title": "Updated"})  # a put replaces the whole value
    updated = store.get(ns, "doc1")
    assert updated is not None
    assert updated.value == {"title": "Updated"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at
    assert store.get((root, "other_documents"), "doc1") is None
    store.delete(ns, "doc1")
    assert store.get(ns, "doc1") is None
    store.delete(ns, "doc1")  # deleting what is not there is no error


def test_keys_and_labels_are_taken_literally(store: AgentCoreStore, root: str) -> None:
    """A key may hold dots and a label LIKE's wildcards; neither reaches another item."""
    store.put((root, "a"), "b.c", {"v": 1})
    store.put((root, "a", "b"), "c", {"v": 2})
    store.put((root, "user_1"), "k", {"v": 3})
    store.put((root, "userX1"), "k", {"v": 4})
    store.put((root, "a%b"), "k", {"v": 5})
    store.put((root, "axxb"), "k", {"v": 6})
    assert store.get((root, "a"), "b.c").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get((root, "a", "b"), "c").value == {"v": 2}  # type: ignore[union-attr]
    assert {i.namespace for i in store.search((root, "user_1"))} == {(root, "user_1")}
    assert {i.namespace for i in store.search((root, "a%b"))} == {(root, "a%b")}
    store.put((root, "ünïcødé", "日本"), "ключ", {"текст": "héllo wörld"})
    found = store.get((root, "ünïcødé", "日本"), "ключ")
    assert found is not None
    assert found.value == {"текст": "héllo wörld"}


def test_namespace_validation(store: AgentCoreStore, service: Service) -> None:
    for bad in [(), ("",), ("a", ""), ("a.b",), ("langgraph", "x"), ("a\x00",)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.search(("a.b",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("a.b",))
    # The service refuses them too (a caller without LangGraph's checks), changing nothing.
    with MemoryClient(service.server.base, api_key=service.keys["admin"]) as client:
        for bad_ns in [["a.b"], [""], []]:
            op = {"op": "put", "project_id": "p", "namespace": bad_ns, "key": "k", "value": {}}
            with pytest.raises(RpcError) as refused:
                client.store_batch([op])
            assert refused.value.code == "INVALID_PARAMS"
        with pytest.raises(RpcError) as refused:
            client.store_batch([{"op": "put", "namespace": ["x"], "key": "k", "value": {}}])
        assert refused.value.code == "MISSING_IDENTIFIER"
        # Every op is checked before any runs: a bad one changes nothing.
        good = {"op": "put", "project_id": "p", "namespace": ["ok"], "key": "k", "value": {}}
        bad = {"op": "search", "project_id": "p", "filter": {"n": [1]}}
        with pytest.raises(RpcError) as refused:
            client.store_batch([good, bad])
        assert refused.value.code == "INVALID_PARAMS"
        assert refused.value.data["errors"][0]["field"] == "ops.1.filter.n"
        got = {"op": "get", "project_id": "p", "namespace": ["ok"], "key": "k"}
        assert client.store_batch([got])["results"] == [None]
        long_key = {"op": "put", "project_id": "p", "namespace": ["n"] * 30, "key": "k" * 200}
        with pytest.raises(RpcError) as refused:
            client.store_batch([{**long_key, "value": {}}])
        assert refused.value.code == "INVALID_PARAMS"


def test_list_namespaces(store: AgentCoreStore, root: str) -> None:
    namespaces = [
        (root, "test", "documents", "public"),
        (root, "test", "documents", "private"),
        (root, "test", "images", "public"),
        (root, "test", "images", "private"),
        (root, "prod", "documents", "public"),
        (root, "prod", "documents", "private"),
    ]
    for ns in namespaces:
        store.put(ns, "dummy", {"content": "dummy"})
    assert store.list_namespaces(prefix=(root,), limit=100) == sorted(namespaces)
    assert len(store.list_namespaces(prefix=(root, "test"))) == 4
    public = store.list_namespaces(prefix=(root,), suffix=("public",))
    assert sorted(public) == sorted(ns for ns in namespaces if ns[-1] == "public")
    assert store.list_namespaces(prefix=(root,), max_depth=3) == [
        (root, "prod", "documents"),
        (root, "test", "documents"),
        (root, "test", "images"),
    ]
    assert store.list_namespaces(prefix=(root, "*", "documents")) == sorted(
        ns for ns in namespaces if ns[2] == "documents"
    )
    assert store.list_namespaces(prefix=(root, "*", "*", "private"), limit=100) == sorted(
        ns for ns in namespaces if ns[3] == "private"
    )
    first = store.list_namespaces(prefix=(root,), limit=3)
    rest = store.list_namespaces(prefix=(root,), limit=3, offset=3)
    assert first + rest == sorted(namespaces)
    assert store.list_namespaces(prefix=(root, "nothing")) == []


def test_list_namespaces_segment_boundaries(store: AgentCoreStore, root: str) -> None:
    for ns in [
        (root, "foo"),
        (root, "foo", "child"),
        (root, "foobar"),
        (root, "uid", "users", "alice"),
        (root, "uid", "users", "malice"),
        (root, "uid", "a", "b", "alice"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=(root, "foo"))) == {
        (root, "foo"),
        (root, "foo", "child"),
    }
    assert set(store.list_namespaces(prefix=(root,), suffix=("alice",))) == {
        (root, "uid", "users", "alice"),
        (root, "uid", "a", "b", "alice"),
    }
    assert store.list_namespaces(prefix=(root, "uid", "*", "alice")) == [
        (root, "uid", "users", "alice")
    ]
    assert {i.namespace for i in store.search((root, "fo"))} == set()
    assert {i.namespace for i in store.search((root, "foo"))} == {
        (root, "foo"),
        (root, "foo", "child"),
    }


def test_search_by_namespace_and_filter(store: AgentCoreStore, root: str) -> None:
    data = [
        (
            (root, "docs"),
            "doc1",
            {"title": "First Doc", "author": "Alice", "stars": 5, "meta": {"lang": "en"}},
        ),
        ((root, "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "stars": 2}),
        (
            (root, "images"),
            "img1",
            {"title": "Image 1", "author": "Alice", "stars": 3, "meta": {"lang": "pt"}},
        ),
    ]
    for ns, key, value in data:
        store.put(ns, key, value)
    everything = store.search((root,))
    assert [i.key for i in everything] == ["img1", "doc2", "doc1"]  # the last updated first
    assert all(i.score is None for i in everything)
    assert {i.key for i in store.search((root, "docs"))} == {"doc1", "doc2"}
    assert {i.key for i in store.search((root,), filter={"author": "Alice"})} == {"doc1", "img1"}
    assert {i.key for i in store.search((root,), filter={"stars": {"$gt": 2}})} == {"doc1", "img1"}
    assert {i.key for i in store.search((root,), filter={"stars": {"$gte": 2, "$lt": 5}})} == {
        "doc2",
        "img1",
    }
    assert {i.key for i in store.search((root,), filter={"stars": {"$lte": 2}})} == {"doc2"}
    assert {i.key for i in store.search((root,), filter={"author": {"$ne": "Alice"}})} == {"doc2"}
    assert {i.key for i in store.search((root,), filter={"author": {"$eq": "Bob"}})} == {"doc2"}
    assert {i.key for i in store.search((root,), filter={"meta": {"lang": "pt"}})} == {"img1"}
    # As LangGraph's in-memory store: a missing field is "not equal" and equals None.
    assert {i.key for i in store.search((root,), filter={"meta": {"$ne": "x"}})} == {
        "doc1",
        "doc2",
        "img1",
    }
    assert {i.key for i in store.search((root,), filter={"meta": None})} == {"doc2"}
    assert {i.key for i in store.search((root,), filter={"author": "Alice", "stars": 3})} == {
        "img1"
    }
    assert len(store.search((root,), limit=2)) == 2
    assert [i.key for i in store.search((root,), offset=2)] == ["doc1"]
    with pytest.raises(RpcError) as refused:
        store.search((root,), filter={"stars": {"$regex": "x"}})
    assert refused.value.code == "INVALID_PARAMS"


TRAVEL = [
    ("pref1", {"text": "Prefers aisle seats on long flights", "kind": "preference"}),
    ("pref2", {"text": "Is allergic to peanuts and shellfish", "kind": "health"}),
    ("fact1", {"text": "Lives in Porto since moving from Lisbon in March", "kind": "fact"}),
    ("fact2", {"text": "Works as a nurse at the city hospital, night shifts", "kind": "fact"}),
    ("plan1", {"text": "Planning a hiking trip to the Azores in June", "kind": "plan"}),
]


def test_search_with_a_query_ranks_by_meaning(store: AgentCoreStore, root: str) -> None:
    ns = (root, "traveller")
    for key, value in TRAVEL:
        store.put(ns, key, value)
    home = store.search(ns, query="Which city does she live in?", limit=3)
    assert home[0].key == "fact1"
    assert isinstance(home[0], ScoredItem)
    assert home[0].score is not None
    assert home[0].score >= home[1].score  # type: ignore[operator]
    assert home[0].factors is not None
    assert {"similarity", "recency"} <= set(home[0].factors)
    assert home[0].memory_id
    assert home[0].scope == "project"
    food = store.search(ns, query="what can't she eat", limit=2)
    assert food[0].key == "pref2"
    facts = store.search(ns, query="her job", filter={"kind": "fact"})
    assert [i.key for i in facts][:1] == ["fact2"]
    assert {i.key for i in facts} == {"fact1", "fact2"}
    page1 = store.search(ns, query="travel and trips", limit=2)
    page2 = store.search(ns, query="travel and trips", limit=2, offset=2)
    assert len(page1) == 2
    assert len(page2) == 2
    assert not {i.key for i in page1} & {i.key for i in page2}
    assert len(store.search(ns, query="travel and trips", limit=10)) == 5
    assert len(store.search(ns, query="")) == 5  # an empty query: search without one


def test_index_fields_and_unindexed_items(store: AgentCoreStore, root: str) -> None:
    ns = (root, "indexed")
    store.put(ns, "a", {"title": "Quarterly budget", "body": "The marketing spend grows 10%"})
    store.put(ns, "b", {"title": "Team offsite", "body": "Kayaking on the river"}, index=["title"])
    store.put(ns, "c", {"title": "Kayak rental", "body": "kayak kayak"}, index=False)
    found = store.search(ns, query="kayaking trip", limit=3)
    assert [i.key for i in found] == ["b", "a", "c"]  # not indexed: after the ranked, no score
    assert found[0].score is not None
    assert found[2].score is None
    assert store.get(ns, "c") is not None  # found by key whatever its indexing


def test_default_index_fields(service: Service, root: str) -> None:
    with service.store(index={"fields": ["summary"]}) as store:
        ns = (root, "fields")
        store.put(ns, "x", {"summary": "Solar panels on the roof", "notes": "dentist appointment"})
        store.put(ns, "y", {"summary": "Dentist on Tuesday", "notes": "roof repair"})
        assert [i.key for i in store.search(ns, query="the dentist", limit=1)] == ["y"]
        assert [i.key for i in store.search(ns, query="solar energy roof", limit=1)] == ["x"]


def test_ttl(service: Service, root: str) -> None:
    minutes = 4 / 60  # four seconds
    with service.store(ttl={"default_ttl": minutes, "refresh_on_read": True}) as store:
        ns = (root, "ttl")
        store.put(ns, "kept", {"text": "refreshed by reads"})
        store.put(ns, "left", {"text": "never read"})
        store.put(ns, "forever", {"text": "no expiry"}, ttl=None)
        for _ in range(3):
            time.sleep(2)
            assert store.get(ns, "kept") is not None  # each read moves its expiry
        assert store.get(ns, "left", refresh_ttl=False) is None  # 6 s: gone
        store.put(ns, "left", {"text": "put again"}, ttl=None)  # expired, not swept: free
        again = store.get(ns, "left")
        assert again is not None
        assert again.value == {"text": "put again"}
        store.delete(ns, "left")
        time.sleep(3)  # 9 s: "kept" expires at 10 s
        assert {i.key for i in store.search(ns, query="refreshed", refresh_ttl=True)} == {
            "kept",
            "forever",
        }
        time.sleep(2)  # 11 s: alive only because the search moved its expiry to 13 s
        assert store.get(ns, "kept", refresh_ttl=False) is not None
        time.sleep(2.5)
        assert store.get(ns, "kept", refresh_ttl=False) is None
        assert [i.key for i in store.search(ns)] == ["forever"]


def test_users_scopes_and_keys(service: Service, root: str) -> None:
    """With ``user_label``, a user's namespaces are that user's memories: memory.search sees
    them, and a key for one user cannot reach another's through the store."""
    with service.store(user_label=1) as admin:
        admin.put((root, "alice"), "home", {"text": "Alice lives in Lisbon"})
        admin.put((root, "bob"), "home", {"text": "Bob lives in Madrid"})
        admin.put((root,), "shared", {"text": "Both like jazz"})
        assert {i.namespace for i in admin.search((root,))} == {
            (root, "alice"),
            (root, "bob"),
            (root,),
        }
    with MemoryClient(service.server.base, api_key=service.keys["alice"]) as client:
        hits = client.search("where does Alice live", user_id="alice")["results"]
        assert any(h["memory"]["content"] == "Alice lives in Lisbon" for h in hits)
    with service.store("alice", user_label=1) as alice:
        alice.put((root, "alice", "notes"), "n1", {"text": "Call mum on Sunday"})
        assert alice.get((root, "alice"), "home") is not None
        assert [i.key for i in alice.search((root, "alice"), query="sunday call")][:1] == ["n1"]
        assert alice.list_namespaces(prefix=(root, "alice")) == [
            (root, "alice"),
            (root, "alice", "notes"),
        ]
        for attempt in (
            lambda: alice.get((root, "bob"), "home"),
            lambda: alice.put((root, "bob"), "x", {"v": 1}),
            lambda: alice.search((root, "bob")),
            lambda: alice.search((root,)),  # every user's items: an admin key's
            lambda: alice.list_namespaces(prefix=(root,)),
            lambda: alice.get((root,), "shared"),  # the store's own scope
        ):
            with pytest.raises(RpcError) as refused:
                attempt()
            assert refused.value.code == "FORBIDDEN"
    with service.store("alice-read", user_label=1) as reader:
        assert reader.get((root, "alice"), "home") is not None
        with pytest.raises(RpcError) as refused:
            reader.put((root, "alice"), "x", {"v": 1})
        assert refused.value.code == "FORBIDDEN"
    with service.store(user_label=1) as admin:
        assert admin.get((root, "bob"), "x") is None


def test_async_operations(store: AgentCoreStore, root: str) -> None:
    async def scenario() -> None:
        ns = (root, "async")
        await store.aput(ns, "k1", {"text": "Alice lives in Porto"})
        await store.aput(ns, "k2", {"text": "Alice works as a nurse"})
        item = await store.aget(ns, "k1")
        assert item is not None
        assert item.value == {"text": "Alice lives in Porto"}
        found = await store.asearch(ns, query="Alice's home town", limit=1)
        assert [i.key for i in found] == ["k1"]
        assert found[0].score is not None
        assert await store.alist_namespaces(prefix=(root,)) == [ns]
        await store.adelete(ns, "k1")
        assert await store.aget(ns, "k1") is None
        results = await store.abatch(
            [GetOp(ns, "k2"), SearchOp((root,), filter={"text": "Alice works as a nurse"})]
        )
        assert results[0].key == "k2"  # type: ignore[union-attr]
        assert [i.key for i in results[1]] == ["k2"]  # type: ignore[union-attr]
        with pytest.raises(InvalidNamespaceError):
            await store.aput(("a.b",), "k", {"v": 1})
        await store.aclose()

    asyncio.run(scenario())


def test_concurrent_async_calls_share_one_request(store: AgentCoreStore, root: str) -> None:
    async def scenario() -> None:
        ns = (root, "many")
        await store.aput(ns, "first", {"n": -1})  # the loop's client exists now
        group = next(iter(store._async.values()))
        sent: list[int] = []
        batch = group.client.store_batch

        async def counting(ops: list[dict[str, object]], **params: object) -> dict[str, object]:
            sent.append(len(ops))
            return await batch(ops, **params)

        group.client.store_batch = counting  # type: ignore[method-assign]
        await asyncio.gather(*(store.aput(ns, f"k{n}", {"n": n}) for n in range(150)))
        assert sent == [100, 50]  # one turn of the loop: its ops, 100 a request
        sent.clear()
        items = await asyncio.gather(*(store.aget(ns, f"k{n}") for n in range(20)))
        assert [i.value["n"] for i in items if i is not None] == list(range(20))
        assert sent == [20]
        await store.aclose()

    asyncio.run(scenario())


def test_readable_text() -> None:
    assert readable({"content": "Alice moved"}) == "Alice moved"
    assert readable({"a": "x", "b": {"c": 1, "d": ["y", "z"]}}) == "a: x\nb.c: 1\nb.d: y\nb.d: z"
