"""WorkingMemoryService: the immediate context of a session, bounded in tokens and in time.

Each session holds an ordered list of items (messages, tasks, goals). Two rules keep it small:

- **Token bound** (``max_tokens``): an append that would exceed it evicts the oldest items.
- **Idle TTL** (``ttl_seconds``, refreshed by every write): a session without writes for that
  long is flushed, by ``sweep_idle`` (run periodically) or lazily by its next read or write.

Nothing leaves working memory silently (FR-1.5): the store moves departing items, in the same
atomic step that removes them from the session, into the session's *outbox*; the service then
hands them to the ``EpisodeSink`` (the episodic layer) and only after the sink has stored them
are they settled (deleted from the outbox). A crash or a failing sink leaves them in the
outbox, from where the next eviction in the session, a flush or the sweep hands them off again
(at-least-once; the sink is idempotent by item id). ``clear`` is the only way to drop items
without a trace.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol, TypeVar

from agentcore.domain.clock import Clock
from agentcore.domain.errors import ContentTooLong, InvalidParams, MissingIdentifier
from agentcore.domain.models import ScopeIds, new_id
from agentcore.domain.records import check_content
from agentcore.services.failures import log_failure
from agentcore.services.ports import EpisodeItem, EpisodeSink

log = logging.getLogger(__name__)

E = TypeVar("E", bound=StrEnum)


class ItemKind(StrEnum):
    MESSAGE = "message"
    TASK = "task"
    GOAL = "goal"


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Reason(StrEnum):
    """Why an item left working memory (passed on to the sink)."""

    EVICTED = "evicted"  # pushed out by the token bound
    IDLE = "idle"  # the session went idle past its TTL
    FLUSHED = "flushed"  # the caller asked


@dataclass(frozen=True, slots=True)
class WorkingItem:
    """One item of a session. ``scope`` holds the ids given with its append (session included):
    the episodic memory it becomes carries them."""

    id: str
    content: str
    kind: ItemKind
    role: Role | None
    at: datetime
    tokens: int
    scope: ScopeIds
    stage_id: str | None = None

    @property
    def session_id(self) -> str:
        assert self.scope.session_id is not None, "a working item always has its session"
        return self.scope.session_id


@dataclass(frozen=True, slots=True)
class Departure:
    """An item in a session's outbox: it has left working memory, the sink has not stored it."""

    item: WorkingItem
    reason: Reason


@dataclass(frozen=True, slots=True)
class Appended:
    """What a store did on append: the items it moved to the outbox and the new total."""

    departed: list[Departure]
    token_count: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A consistent read of one session: its items, oldest first, and its last write."""

    items: list[WorkingItem]
    last_write: datetime | None


class WorkingMemoryStore(Protocol):
    """Per-session item lists plus an outbox of departed items; each method is atomic per
    session. A session idle for longer than the TTL must still be readable (with its outbox)
    until it is swept: a store may expire data only long after that (see the Redis adapter).
    """

    async def append(self, item: WorkingItem, max_tokens: int, idle_before: datetime) -> Appended:
        """Add the item last. First, if the session's last write is older than ``idle_before``,
        move all its items to the outbox (reason idle); then move the oldest items to the
        outbox (reason evicted) until the total is ≤ ``max_tokens``. The item itself fits."""
        ...

    async def snapshot(self, session_id: str) -> Snapshot: ...

    async def clear(self, session_id: str) -> int:
        """Drop the session's items (not its outbox); returns how many were dropped."""
        ...

    async def release(self, session_id: str, reason: Reason, idle_before: datetime | None) -> int:
        """Move all items to the outbox; with ``idle_before``, only if the last write is older.
        Returns how many moved."""
        ...

    async def outbox(self, session_id: str) -> list[Departure]:
        """The departed items not yet settled, oldest first."""
        ...

    async def settle(self, session_id: str, item_ids: Sequence[str]) -> None:
        """Forget outbox items the sink has stored; forget the whole session once it holds no
        items and no outbox (an empty session and an unknown one are the same)."""
        ...

    async def idle_sessions(self, idle_before: datetime, limit: int) -> list[str]:
        """Sessions whose last write is older than ``idle_before``, at most ``limit``."""
        ...

    async def sessions_with_outbox(self, limit: int) -> list[str]: ...


