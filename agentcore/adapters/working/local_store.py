"""In-process working memory for the embedded mode: the same contract as the Redis store.

Everything lives in this process, so it is lost when the process ends (the embedded mode
accepts that for working memory; call ``WorkingMemoryService.flush`` or let the sweep run
before shutting down to keep it as episodic memory).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice

from agentcore.services.working_memory import (
    Appended,
    Departure,
    Reason,
    Snapshot,
    WorkingItem,
)


@dataclass
class _Session:
    items: deque[WorkingItem] = field(default_factory=deque)
    tokens: int = 0
    last_write: datetime | None = None
    outbox: dict[str, Departure] = field(default_factory=dict)  # by item id, oldest first


class LocalWorkingMemoryStore:
    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        # Each method runs without awaiting inside, so it is atomic on the event loop already;
        # the lock keeps it so if one ever awaits.
        self._lock = asyncio.Lock()

    async def append(self, item: WorkingItem, max_tokens: int, idle_before: datetime) -> Appended:
        async with self._lock:
            session = self._sessions.setdefault(item.session_id, _Session())
            departed: list[Departure] = []
            if session.last_write is not None and session.last_write < idle_before:
                departed += _move_all(session, Reason.IDLE)
            session.items.append(item)
            session.tokens += item.tokens
            while session.tokens > max_tokens:
                oldest = session.items.popleft()
                session.tokens -= oldest.tokens
                departed.append(_to_outbox(session, oldest, Reason.EVICTED))
            session.last_write = item.at
            return Appended(departed, session.tokens)

    async def snapshot(self, session_id: str) -> Snapshot:
        async with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return Snapshot([], None)
            return Snapshot(list(session.items), session.last_write)

    async def clear(self, session_id: str) -> int:
        async with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            dropped = len(session.items)
            session.items.clear()
            session.tokens = 0
            self._forget_if_empty(session_id, session)
            return dropped

    async def release(self, session_id: str, reason: Reason, idle_before: datetime | None) -> int:
        async with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            last = session.last_write
            if idle_before is not None and last is not None and last >= idle_before:
                return 0
            return len(_move_all(session, reason))

    async def outbox(self, session_id: str) -> list[Departure]:
        async with self._lock:
            session = self._sessions.get(session_id)
            return [] if session is None else list(session.outbox.values())

    async def settle(self, session_id: str, item_ids: Sequence[str]) -> None:
        async with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return
            for item_id in item_ids:
                session.outbox.pop(item_id, None)
            self._forget_if_empty(session_id, session)

    async def idle_sessions(self, idle_before: datetime, limit: int) -> list[str]:
        async with self._lock:
            idle = [
                (session.last_write, session_id)
                for session_id, session in self._sessions.items()
                if session.last_write is not None and session.last_write < idle_before
            ]
            return [session_id for _, session_id in sorted(idle)[:limit]]

    async def sessions_with_outbox(self, limit: int) -> list[str]:
        async with self._lock:
            owing = (session_id for session_id, s in self._sessions.items() if s.outbox)
            return list(islice(owing, limit))

    def _forget_if_empty(self, session_id: str, session: _Session) -> None:
        if not session.items and not session.outbox:
            del self._sessions[session_id]


def _to_outbox(session: _Session, item: WorkingItem, reason: Reason) -> Departure:
    departure = Departure(item, reason)
    session.outbox[item.id] = departure
    return departure


def _move_all(session: _Session, reason: Reason) -> list[Departure]:
    moved = [_to_outbox(session, item, reason) for item in session.items]
    session.items.clear()
    session.tokens = 0
    return moved
