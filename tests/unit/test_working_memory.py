"""WorkingMemoryService on the in-process store, with a fake episodic sink and a word counter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.adapters.working.local_store import LocalWorkingMemoryStore
from agentcore.api.handlers.working import working_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.domain.errors import (
    ContentTooLong,
    InvalidParams,
    MissingIdentifier,
    ProviderError,
)
from agentcore.domain.models import ScopeIds
from agentcore.services.ports import EpisodeItem
from agentcore.services.working_memory import Snapshot, WorkingMemoryService
from tests.unit.conftest import FakeClock

TTL = 3600
S1 = ScopeIds(session_id="s1", user_id="alice", agent_id="a1")


class WordCounter:
    """One token per word: token arithmetic a test can do in its head."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class FakeSink:
    """Records what it was given; can fail on demand; checks that every item it receives is
    still owed in the store's outbox (nothing is removed before the sink has it)."""

    def __init__(self, store: LocalWorkingMemoryStore) -> None:
        self.store = store
        self.calls: list[tuple[ScopeIds, list[EpisodeItem], str]] = []
        self.failures = 0
        self.received_while_owed = True

    async def record(self, scope: ScopeIds, items: Sequence[EpisodeItem], reason: str) -> list[str]:
        if self.failures:
            self.failures -= 1
            raise ProviderError("episodic store unavailable")
        assert scope.session_id is not None
        owed = {d.item.id for d in await self.store.outbox(scope.session_id)}
        self.received_while_owed &= all(item.id in owed for item in items)
        self.calls.append((scope, list(items), reason))
        return [item.id for item in items]

    def items(self, reason: str | None = None) -> list[EpisodeItem]:
        return [i for _, items, r in self.calls if reason in (None, r) for i in items]


class Harness:
    def __init__(self, max_tokens: int = 10) -> None:
        self.clock = FakeClock()
        self.store = LocalWorkingMemoryStore()
        self.sink = FakeSink(self.store)
        self.service = WorkingMemoryService(
            self.store,
            WordCounter(),
            self.sink,
            self.clock,
            max_tokens=max_tokens,
            ttl_seconds=TTL,
            max_content_length=200,
        )


@pytest.fixture
def h() -> Harness:
    return Harness()


async def test_append_counts_tokens_and_get_returns_items_oldest_first(h: Harness) -> None:
    first = await h.service.append(S1, "plan the trip", kind="goal", stage_id="st1")
    second = await h.service.append(S1, "book two tickets now", role="user")
    assert (first.item.tokens, first.item.kind, first.item.stage_id) == (3, "goal", "st1")
    assert (second.item.kind, second.item.role, second.token_count) == ("message", "user", 7)
    view = await h.service.get("s1")
    assert [i.id for i in view.items] == [first.item.id, second.item.id]
    assert (view.token_count, view.max_tokens, view.ttl_seconds) == (7, 10, TTL)
    assert view.items[0].scope == S1


async def test_the_bound_evicts_the_oldest_items_into_the_sink(h: Harness) -> None:
    ids = [(await h.service.append(S1, f"w{i} x y")).item.id for i in range(5)]
    view = await h.service.get("s1")
    assert view.token_count == 9
    assert [i.id for i in view.items] == ids[2:]
    assert [i.id for i in h.sink.items("evicted")] == ids[:2]
    assert h.sink.calls[0][0] == S1  # the scope ids of the append go with the items
    assert h.sink.received_while_owed
    assert await h.store.outbox("s1") == []


async def test_one_append_can_evict_several_items(h: Harness) -> None:
    for word in ("a", "b", "c"):
        await h.service.append(S1, word)
    out = await h.service.append(S1, "nine words that fill almost all of the room")
    assert [i.content for i in out.departed] == ["a", "b"]
    assert out.token_count == 10


async def test_an_item_larger_than_the_bound_is_refused_and_nothing_changes(h: Harness) -> None:
    await h.service.append(S1, "keep me")
    with pytest.raises(ContentTooLong) as caught:
        await h.service.append(S1, " ".join(["word"] * 11))
    assert caught.value.details["max_tokens"] == 10
    assert [i.content for i in (await h.service.get("s1")).items] == ["keep me"]
    assert h.sink.calls == []


