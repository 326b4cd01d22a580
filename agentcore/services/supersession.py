"""Knowledge that updates, as recorded: a newer memory of a scope that fills a slot the rules
read (``agentcore.domain.updates.statements``, or an LLM extractor's ``slot``) with another
value supersedes the current memories of that slot (``valid_to``, ``superseded_by``, a history
event by the actor ``supersession``; nothing is deleted), in the add's own transaction, so
every read after the reply, in any process, sees it.

Only what the words establish is recorded. An update said in passing ("Loving the commute on
the new e-bike" after "I drive to work") or in words of change that a second fact uses as well
("The ML team moved their deploys to Argo" after "Our team deploys with Spinnaker") is left
to ranking, which reads it at every search against the question asked
(``agentcore.domain.updates.ranking``): a record of it would be wrong too often
(docs/decisions.md, Knowledge updates).
"""

from __future__ import annotations

from typing import Any, Protocol

from agentcore.domain.models import EventKind, Memory
from agentcore.services.ports import UnitOfWork

SUPERSESSION = "supersession"  # the actor of the history event that marks a memory superseded


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
    another value are superseded by it; one created after it (an import of older memories)
    supersedes it instead. A restatement of the same value supersedes nothing."""
    if memory.fact_slot is None:
        return
    for other in await uow.memories.current_in_slot([memory.scope_key], memory.fact_slot):
        if other.id == memory.id or other.fact_value == memory.fact_value:
            continue
        if other.created_at > memory.created_at:
            if memory.superseded_by is None:
                memory.valid_to, memory.superseded_by = other.created_at, other.id
            continue
        await _mark(uow, other, memory, record)


def may_supersede(memory: Memory) -> bool:
    """Whether ``supersede`` may change anything for ``memory`` (it fills a slot): other
    memories are written one at a time around it."""
    return memory.fact_slot is not None


async def _mark(uow: UnitOfWork, old: Memory, new: Memory, record: RecordEvent) -> None:
    old.valid_to, old.superseded_by = new.created_at, new.id
    await uow.memories.update(old)
    after = {"valid_to": old.valid_to, "superseded_by": new.id}
    before = {"valid_to": None, "superseded_by": None}
    await record(uow, old, EventKind.UPDATE, before, after, actor=SUPERSESSION)
