"""Working memory in Redis (production): one list, one hash and one outbox per session.

Keys, under ``prefix`` (default ``agentcore:wm:``), in the database the client was built for
(``REDIS_MEMORY_DB``):

- ``<session>:items``  LIST of item JSON, oldest first
- ``<session>:meta``   HASH ``tokens`` (the items' total) and ``last`` (last write, epoch s)
- ``<session>:outbox`` HASH item id → ``{"reason": ..., "item": ...}``: items that left the
  session and are not yet stored by the episodic layer
- ``sessions``         ZSET session → last write: the sweep finds idle sessions by score
- ``owing``            SET of sessions with a non-empty outbox

Every write that changes a session runs as one Lua script, so concurrent appends can neither
exceed the token bound nor lose an item, and an item leaves ``items`` only by entering
``outbox`` in the same step.

Expiry: the service, not Redis, ends a session's life. Redis keys get the working TTL plus a
safety margin (``safety_margin_seconds``, 24 h by default) so that a session idle past its TTL
is still there when the sweep flushes it to episodic memory, even after the service was down
for hours. Only a session left unswept for longer than TTL + margin is dropped by Redis; its
index entries are cleaned up by the next sweep.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis

from agentcore.adapters.outages import REDIS, names_outages
from agentcore.domain.models import ScopeIds
from agentcore.services.working_memory import (
    Appended,
    Departure,
    ItemKind,
    Reason,
    Role,
    Snapshot,
    WorkingItem,
)

DEFAULT_PREFIX = "agentcore:wm:"
DEFAULT_SAFETY_MARGIN = 24 * 3600
_KINDS = {kind.value: kind for kind in ItemKind}
_ROLES = {role.value: role for role in Role}

# A departed item: moved into the outbox under its id, wrapped with the reason.
_DEPART = """
local function depart(raw, id, reason)
  redis.call('HSET', KEYS[3], id, '{"reason":"' .. reason .. '","item":' .. raw .. '}')
end
"""

# KEYS: items, meta, outbox, sessions, owing
# ARGV: item json, item tokens, max tokens, now, idle_before, expire seconds, session id
_APPEND = (
    _DEPART
    + """