@pytest.mark.parametrize(
    ("scope", "content", "kind", "role", "error"),
    [
        (ScopeIds(user_id="alice"), "hi", "message", None, MissingIdentifier),
        (S1, "   ", "message", None, InvalidParams),
        (S1, "x" * 201, "message", None, ContentTooLong),
        (S1, "hi", "note", None, InvalidParams),
        (S1, "hi", "message", "robot", InvalidParams),
    ],
)
async def test_bad_appends_are_refused(
    h: Harness,
    scope: ScopeIds,
    content: str,
    kind: str,
    role: str | None,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        await h.service.append(scope, content, kind=kind, role=role)
    assert await h.store.snapshot("s1") == Snapshot([], None)


async def test_a_failing_sink_loses_nothing_and_the_sweep_retries(h: Harness) -> None:
    for i in range(3):
        await h.service.append(S1, f"m{i} a b")
    h.sink.failures = 1
    out = await h.service.append(S1, "m3 a b")  # evicts m0; the sink fails; append succeeds
    assert [i.content for i in out.departed] == ["m0 a b"]
    assert [d.item.content for d in await h.store.outbox("s1")] == ["m0 a b"]
    assert h.sink.calls == []
    report = await h.service.sweep_idle()
    assert report.items_handed_off == 1
    assert [i.content for i in h.sink.items("evicted")] == ["m0 a b"]
    assert await h.store.outbox("s1") == []


async def test_flush_moves_everything_to_the_sink(h: Harness) -> None:
    ids = [(await h.service.append(S1, f"m{i}", stage_id=f"st{i % 2}")).item.id for i in range(3)]
    out = await h.service.flush("s1")
    assert (out.flushed, out.memory_ids) == (3, ids)
    flushed = h.sink.items("flushed")
    assert [(i.id, i.stage_id) for i in flushed] == [
        (ids[0], "st0"),
        (ids[1], "st1"),
        (ids[2], "st0"),
    ]
    view = await h.service.get("s1")
    assert (view.items, view.token_count, view.ttl_seconds) == ([], 0, 0)
    assert await h.store.snapshot("s1") == Snapshot([], None)  # the session is forgotten


async def test_a_failed_flush_raises_keeps_the_items_owed_and_can_be_retried(h: Harness) -> None:
    await h.service.append(S1, "remember the milk")
    h.sink.failures = 1
    with pytest.raises(ProviderError):
        await h.service.flush("s1")
    assert (await h.service.get("s1")).items == []
    out = await h.service.flush("s1")
    assert out.flushed == 0  # nothing left in working memory, but the owed item went now
    assert [i.content for i in h.sink.items("flushed")] == ["remember the milk"]


async def test_clear_drops_items_without_a_trace(h: Harness) -> None:
    await h.service.append(S1, "secret draft")
    await h.service.append(S1, "another")
    assert await h.service.clear("s1") == 2
    assert (await h.service.get("s1")).items == []
    assert h.sink.calls == []
    assert await h.service.clear("s1") == 0


async def test_the_sweep_flushes_sessions_idle_past_the_ttl(h: Harness) -> None:
    await h.service.append(S1, "old news")
    h.clock.advance(TTL / 2)
    s2 = ScopeIds(session_id="s2")
    await h.service.append(s2, "fresh news")
    assert (await h.service.get("s1")).ttl_seconds == TTL / 2
    h.clock.advance(TTL / 2 + 1)
    report = await h.service.sweep_idle()
    assert (report.idle_sessions, report.items_handed_off) == (1, 1)
    assert [(i.content, r) for _, items, r in h.sink.calls for i in items] == [("old news", "idle")]
    assert [i.content for i in (await h.service.get("s2")).items] == ["fresh news"]
    assert await h.store.snapshot("s1") == Snapshot([], None)  # the session is forgotten


async def test_a_write_refreshes_the_ttl(h: Harness) -> None:
    await h.service.append(S1, "first")
    h.clock.advance(TTL - 10)
    await h.service.append(S1, "second")
    h.clock.advance(20)
    assert (await h.service.sweep_idle()).idle_sessions == 0
    assert len((await h.service.get("s1")).items) == 2


async def test_reading_an_idle_session_flushes_it(h: Harness) -> None:
    await h.service.append(S1, "stale")
    h.clock.advance(TTL + 1)
    view = await h.service.get("s1")
    assert (view.items, view.ttl_seconds) == ([], 0)
    assert [(i.content, r) for _, items, r in h.sink.calls for i in items] == [("stale", "idle")]


async def test_appending_to_an_idle_session_starts_afresh(h: Harness) -> None:
    await h.service.append(S1, "yesterday")
    h.clock.advance(TTL + 1)
    out = await h.service.append(S1, "today")
    assert [i.content for i in out.departed] == ["yesterday"]
    assert [i.content for i in h.sink.items("idle")] == ["yesterday"]
    assert [i.content for i in (await h.service.get("s1")).items] == ["today"]


async def test_items_keep_the_scope_ids_of_their_own_append(h: Harness) -> None:
    task1, task2 = ScopeIds(session_id="s1", task_id="t1"), ScopeIds(session_id="s1", task_id="t2")
    await h.service.append(task1, "one two")
    await h.service.append(task2, "three four")
    await h.service.flush("s1")
    assert [(scope.task_id, [i.content for i in items]) for scope, items, _ in h.sink.calls] == [
        ("t1", ["one two"]),
        ("t2", ["three four"]),
    ]


async def test_large_hand_offs_reach_the_sink_in_bounded_batches() -> None:
    h = Harness(max_tokens=1000)
    for i in range(120):
        await h.service.append(S1, f"m{i}")
    out = await h.service.flush("s1")
    assert len(out.memory_ids) == 120
    assert [len(items) for _, items, _ in h.sink.calls] == [50, 50, 20]


def test_the_bpe_counter_counts_o200k_tokens() -> None:
    counter = BpeTokenCounter()
    assert counter.name == "o200k_base"
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    # Special-token text in user content is ordinary text, not an error.
    assert counter.count("end <|endoftext|> here") > 3


# The RPC edge: params are validated before the service is called.


async def rpc(h: Harness, method: str, params: dict[str, Any]) -> Any:
    methods = {m.name: m for m in working_methods(h.service)}
    endpoint = JsonRpcEndpoint(methods, RpcMetrics(CollectorRegistry()))
    body = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
    return await endpoint.handle(json.dumps(body).encode())


async def test_rpc_append_get_flush_and_clear(h: Harness) -> None:
    appended = await rpc(
        h, "memory.working.append", {"session_id": "s1", "user_id": "u1", "content": "hi there"}
    )
    result = appended["result"]
    assert result["item"]["tokens"] == 2
    assert result["item"]["user_id"] == "u1"
    assert (result["items_evicted"], result["max_tokens"], result["ttl_seconds"]) == (0, 10, TTL)
    got = (await rpc(h, "memory.working.get", {"session_id": "s1"}))["result"]
    assert ([i["content"] for i in got["items"]], got["token_count"]) == (["hi there"], 2)
    flushed = (await rpc(h, "memory.working.flush", {"session_id": "s1"}))["result"]
    assert flushed == {"flushed": 1, "memory_ids": [result["item"]["id"]]}
    cleared = (await rpc(h, "memory.working.clear", {"session_id": "s1"}))["result"]
    assert cleared == {"cleared": 0}


@pytest.mark.parametrize(
    "params",
    [
        {"content": "no session"},
        {"session_id": "s1", "content": "hi", "kind": "note"},
        {"session_id": "s1", "content": "hi", "role": "robot"},
        {"session_id": "s1", "content": ""},
        {"session_id": "s1", "content": "hi", "layer": "episodic"},
    ],
)
async def test_rpc_append_refuses_invalid_params(h: Harness, params: dict[str, Any]) -> None:
    reply = await rpc(h, "memory.working.append", params)
    assert reply["error"]["code"] == -32602
    assert h.sink.calls == []
    assert (await h.service.get("s1")).items == []


async def test_rpc_refuses_an_oversized_item_with_content_too_long(h: Harness) -> None:
    reply = await rpc(h, "memory.working.append", {"session_id": "s1", "content": "w " * 11})
    assert reply["error"]["data"]["code"] == "CONTENT_TOO_LONG"
