"""The OpenSpec face's pieces without I/O: the layer mapping, the event types, and the change
stream's heartbeats and back-pressure over a fake feed."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from agentcore.api.openspec.events import event_type
from agentcore.api.openspec.layers import SPEC_LAYERS, spec_layer, spec_layer_of
from agentcore.api.openspec.stream import ChangeStream
from agentcore.domain.errors import InvalidLayer
from agentcore.domain.models import Layer, ScopeLevel
from agentcore.services.ports import ChangeFeed, FeedEvent


def test_every_layer_and_level_belongs_to_exactly_one_spec_layer() -> None:
    for layer, level in itertools.product(Layer, ScopeLevel):
        owners = [s.name for s in SPEC_LAYERS if layer in s.layers and level in s.levels]
        if layer is Layer.WORKING and level is not ScopeLevel.SESSION:
            assert owners == []  # working memory is a session's only
        else:
            assert len(owners) == 1, (layer, level, owners)
            assert spec_layer_of(layer, level).name == owners[0]


def test_a_spec_layer_is_named_in_any_case_and_nothing_else_is_one() -> None:
    assert spec_layer("userpersonal") is spec_layer("UserPersonal") is spec_layer("user_personal")
    assert spec_layer_of("semantic", "user").name == "UserPersonal"
    assert spec_layer_of("episodic", "company").name == "Archival"
    for bad in ("Dreams", "", 3, None):
        with pytest.raises(InvalidLayer):
            spec_layer(bad)


@pytest.mark.parametrize(
    ("kind", "actor", "expected"),
    [
        ("add", "api", "create"),
        ("update", "api", "update"),
        ("update", "supersession", "supersede"),
        ("delete", "api", "delete"),
        ("delete", "expiry", "expire"),
        ("promote", "api", "promote"),
        ("compact", "api", "compact"),
    ],
)
def test_event_types(kind: str, actor: str, expected: str) -> None:
    assert event_type(kind, actor) == expected


class FakeFeed:
    def __init__(self) -> None:
        self.events: list[FeedEvent] = []

    def write(self, count: int) -> None:
        for _ in range(count):
            n = len(self.events) + 1
            at = datetime.now(UTC)
            self.events.append(FeedEvent(n, f"m{n}", "user:a", "add", "api", at, None, {}))

    async def head(self) -> int:
        return len(self.events)

    async def after(self, position: int, scope_keys: Sequence[str], limit: int) -> list[FeedEvent]:
        return [e for e in self.events if e.position > position][:limit]


def _stream(feed: FakeFeed, **kwargs: Any) -> ChangeStream:
    return ChangeStream(cast(ChangeFeed, feed), poll_seconds=0.005, **kwargs)


async def test_an_idle_stream_sends_heartbeats_and_then_what_was_written() -> None:
    feed = FakeFeed()
    stream = _stream(feed, heartbeat_seconds=0.05)
    frames = stream.frames(["user:a"], 0)
    assert (await anext(frames)).startswith(b"retry:")
    assert await anext(frames) == b": heartbeat\n\n"
    feed.write(2)
    assert (await anext(frames)).startswith(b"id: 1\nevent: create\n")
    assert (await anext(frames)).startswith(b"id: 2\n")
    await frames.aclose()
    await stream.close()


async def test_a_client_that_falls_behind_gets_a_final_event_and_the_stream_ends() -> None:
    feed = FakeFeed()
    stream = _stream(feed, queue_size=10)
    frames = stream.frames(["user:a"], 0)
    await anext(frames)
    feed.write(3)
    received = [await anext(frames) for _ in range(3)]  # a client keeping up
    feed.write(50)  # then it stops reading while 50 more arrive
    await asyncio.sleep(0.1)
    rest = [frame async for frame in frames]
    final = rest[-1].decode()
    assert final.startswith("event: overflow\n")
    data = json.loads(final.split("data: ", 1)[1])
    assert data["last_event_id"] == 3  # the last one it got: reconnect from there
    assert len(received) + len(rest) - 1 == 3  # nothing queued for it was sent after
    await stream.close()