local departed = {}
local total = tonumber(redis.call('HGET', KEYS[2], 'tokens') or '0')
local last = redis.call('HGET', KEYS[2], 'last')
if last and tonumber(last) < tonumber(ARGV[5]) then
  for _, raw in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
    depart(raw, cjson.decode(raw)['id'], 'idle')
    departed[#departed + 1] = raw
  end
  redis.call('DEL', KEYS[1])
  total = 0
end
local idle = #departed
redis.call('RPUSH', KEYS[1], ARGV[1])
total = total + tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
while total > limit do
  local raw = redis.call('LPOP', KEYS[1])
  if not raw then break end
  local item = cjson.decode(raw)
  total = total - item['tokens']
  depart(raw, item['id'], 'evicted')
  departed[#departed + 1] = raw
end
redis.call('HSET', KEYS[2], 'tokens', total, 'last', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
if #departed > 0 then
  redis.call('EXPIRE', KEYS[3], ARGV[6])
  redis.call('SADD', KEYS[5], ARGV[7])
end
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[7])
return {total, idle, departed}
"""
)

# KEYS: items, meta, outbox, owing
# ARGV: reason, idle_before ('' = unconditionally), expire seconds, session id
_RELEASE = (
    _DEPART
    + """
if ARGV[2] ~= '' then
  local last = redis.call('HGET', KEYS[2], 'last')
  if last and tonumber(last) >= tonumber(ARGV[2]) then return 0 end
end
local raws = redis.call('LRANGE', KEYS[1], 0, -1)
if #raws == 0 then return 0 end
for _, raw in ipairs(raws) do depart(raw, cjson.decode(raw)['id'], ARGV[1]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[2], 'tokens', 0)
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('SADD', KEYS[4], ARGV[4])
return #raws
"""
)

# KEYS: items, meta, outbox, sessions; ARGV: session id
_CLEAR = """
local dropped = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[4], ARGV[1])
else
  redis.call('HSET', KEYS[2], 'tokens', 0)
end
return dropped
"""

# KEYS: items, meta, outbox, sessions, owing; ARGV: session id, item ids...
_SETTLE = """
if #ARGV > 1 then redis.call('HDEL', KEYS[3], unpack(ARGV, 2)) end
if redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('SREM', KEYS[5], ARGV[1])
  if redis.call('LLEN', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[2])
    redis.call('ZREM', KEYS[4], ARGV[1])
  end
end
return 0
"""


class RedisWorkingMemoryStore:
    """Takes a ``redis.asyncio.Redis`` client (either ``decode_responses`` setting) and does not
    close it: the composition root owns the client."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        ttl_seconds: int,
        safety_margin_seconds: int = DEFAULT_SAFETY_MARGIN,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self._client = client
        self._expire = ttl_seconds + safety_margin_seconds
        self._prefix = prefix
        self._sessions = prefix + "sessions"
        self._owing = prefix + "owing"
        self._append = client.register_script(_APPEND)
        self._release = client.register_script(_RELEASE)
        self._clear = client.register_script(_CLEAR)
        self._settle = client.register_script(_SETTLE)

    @property
    def expire_seconds(self) -> int:
        """How long Redis keeps a session's keys after its last write."""
        return self._expire

    @names_outages(REDIS)
    async def append(self, item: WorkingItem, max_tokens: int, idle_before: datetime) -> Appended:
        items, meta, outbox = self._keys(item.session_id)
        total, idle, departed = await self._append(
            keys=[items, meta, outbox, self._sessions, self._owing],
            args=[
                _encode(item),
                item.tokens,
                max_tokens,
                repr(item.at.timestamp()),
                repr(idle_before.timestamp()),
                self._expire,
                item.session_id,
            ],
        )
        reasons = [Reason.IDLE if i < int(idle) else Reason.EVICTED for i in range(len(departed))]
        moved = _decode_many(departed)
        return Appended([Departure(m, r) for m, r in zip(moved, reasons, strict=True)], int(total))

    @names_outages(REDIS)
    async def snapshot(self, session_id: str) -> Snapshot:
        items, meta, _ = self._keys(session_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.lrange(items, 0, -1)
            pipe.hget(meta, "last")
            raws, last = await pipe.execute()
        last_write = None if last is None else datetime.fromtimestamp(float(last), UTC)
        return Snapshot(_decode_many(raws), last_write)

    @names_outages(REDIS)
    async def clear(self, session_id: str) -> int:
        items, meta, outbox = self._keys(session_id)
        dropped = await self._clear(keys=[items, meta, outbox, self._sessions], args=[session_id])
        return int(dropped)

    @names_outages(REDIS)
    async def release(self, session_id: str, reason: Reason, idle_before: datetime | None) -> int:
        items, meta, outbox = self._keys(session_id)
        cutoff = "" if idle_before is None else repr(idle_before.timestamp())
        moved = await self._release(
            keys=[items, meta, outbox, self._owing],
            args=[reason.value, cutoff, self._expire, session_id],
        )
        return int(moved)

    @names_outages(REDIS)
    async def outbox(self, session_id: str) -> list[Departure]:
        _, _, outbox = self._keys(session_id)
        entries = [json.loads(raw) for raw in await self._client.hvals(outbox)]
        departures = [Departure(_item(e["item"]), Reason(e["reason"])) for e in entries]
        return sorted(departures, key=lambda d: d.item.at)

    @names_outages(REDIS)
    async def settle(self, session_id: str, item_ids: Sequence[str]) -> None:
        items, meta, outbox = self._keys(session_id)
        await self._settle(
            keys=[items, meta, outbox, self._sessions, self._owing],
            args=[session_id, *item_ids],
        )

    @names_outages(REDIS)
    async def idle_sessions(self, idle_before: datetime, limit: int) -> list[str]:
        found = await self._client.zrangebyscore(
            self._sessions, "-inf", f"({idle_before.timestamp()!r}", start=0, num=limit
        )
        return [_text(value) for value in found]

    @names_outages(REDIS)
    async def sessions_with_outbox(self, limit: int) -> list[str]:
        found = await self._client.srandmember(self._owing, limit)
        return [_text(value) for value in found or []]

    def _keys(self, session_id: str) -> tuple[str, str, str]:
        base = f"{self._prefix}{session_id}:"
        return base + "items", base + "meta", base + "outbox"


def _encode(item: WorkingItem) -> str:
    scope = {name: value for name, value in item.scope.as_dict().items() if value is not None}
    return json.dumps(
        {
            "id": item.id,
            "content": item.content,
            "kind": item.kind.value,
            "role": None if item.role is None else item.role.value,
            "at": item.at.isoformat(),
            "tokens": item.tokens,
            "stage_id": item.stage_id,
            "scope": scope,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _decode_many(raws: Sequence[str | bytes]) -> list[WorkingItem]:
    """Items from their JSON. Reads are the hot path (a full session is ~100-200 items), so
    the list is parsed in one ``json.loads`` and equal scopes share one ``ScopeIds``."""
    if not raws:
        return []
    parts = [raw.encode() if isinstance(raw, str) else raw for raw in raws]
    scopes: dict[tuple[tuple[str, str], ...], ScopeIds] = {}
    items = []
    for data in json.loads(b"[" + b",".join(parts) + b"]"):
        ids = tuple(data["scope"].items())
        scope = scopes.get(ids)
        if scope is None:
            scope = scopes[ids] = ScopeIds(**data["scope"])
        items.append(_item(data, scope))
    return items


def _item(data: dict[str, Any], scope: ScopeIds | None = None) -> WorkingItem:
    role = data["role"]
    return WorkingItem(
        id=data["id"],
        content=data["content"],
        kind=_KINDS[data["kind"]],
        role=None if role is None else _ROLES[role],
        at=datetime.fromisoformat(data["at"]),
        tokens=data["tokens"],
        scope=ScopeIds(**data["scope"]) if scope is None else scope,
        stage_id=data["stage_id"],
    )


def _text(value: Any) -> str:
    """A member as text, whether the client decodes responses or not."""
    return value.decode() if isinstance(value, bytes) else str(value)
