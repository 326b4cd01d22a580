"""Exact duplicates: a memory added as ``unique`` whose text repeats a live memory of its scope,
layer and stage (``content_hash``: the same text after Unicode and whitespace normalization) is
not stored again; the add answers with the stored memory, one access counted.

A different scope, layer or stage is not a repeat (a task's stages keep their own records),
nor is a memory that stopped being current (superseded, compacted, expired): "I live in
Berlin" again after a move to Munich is news. Keyed memories are updated by key, never
deduplicated. Within one group of writes the first of two equal texts is stored and the second
repeats it. Concurrent writers of one text take turns on a lock (``lock_texts``), so a repeat
never slips in twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from agentcore.domain.models import Memory
from agentcore.domain.records import content_hash
from agentcore.services.ports import UnitOfWork

Signature = tuple[str, str, str, str | None]  # scope key, layer, content hash, stage id


def signature(memory: Memory) -> Signature:
    return (memory.scope_key, memory.layer.value, content_hash(memory.content), memory.stage_id)


async def repeats(uow: UnitOfWork, unique: Sequence[Memory], now: datetime) -> dict[str, Memory]:
    """For each of ``unique`` (new, in write order) that repeats a stored memory or an
    earlier one of them: its id → the memory it repeats."""
    if not unique:
        return {}
    wanted = {memory.id: signature(memory) for memory in unique}
    await uow.memories.lock_texts([f"{key}|{text}" for key, _, text, _ in wanted.values()])
    stored = await uow.memories.same_texts(
        [key for key, _, _, _ in wanted.values()], [text for _, _, text, _ in wanted.values()], now
    )
    first: dict[Signature, Memory] = {}
    for memory in stored:
        first.setdefault(signature(memory), memory)
    found: dict[str, Memory] = {}
    for memory in unique:
        earlier = first.setdefault(wanted[memory.id], memory)
        if earlier is not memory:
            found[memory.id] = earlier
    return found
