"""Knowledge that updates, on write: before a memory is stored, the current memories of its
scope that fill its slot with another value are superseded by it, in the write's transaction
(``agentcore.domain.updates`` reads the slots)."""

from __future__ import annotations

from typing import Any, Protocol

from agentcore.domain.models import EventKind, Memory
from agentcore.domain.records import FACT_LAYERS, speaker_of
from agentcore.domain.updates import Known, inferred_value, says_change, updated_slot
from agentcore.services.ports import UnitOfWork

SUPERSESSION = "supersession"  # the actor of the history event that marks a memory superseded
_KNOWN_SLOTS = 50  # current slotted memories of a scope an update may name


class RecordEvent(Protocol):
    async def __call__(
        self,
        uow: UnitOfWork,
        memory: Memory,
        kind: EventKind,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        *,
        actor: str | None = None,
    ) -> None: ...


async def supersede(uow: UnitOfWork, memory: Memory, record: RecordEvent) -> None:
    """Before ``memory`` is stored: the current memories of its scope that fill its slot with
    another value get ``valid_to`` (its creation) and ``superseded_by``, each change in their
    history by the actor ``supersession``; one created after it (an import of older memories)
    supersedes it instead. A restatement of the same value supersedes nothing."""
    if memory.fact_slot is None:
        await _infer_slot(uow, memory)
    if memory.fact_slot is None:
        return
    for other in await uow.memories.current_in_slot([memory.scope_key], memory.fact_slot):
        if other.id == memory.id or other.fact_value == memory.fact_value:
            continue
        if other.created_at > memory.created_at:
            if memory.superseded_by is None:
                memory.valid_to, memory.superseded_by = other.created_at, other.id
            continue
        other.valid_to, other.superseded_by = memory.created_at, memory.id
        await uow.memories.update(other)
        after = {"valid_to": other.valid_to, "superseded_by": memory.id}
        before = {"valid_to": None, "superseded_by": None}
        await record(uow, other, EventKind.UPDATE, before, after, actor=SUPERSESSION)


def may_supersede(memory: Memory) -> bool:
    """Whether ``supersede`` may change anything for ``memory`` (it fills a slot, or may name
    one it updates): other memories are written one at a time around it."""
    return memory.fact_slot is not None or (
        memory.layer in FACT_LAYERS and says_change(memory.content)
    )


async def _infer_slot(uow: UnitOfWork, memory: Memory) -> None:
    """A memory that states no slot may still update one by naming its old value
    (``agentcore.domain.updates.updated_slot``): it then fills that slot, with a value of its
    own."""
    if memory.layer not in FACT_LAYERS or not says_change(memory.content):
        return
    slotted = await uow.memories.current_slotted(memory.scope_key, _KNOWN_SLOTS)
    known = [Known(m.id, m.fact_slot, m.fact_value or "") for m in slotted if m.fact_slot]
    found = updated_slot(memory.content, speaker_of(memory.metadata), known)
    if found is not None:
        memory.fact_slot, memory.fact_value = found.slot, inferred_value(memory.id)
