"""Group commit: concurrent writes committed together, in one transaction.

While one group is being written, the writes that arrive wait, and go together as the next
group: under load a transaction (its lock, its round trips to the database, its fsync) is paid
once for many writes instead of once each, and with no load a write goes at once, alone. A
caller gets its results when its group has committed, so an acknowledged write is durable as
before.

Each request stays atomic (a group holds whole requests). A group that fails is written again
one request at a time, so a request that cannot be stored (a conflicting key, say) fails alone;
a failure that names an outage fails the whole group at once instead, since every request
would meet it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from agentcore.domain.errors import AgentCoreError

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(eq=False, slots=True)
class _Request(Generic[T, R]):
    items: Sequence[T]
    done: asyncio.Future[list[R]]


class GroupCommit(Generic[T, R]):
    def __init__(self, commit: Callable[[list[T]], Awaitable[list[R]]], *, max_items: int) -> None:
        """``commit(items)`` writes the items in one transaction and returns one result per
        item, in order. A group holds up to ``max_items`` items (a larger request goes alone)."""
        self._commit = commit
        self._max_items = max_items
        self._waiting: deque[_Request[T, R]] = deque()
        self._writer: asyncio.Task[None] | None = None

    async def submit(self, items: Sequence[T]) -> list[R]:
        """Write ``items`` (with whatever else is waiting); their results once committed."""
        request: _Request[T, R] = _Request(items, asyncio.get_running_loop().create_future())
        # Read the outcome even when the caller has gone (no "exception never retrieved").
        request.done.add_done_callback(lambda done: done.cancelled() or done.exception())
        self._waiting.append(request)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_groups(), name="group-commit")
        return await asyncio.shield(request.done)  # a caller that gives up: its write goes on

    async def drain(self) -> None:
        """Wait until every write submitted so far is committed (or failed)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def _write_groups(self) -> None:
        while self._waiting:
            group = [self._waiting.popleft()]
            size = len(group[0].items)
            while self._waiting and size + len(self._waiting[0].items) <= self._max_items:
                size += len(self._waiting[0].items)
                group.append(self._waiting.popleft())
            try:
                await self._write(group)
            except Exception as exc:  # a defect here must not strand the waiting callers
                log.exception("group commit failed")
                for request in group:
                    _settle(request, exc)

    async def _write(self, group: list[_Request[T, R]]) -> None:
        try:
            results = await self._commit([item for request in group for item in request.items])
        except Exception as exc:
            if len(group) == 1 or (isinstance(exc, AgentCoreError) and exc.retryable):
                for request in group:
                    _settle(request, exc)
                return
            for request in group:  # find the request that failed: each alone
                try:
                    _settle(request, await self._commit(list(request.items)))
                except Exception as alone:
                    _settle(request, alone)
            return
        start = 0
        for request in group:
            _settle(request, results[start : start + len(request.items)])
            start += len(request.items)


def _settle(request: _Request[T, R], outcome: list[R] | Exception) -> None:
    if request.done.done():
        return
    if isinstance(outcome, Exception):
        request.done.set_exception(outcome)
    else:
        request.done.set_result(outcome)