class TokenCounter(Protocol):
    """Counts tokens the way the model that reads the context will."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    item: WorkingItem
    departed: list[WorkingItem]  # items that left working memory because of this append
    token_count: int
    max_tokens: int
    ttl_seconds: int


@dataclass(frozen=True, slots=True)
class WorkingView:
    items: list[WorkingItem]
    token_count: int
    max_tokens: int
    ttl_seconds: int  # remaining until the session goes idle; 0 for an empty session


@dataclass(frozen=True, slots=True)
class FlushOutcome:
    flushed: int
    memory_ids: list[str]


@dataclass(frozen=True, slots=True)
class SweepReport:
    idle_sessions: int
    items_handed_off: int


# Items per sink call: bounded so one hand-off stays a reasonable batch for the episodic layer.
_SINK_BATCH = 50
# Rounds of one hand-off: new items can reach the outbox while one round is being stored.
_MAX_ROUNDS = 16


class WorkingMemoryService:
    def __init__(
        self,
        store: WorkingMemoryStore,
        tokens: TokenCounter,
        sink: EpisodeSink,
        clock: Clock,
        *,
        max_tokens: int,
        ttl_seconds: int,
        max_content_length: int,
    ) -> None:
        self._store = store
        self._tokens = tokens
        self._sink = sink
        self._clock = clock
        self.max_tokens = max_tokens
        self.ttl_seconds = ttl_seconds
        self._max_content = max_content_length
        # Hand-offs running in this process, per session: a concurrent append does not start
        # another one but asks the running one for one more round (``_rerun``).
        self._handing_off: Counter[str] = Counter()
        self._rerun: set[str] = set()

    async def append(
        self,
        scope: ScopeIds,
        content: str,
        kind: str = ItemKind.MESSAGE,
        role: str | None = None,
        stage_id: str | None = None,
    ) -> AppendOutcome:
        """Add an item to the session ``scope.session_id``; the oldest items leave for the
        episodic layer when the token bound is exceeded. An item larger than the whole bound is
        refused with ContentTooLong and nothing changes."""
        session_id = _session(scope.session_id)
        check_content(content, self._max_content)
        item_kind = _parse(ItemKind, kind, "kind")
        item_role = None if role is None else _parse(Role, role, "role")
        tokens = self._tokens.count(content)
        if tokens > self.max_tokens:
            raise ContentTooLong(
                f"content has {tokens} tokens; working memory holds at most {self.max_tokens}",
                max_tokens=self.max_tokens,
            )
        now = self._clock()
        item = WorkingItem(new_id(), content, item_kind, item_role, now, tokens, scope, stage_id)
        appended = await self._store.append(item, self.max_tokens, self._idle_before(now))
        if appended.departed:
            await self._hand_off(session_id, strict=False)
        return AppendOutcome(
            item=item,
            departed=[d.item for d in appended.departed],
            token_count=appended.token_count,
            max_tokens=self.max_tokens,
            ttl_seconds=self.ttl_seconds,
        )

    async def get(self, session_id: str) -> WorkingView:
        """The session's items, oldest first. A session idle past its TTL is flushed to the
        episodic layer now (as the sweep would) and reads as empty."""
        snap = await self._store.snapshot(_session(session_id))
        now = self._clock()
        idle_before = self._idle_before(now)
        if snap.items and snap.last_write is not None and snap.last_write < idle_before:
            if await self._store.release(session_id, Reason.IDLE, idle_before):
                await self._hand_off(session_id, strict=False)
            snap = await self._store.snapshot(session_id)  # another call may have written
        if not snap.items or snap.last_write is None:
            return WorkingView([], 0, self.max_tokens, 0)
        remaining = self.ttl_seconds - (now - snap.last_write).total_seconds()
        tokens = sum(item.tokens for item in snap.items)
        return WorkingView(snap.items, tokens, self.max_tokens, max(0, math.ceil(remaining)))

    async def clear(self, session_id: str) -> int:
        """Drop the session's items without recording them anywhere; returns how many."""
        return await self._store.clear(_session(session_id))

    async def flush(self, session_id: str) -> FlushOutcome:
        """Move every item of the session to the episodic layer, with anything still owed from
        earlier evictions. Sink errors propagate; the items stay owed and are retried."""
        moved = await self._store.release(_session(session_id), Reason.FLUSHED, None)
        memory_ids = await self._hand_off(session_id, strict=True)
        return FlushOutcome(flushed=moved, memory_ids=memory_ids)

    async def sweep_idle(self, now: datetime | None = None, limit: int = 100) -> SweepReport:
        """Flush sessions idle past their TTL and retry hand-offs that failed earlier, at most
        ``limit`` sessions of each kind per call. The lead loop runs it periodically."""
        now = self._clock() if now is None else now
        idle_before = self._idle_before(now)
        idle = await self._store.idle_sessions(idle_before, limit)
        owing = await self._store.sessions_with_outbox(limit)
        handed = 0
        for session_id in dict.fromkeys([*idle, *owing]):
            try:
                await self._store.release(session_id, Reason.IDLE, idle_before)
                handed += len(await self._hand_off(session_id, strict=True))
                await self._store.settle(session_id, [])  # forgets a session left empty
            except Exception as exc:  # one session's failure must not stop the sweep
                log_failure(log, "handing off the working memory of a session failed", exc)
        return SweepReport(idle_sessions=len(idle), items_handed_off=handed)

    async def flush_all(self, max_rounds: int = 1000) -> int:
        """Hand every session to the episodic layer, e.g. before an in-process store goes away
        with its process. Returns how many items were handed off."""
        total = 0
        for _ in range(max_rounds):
            beyond = self._clock() + timedelta(seconds=self.ttl_seconds + 1)
            report = await self.sweep_idle(now=beyond)
            total += report.items_handed_off
            if report.idle_sessions == 0:
                break
        return total

    def _idle_before(self, now: datetime) -> datetime:
        return now - timedelta(seconds=self.ttl_seconds)

    async def _hand_off(self, session_id: str, *, strict: bool) -> list[str]:
        """Store the session's outbox in the sink, then settle it; returns the sink's memory
        ids. ``strict`` raises a sink failure; otherwise it is logged and the outbox waits."""
        if not strict and self._handing_off[session_id]:
            self._rerun.add(session_id)
            return []
        self._handing_off[session_id] += 1
        memory_ids: list[str] = []
        try:
            for _ in range(_MAX_ROUNDS):
                self._rerun.discard(session_id)
                owed = await self._store.outbox(session_id)
                if not owed and session_id not in self._rerun:
                    break
                for reason, scope, batch in _batches(owed):
                    episodes = [_episode(d.item) for d in batch]
                    memory_ids += await self._sink.record(scope, episodes, reason.value)
                    await self._store.settle(session_id, [d.item.id for d in batch])
        except Exception as exc:
            if strict:
                raise
            # The write that moved the items has succeeded; they wait in the outbox for the
            # next eviction, a flush or the sweep.
            log_failure(log, "handing off working memory failed; it stays owed", exc)
        finally:
            self._handing_off[session_id] -= 1
            if not self._handing_off[session_id]:
                del self._handing_off[session_id]
                self._rerun.discard(session_id)  # what is still owed waits for the sweep
        return memory_ids


def _session(session_id: str | None) -> str:
    if not session_id:
        raise MissingIdentifier("working memory is per session: session_id is required")
    return session_id


def _parse(enum: type[E], value: str, field: str) -> E:
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise InvalidParams(
            f"unknown {field} {value!r}; expected one of: {allowed}",
            errors=[{"field": field, "message": f"one of {allowed}"}],
        ) from None


def _episode(item: WorkingItem) -> EpisodeItem:
    return EpisodeItem(
        id=item.id,
        content=item.content,
        kind=item.kind.value,
        role=None if item.role is None else item.role.value,
        at=item.at,
        stage_id=item.stage_id,
    )


def _batches(owed: Sequence[Departure]) -> Iterator[tuple[Reason, ScopeIds, list[Departure]]]:
    """Consecutive runs of one reason and one scope, at most ``_SINK_BATCH`` items each."""
    run: list[Departure] = []
    for departure in owed:
        if run and (
            len(run) == _SINK_BATCH
            or departure.reason != run[0].reason
            or departure.item.scope != run[0].item.scope
        ):
            yield run[0].reason, run[0].item.scope, run
            run = []
        run.append(departure)
    if run:
        yield run[0].reason, run[0].item.scope, run
