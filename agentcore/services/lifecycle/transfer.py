"""Export and import of one scope's memories (``memory.export`` / ``memory.import``).

Export reads the scope's live memories page by page (``limit`` ≤ ``MAX_PAGE``, an opaque cursor),
so a scope of any size is exported in bounded memory; each record holds the memory's content,
layer, scope ids and level, tags, metadata, importance, flags, timestamps and provenance, and
its ``original_id``. Working memory is not exported (it lives in its store for an hour).

Import writes records into the caller's scope: every scope id a record names must be one the
call names with the same value (``FORBIDDEN`` otherwise: a record of another user is not
taken into this one), and the record's level must be visible to the call. The new memory's id
is derived from the scope and the original id, so importing the same records twice keeps one
copy (those already there are counted as ``skipped``); a keyed record whose key the scope
already holds (a value, a store item: exported from this scope, or set since) is ``skipped``
too, the value there kept. Content is embedded again by the
embedder in use. A batch is stored all or none.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcore.domain.clock import Clock
from agentcore.domain.errors import Forbidden, InvalidParams
from agentcore.domain.filters import Filter
from agentcore.domain.models import Memory, ScopeIds, ScopeLevel, scope_key
from agentcore.domain.records import NewMemory
from agentcore.domain.scopes import owning_level
from agentcore.services.memory_manager import ListRequest, MemoryManager, Page

MAX_PAGE = 500
_NAMESPACE = uuid.UUID("6f1c1c8e-3a57-4a3f-9d5e-5f0e8f2b7c11")  # ids of imported memories


@dataclass(frozen=True, slots=True)
class ImportReport:
    imported: list[str]  # ids of the memories written
    skipped: list[str]  # original ids already imported, or whose key the scope holds
    expired: list[str]  # original ids whose expiry has passed: not imported


def to_record(memory: Memory) -> dict[str, Any]:
    """One memory as an export record (JSON-able)."""

    def at(moment: datetime | None) -> str | None:
        return None if moment is None else moment.isoformat()

    return {
        "original_id": memory.id,
        "content": memory.content,
        "layer": memory.layer.value,
        "scope": memory.scope_level.value,
        **{k: v for k, v in memory.scope.as_dict().items() if v is not None},
        "tags": list(memory.tags),
        "metadata": dict(memory.metadata),
        "key": memory.key,
        "stage_id": memory.stage_id,
        "importance": memory.importance,
        "critical": memory.flagged,
        "sensitive": memory.sensitive,
        "created_at": at(memory.created_at),
        "updated_at": at(memory.updated_at),
        "expires_at": at(memory.expires_at),
        "source": memory.source,
        "confidence": memory.confidence,
        "promoted_from_id": memory.promoted_from_id,
        "compacted_from_ids": list(memory.compacted_from_ids),
        "created_in_session_id": memory.created_in_session_id,
    }


class TransferService:
    def __init__(self, memory: MemoryManager, clock: Clock) -> None:
        self._memory = memory
        self._clock = clock

    async def export_page(
        self,
        scope: ScopeIds,
        *,
        scope_level: str | None = None,
        layers: Sequence[str] | None = None,
        where: Filter | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = MAX_PAGE,
    ) -> Page:
        """One page of the scope's memories that satisfy ``where``, oldest first (records:
        ``to_record``)."""
        level = owning_level(scope, scope_level)
        page = await self._memory.list_page(
            ListRequest(
                scope=scope,
                scope_level=level.value,
                where=where,
                after=after,
                limit=min(limit, MAX_PAGE),
                order_desc=False,
            )
        )
        if not layers:
            return page
        wanted = set(layers)
        kept = [m for m in page.memories if m.layer.value in wanted]
        return Page(kept, page.next_after, page.total_count)

    async def import_records(
        self, records: Sequence[Mapping[str, Any]], scope: ScopeIds
    ) -> ImportReport:
        """Store the records in ``scope`` (module doc); all or none."""
        news = [self._new(record, scope, n) for n, record in enumerate(records)]
        existing = {m.id for m in await self._memory.existing([n.id or "" for n in news])}
        held = await self._memory.held_keys([k for n in news if (k := _keyed(n)) is not None])
        now = self._clock()
        report = ImportReport([], [], [])
        fresh = []
        for record, new in zip(records, news, strict=True):
            if new.id in existing or _keyed(new) in held:
                report.skipped.append(str(record["original_id"]))
            elif new.expires_at is not None and new.expires_at <= now:
                report.expired.append(str(record["original_id"]))
            else:
                fresh.append(new)
        if fresh:
            report.imported.extend(m.id for m in await self._memory.add_batch(fresh))
        return report

    def _new(self, record: Mapping[str, Any], scope: ScopeIds, n: int) -> NewMemory:
        ids = {level: record.get(level.id_field) for level in ScopeLevel}
        for level, value in ids.items():
            if value is not None and value != scope.get(level):
                raise Forbidden(
                    f"record {n} belongs to {level.id_field}={value!r}, which this call does "
                    "not name; import into the scope the records came from",
                    record=n,
                )
        owner = ScopeIds(**{level.id_field: v for level, v in ids.items() if v is not None})
        level = owning_level(owner, record.get("scope"))
        original = record.get("original_id")
        if not isinstance(original, str) or not original:
            raise InvalidParams(
                f"record {n} has no original_id",
                errors=[{"field": f"records.{n}.original_id", "message": "required"}],
            )
        key = f"{level.value}:{owner.get(level)}/{original}"
        return NewMemory(
            content=str(record.get("content", "")),
            scope=owner,
            layer=record.get("layer"),
            scope_level=level.value,
            metadata=dict(record.get("metadata") or {}),
            tags=tuple(record.get("tags") or ()),
            critical=bool(record.get("critical")),
            stage_id=record.get("stage_id"),
            expires_at=_time(record.get("expires_at")),
            key=record.get("key"),
            source=str(record.get("source") or "import"),
            id=str(uuid.uuid5(_NAMESPACE, key)),
            importance=record.get("importance"),
            confidence=record.get("confidence"),
            compacted_from_ids=tuple(record.get("compacted_from_ids") or ()),
            sensitive=bool(record.get("sensitive")),
            promoted_from_id=record.get("promoted_from_id"),
            created_in_session_id=record.get("created_in_session_id"),
            created_at=_time(record.get("created_at")),
        )


def _keyed(new: NewMemory) -> tuple[str, str] | None:
    """The (scope key, key) a keyed record takes; None for a record without a key."""
    if new.key is None:
        return None
    level = owning_level(new.scope, new.scope_level)
    return scope_key(level, new.scope.present()[level]), new.key


def _time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value) if isinstance(value, str) else None
