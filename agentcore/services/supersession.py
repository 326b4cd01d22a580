"""Knowledge that updates: a newer memory of a scope that gives an attribute a new value
supersedes the current memory that held the old one (``valid_to``, ``superseded_by``, a history
event by the actor ``supersession``; nothing is deleted). Two readers decide, one record:

- **the rules, on write** (``supersede``, in the add's transaction): a memory whose slot the
  rules read (``agentcore.domain.updates.statements``, or an LLM extractor's ``slot``)
  supersedes the current memories of its slot with another value, so the next read sees it;
- **meaning, confirmed, before the write answers** (``UpdateReader``, called by the write once
  it has committed, so every read after the reply ranks with it, in any process): a new memory
  whose words could confirm a replacement, read as a question, retrieves the scope's nearest
  current facts (the vector store's and those whose vectors are still owed, embedded then if
  nobody has: ``services.fresh``), and ``agentcore.domain.updates.replacement`` decides from
  their similarity (relative to the model and to the scope), the readers' vetoes and a
  confirmation besides meaning (a change said in words, the old value said to have ended, the
  same rule slot, what is new about the old one's matter); its own transaction records it.
  What meaning alone relates is recorded nowhere (a question about now may still rank the
  newer first: ``agentcore.domain.updates.ranking``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from agentcore.domain.clock import Clock
from agentcore.domain.models import EventKind, Memory
from agentcore.domain.records import FACT_LAYERS, speaker_of
from agentcore.domain.updates import inferred_value
from agentcore.domain.updates.references import REFERENCES
from agentcore.domain.updates.replacement import (
    Bars,
    Calibration,
    Reading,
    may_replace,
    reading_of,
    replaces,
)
from agentcore.services.fresh import FreshVectors, embed_owed
from agentcore.services.ports import (
    Embedder,
    UnitOfWork,
    UnitOfWorkFactory,
    VectorFilter,
    VectorStore,
)

SUPERSESSION = "supersession"  # the actor of the history event that marks a memory superseded

# The bars, in units of the model (``Calibration.lift``): 0 is how close unrelated statements
# are under it, 1 a perfect match; ``linked`` where the words name the old value, slot or
# matter. Chosen on benchmarks/data/knowledge_updates.json (docs/decisions.md, Knowledge
# updates).
BARS = Bars(lift=0.24, margin=0.1, linked=0.15)
_NEIGHBOURS = 8  # nearest memories of the scope read for each new fact
_TYPICAL = 5  # the rank of the neighbour that stands for an ordinary one (``replaces``)
_CONSIDERED = 3  # the nearest ones a new fact may replace (the first the readers allow)
# Seconds a reading waits, at most, for the vectors of its scope's owed memories that another
# caller is embedding (the indexer's batch, a search's): a reading compares every older fact.
_OWED_WAIT = 5.0


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


class UpdateReader:
    """Supersession recognised from meaning, for memories just committed."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        vectors: VectorStore,
        embedder: Embedder,
        clock: Clock,
        *,
        fresh: FreshVectors | None = None,
        bars: Bars = BARS,
        references: Sequence[str] = REFERENCES,
    ) -> None:
        """``fresh``: the memories whose vectors the indexer still owes (the search's
        ``EnhancedRetrieval.fresh``), compared beside the vector store's."""
        self._uow_factory = uow_factory
        self._vectors = vectors
        self._embedder = embedder
        self._clock = clock
        self._fresh = FreshVectors() if fresh is None else fresh
        self._bars = bars
        self._references = references
        self._calibration: Calibration | None = None

    async def read(self, memories: Sequence[Memory], record: RecordEvent) -> int:
        """Each of these new memories (oldest first) that states a fact of the episodic or
        semantic layer supersedes the current fact of its scope that it gives a new value, if
        meaning finds one and another signal confirms it
        (``agentcore.domain.updates.replacement``). Their words are read first, as given: only
        a memory that could replace a fact by its words is read again from the database and
        costs an embedding. Returns how many supersessions were recorded."""
        worth = [m.id for m in memories if _worth_reading(m)]
        if not worth:
            return 0
        async with self._uow_factory(read_only=True) as uow:
            current = await uow.memories.get_many(worth)
        recorded = 0
        for memory in sorted(current, key=lambda m: (m.created_at, m.id)):
            if await self._read_one(memory, record):
                recorded += 1
        return recorded

    async def calibration(self) -> Calibration:
        """The model's background, measured once on the reference statements: the mean
        similarity of one read as a query to another as a passage."""
        if self._calibration is None:
            passages = await self._embedder.embed(list(self._references))
            total, pairs = 0.0, 0
            for i, text in enumerate(self._references):
                query = await self._embedder.embed_query(text)
                scores = passages @ query
                total += float(scores.sum() - scores[i])
                pairs += len(self._references) - 1
            self._calibration = Calibration(total / max(pairs, 1))
        return self._calibration

    async def _read_one(self, memory: Memory, record: RecordEvent) -> bool:
        if not _worth_reading(memory):
            return False  # decided by its words: no embedding spent
        new = _reading(memory)
        calibration = await self.calibration()
        neighbours = await self._neighbours(memory)
        if not neighbours:
            return False
        typical = (
            neighbours[_TYPICAL - 1][1] if len(neighbours) >= _TYPICAL else calibration.background
        )
        for old, score in neighbours[:_CONSIDERED]:
            if not _may_be_replaced(old, memory):
                continue
            verdict = replaces(_reading(old), new, score, typical, calibration, self._bars)
            if verdict.vetoed:
                continue
            return verdict.replaces and await self._record(old.id, memory.id, record)
        return False

    async def _neighbours(self, memory: Memory) -> list[tuple[Memory, float]]:
        """The ``_NEIGHBOURS`` live memories of the fact layers in ``memory``'s scope nearest
        to it read as a question, best first, with their cosines: the vector store's and the
        scope's owed ones (``services.fresh``; those nobody has embedded are embedded here, so
        a fact written a moment ago is compared whether the indexer is behind or not)."""
        keys = [memory.scope_key]
        owed = {  # its own passage vector is the indexer's to make
            i: o for i, o in self._fresh.unembedded(keys, most=None).items() if i != memory.id
        }
        query, _ = await asyncio.gather(
            self._embedder.embed_query(memory.content),
            embed_owed(self._fresh, self._embedder, owed, _OWED_WAIT),
        )
        now = self._clock()
        flt = VectorFilter(
            scope_keys=keys, layers=[layer.value for layer in FACT_LAYERS], alive_at=now.timestamp()
        )
        found = await self._vectors.search(query, flt, _NEIGHBOURS + 1)
        merged = {hit.id: hit for hit in found} | {
            hit.id: hit for hit in self._fresh.cosines(query, keys)
        }
        merged.pop(memory.id, None)
        hits = sorted(merged.values(), key=lambda hit: (-hit.score, hit.id))[: 2 * _NEIGHBOURS]
        async with self._uow_factory(read_only=True) as uow:
            stored = {m.id: m for m in await uow.memories.get_many([h.id for h in hits])}
        return [
            (stored[hit.id], hit.score) for hit in hits if _of_fact_layers(stored.get(hit.id), now)
        ][:_NEIGHBOURS]

    async def _record(self, old_id: str, new_id: str, record: RecordEvent) -> bool:
        """Mark ``old_id`` superseded by ``new_id`` unless either changed meanwhile; a slot the
        old one filled passes to the new one (with a value of its own), so the rules and a
        question that asks for the slot find the current value."""
        async with self._uow_factory() as uow:
            old, new = await uow.memories.get(old_id), await uow.memories.get(new_id)
            if old is None or new is None or old.superseded_by or new.superseded_by:
                return False
            await _mark(uow, old, new, record)
            if old.fact_slot is not None and new.fact_slot is None:
                new.fact_slot, new.fact_value = old.fact_slot, inferred_value(new.id)
                await uow.memories.update(new)
                after = {"fact_slot": new.fact_slot, "fact_value": new.fact_value}
                before = {"fact_slot": None, "fact_value": None}
                await record(uow, new, EventKind.UPDATE, before, after, actor=SUPERSESSION)
            await uow.commit()
        return True


def _reading(memory: Memory) -> Reading:
    return reading_of(memory.content, memory.fact_slot, memory.fact_value)


def _worth_reading(memory: Memory) -> bool:
    """A current fact of a fact layer whose words may replace an older one."""
    return (
        memory.layer in FACT_LAYERS
        and memory.superseded_by is None
        and memory.compacted_into_id is None
        and may_replace(memory.content, memory.fact_slot, memory.fact_value)
    )


def _of_fact_layers(memory: Memory | None, now: datetime) -> bool:
    """Stored, of a fact layer and alive: what the vector store's filter keeps."""
    return (
        memory is not None
        and memory.layer in FACT_LAYERS
        and not memory.is_expired(now)
        and memory.compacted_into_id is None
    )


def _may_be_replaced(old: Memory, new: Memory) -> bool:
    """Current, older, of a fact layer, and said by the same speaker."""
    return (
        old.id != new.id
        and old.layer in FACT_LAYERS
        and old.superseded_by is None
        and old.compacted_into_id is None
        and old.created_at < new.created_at
        and speaker_of(old.metadata) == speaker_of(new.metadata)
    )
