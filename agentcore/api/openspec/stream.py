"""``GET /openspec/v1/knowledge/stream``: the changes of some scopes as Server-Sent Events.

The history table is the stream (the container's ``ChangeFeed``): each event's ``id`` is its
position, so a client that reconnects with ``Last-Event-ID`` gets exactly what followed, from
any replica. One poller per process reads the head position every ``poll_seconds`` (which
works whichever process wrote) and wakes the subscribers when it moved; each subscriber reads
its own scopes' events after its position into a bounded queue. A client that reads slower
than its events arrive fills the queue: it then gets a final ``overflow`` event naming the
last event it received, and the stream ends (it reconnects from there; nothing is held for
it). A comment line every ``heartbeat_seconds`` keeps proxies from closing an idle stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence

from agentcore.api.openspec.events import stream_event
from agentcore.api.openspec.models import StreamEvent
from agentcore.services.failures import log_failure
from agentcore.services.ports import ChangeFeed

log = logging.getLogger(__name__)

READ_BATCH = 256
RETRY_AFTER_ERROR_SECONDS = 1.0


class _Pulse:
    """Wakes every waiter at once."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def fire(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, seconds: float) -> None:
        """Until the next ``fire``, at most ``seconds``."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._event.wait(), seconds)


class ChangeStream:
    def __init__(
        self,
        feed: ChangeFeed,
        *,
        poll_seconds: float = 0.02,
        heartbeat_seconds: float = 15.0,
        queue_size: int = 1000,
    ) -> None:
        self._feed = feed
        self._poll = poll_seconds
        self._heartbeat = heartbeat_seconds
        self._queue_size = queue_size
        self._pulse = _Pulse()
        self._subscribers = 0
        self._head = -1  # as the poller last read it
        self._poller: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()

    async def head(self) -> int:
        return await self._feed.head()

    async def close(self) -> None:
        self._closed.set()
        self._pulse.fire()
        if self._poller is not None:
            await self._poller

    async def frames(self, scope_keys: Sequence[str], after: int) -> AsyncIterator[bytes]:
        """The stream's bytes for ``scope_keys`` after position ``after``."""
        queue: asyncio.Queue[StreamEvent] = asyncio.Queue(self._queue_size)
        overflowed = asyncio.Event()
        self._subscribe()
        producer = asyncio.create_task(self._produce(scope_keys, after, queue, overflowed))
        last = after
        try:
            yield b"retry: 2000\n: connected\n\n"
            while not self._closed.is_set():
                if overflowed.is_set():
                    yield _final("overflow", last)
                    return
                try:
                    event = await asyncio.wait_for(queue.get(), self._heartbeat)
                except TimeoutError:
                    yield b": heartbeat\n\n"
                    continue
                yield _frame(event)
                last = event.position
            yield _final("shutdown", last)
        finally:
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await producer
            self._unsubscribe()

    async def _produce(
        self,
        scope_keys: Sequence[str],
        position: int,
        queue: asyncio.Queue[StreamEvent],
        overflowed: asyncio.Event,
    ) -> None:
        while not self._closed.is_set():
            seen = self._head  # read before the events: a head that moves after is not missed
            try:
                events = await self._feed.after(position, scope_keys, READ_BATCH)
            except Exception as exc:
                log_failure(log, "change stream read failed", exc)
                await asyncio.sleep(RETRY_AFTER_ERROR_SECONDS)
                continue
            for e in events:
                if queue.full():
                    overflowed.set()
                    return
                queue.put_nowait(stream_event(e))
                position = e.position
            while len(events) < READ_BATCH and self._head == seen and not self._closed.is_set():
                await self._pulse.wait(self._heartbeat)

    def _subscribe(self) -> None:
        self._subscribers += 1
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._watch_head(), name="openspec-stream-head")

    def _unsubscribe(self) -> None:
        self._subscribers -= 1

    async def _watch_head(self) -> None:
        """Wake the subscribers whenever the head moved; ends when the last one left."""
        while self._subscribers > 0 and not self._closed.is_set():
            try:
                head = await self._feed.head()
            except Exception as exc:
                log_failure(log, "change stream head read failed", exc)
                head = self._head
            if head != self._head:
                self._head = head
                self._pulse.fire()
            await asyncio.sleep(self._poll)


def _frame(event: StreamEvent) -> bytes:
    data = event.model_dump_json()
    return f"id: {event.position}\nevent: {event.type}\ndata: {data}\n\n".encode()


def _final(reason: str, last: int) -> bytes:
    message = {
        "overflow": "the client read too slowly; reconnect with Last-Event-ID to resume",
        "shutdown": "the server is stopping; reconnect with Last-Event-ID to resume",
    }[reason]
    data = json.dumps({"reason": reason, "message": message, "last_event_id": last})
    return f"event: {reason}\ndata: {data}\n\n".encode()
