"""Write-behind vectors: a memory is acknowledged once it is committed, not once it is embedded.

``memory.add`` commits the memory, its lexical document and an outbox entry in one transaction
and replies; the memory is durable and findable by its words at once. The indexer then embeds
and writes its vector in the background. Entries queued while an embedding runs are embedded
together in the next call (one onnxruntime call for the writes that arrived together, up to
``batch_size``), so concurrent writers share the embedder's work; the next batch is read and
embedded while the previous one is written (``VectorSync.prepare`` / ``write``).

Reads never wait for it: the memories it owes are in ``FreshVectors`` from their commit until
their vectors are written, with each vector as soon as it is embedded, and a search compares
those with its query itself (``services.fresh``). A vector the indexer could not write stays in
the outbox and is replayed by ``VectorSync`` (failed entries every interval, and every entry
after a crash).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Collection, Sequence

from agentcore.domain.models import Memory
from agentcore.services.failures import log_failure
from agentcore.services.fresh import Claimed, FreshVectors
from agentcore.services.ports import OutboxEntry
from agentcore.services.vector_sync import UPSERT, Prepared, VectorSync

log = logging.getLogger(__name__)

EXACT_WAIT = 5.0  # seconds an exact check waits for its scopes' owed vectors, at most
_Batch = tuple[list[tuple[int, OutboxEntry]], "asyncio.Future[Prepared]"]


class VectorIndexer:
    def __init__(
        self,
        sync: VectorSync,
        *,
        batch_size: int = 64,
        fresh: FreshVectors | None = None,
    ) -> None:
        self._sync = sync
        self._batch_size = batch_size
        self._fresh = FreshVectors() if fresh is None else fresh
        self._queue: deque[tuple[int, OutboxEntry]] = deque()  # (sequence number, entry)
        self._last_of_scope: dict[str, int] = {}  # scope key -> its newest sequence number
        self._submitted = 0
        self._done = 0  # every sequence number up to this one is indexed (or handed back)
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return self._submitted - self._done

    def submit(self, entries: Sequence[tuple[int, Memory]]) -> None:
        """Queue the vector writes of committed memories (outbox entry id, memory)."""
        if not entries:
            return
        for entry_id, memory in entries:
            self._submitted += 1
            self._queue.append((self._submitted, OutboxEntry(entry_id, memory.id, UPSERT, 0)))
            self._last_of_scope[memory.scope_key] = self._submitted
        self._fresh.owe(memory for _, memory in entries)
        self._sync.reserve([entry_id for entry_id, _ in entries])
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="indexer")

    async def settle(self, scope_keys: Collection[str], seconds: float = EXACT_WAIT) -> bool:
        """Wait until the vectors of these scopes owed now are written (at most ``seconds``):
        for exact checks (a near-duplicate fact) and a bulk import that asks to
        (``wait_indexed``), never for a caller's search."""
        target = max((self._last_of_scope.get(key, 0) for key in scope_keys), default=0)
        return await self._wait_for(target, seconds)

    async def drain(self, seconds: float) -> bool:
        """Wait until everything queued now is written (at shutdown); True if it was."""
        return await self._wait_for(self._submitted, seconds)

    async def _wait_for(self, target: int, seconds: float) -> bool:
        if self._done >= target:
            return True
        try:
            async with self._changed:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self._done >= target), seconds
                )
        except TimeoutError:
            return False
        return True

    async def _run(self) -> None:
        """Each batch is prepared (read and embedded), then written; the next batch is
        prepared while the one before it is finished, so the embedder's threads do not wait
        for the database and the vector store. Batches are written in their order."""
        ahead: _Batch | None = None
        while self._queue or ahead is not None:
            current = None
            if self._queue:
                taken = min(self._batch_size, len(self._queue))
                batch = [self._queue.popleft() for _ in range(taken)]
                ids = [entry.memory_id for _, entry in batch]
                claimed = self._fresh.claim(ids)
                known = self._fresh.known(ids)  # embedded by a search meanwhile
                prepared = self._sync.prepare([entry for _, entry in batch], known)
                current = (batch, asyncio.ensure_future(prepared))
                current[1].add_done_callback(functools.partial(self._embedded, claimed))
            if ahead is not None:
                await self._finish(*ahead)
            ahead = current

    async def _finish(
        self, batch: list[tuple[int, OutboxEntry]], prepared: asyncio.Future[Prepared]
    ) -> None:
        entries = [entry for _, entry in batch]
        try:
            await self._sync.write(await prepared)
        except Exception as exc:  # the entries stay in the outbox: replayed by VectorSync
            log_failure(log, f"indexing {len(batch)} vectors failed; they will be replayed", exc)
        finally:
            self._sync.release([entry.id for entry in entries])
            self._fresh.settled(entry.memory_id for entry in entries)
        async with self._changed:
            self._done = batch[-1][0]
            if self._done >= self._submitted:  # nothing queued or under way
                self._last_of_scope.clear()
            self._changed.notify_all()

    def _embedded(self, claimed: Claimed, prepared: asyncio.Future[Prepared]) -> None:
        """A batch's vectors, the moment they are computed: searches compare them from now."""
        vectors = {}
        if not prepared.cancelled() and prepared.exception() is None:
            vectors = {point.id: point.vector for _, point in prepared.result().points}
        self._fresh.fill(claimed, vectors)
