"""AccessRecorder: accesses noted on the search path are written later, in one transaction,
with the right counts and times, and are not lost when a write fails."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Self

import pytest

from agentcore.domain.errors import ProviderError
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory, build_memory
from agentcore.services.access import AccessRecorder
from agentcore.services.ports import Access
from tests.fakes import FakeStore, FakeUnitOfWork

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


async def stored(store: FakeStore, *contents: str) -> list[str]:
    ids = []
    async with store() as uow:
        for content in contents:
            memory = build_memory(NewMemory(content, ScopeIds(user_id="u")), T0, 100, "m")
            await uow.memories.add(memory)
            ids.append(memory.id)
        await uow.commit()
    return ids


async def test_note_writes_nothing_until_flush_which_writes_once() -> None:
    store = FakeStore()
    a, b = await stored(store, "a", "b")
    commits = store.commits
    recorder = AccessRecorder(store)
    recorder.note([a, b], T0)
    recorder.note([a], T0 + timedelta(seconds=5))
    recorder.note([a], T0 + timedelta(seconds=2))  # out of order: the latest time wins
    assert store.commits == commits
    assert recorder.pending == 2
    assert await recorder.flush() == 2
    assert store.commits == commits + 1
    assert recorder.pending == 0
    memories = store.state.memories
    assert memories[a].access_count == 3
    assert memories[a].last_accessed_at == T0 + timedelta(seconds=5)
    assert memories[b].access_count == 1
    assert memories[b].last_accessed_at == T0
    assert await recorder.flush() == 0
    assert store.commits == commits + 1


async def test_times_are_kept_to_the_bucket() -> None:
    store = FakeStore()
    a, b = await stored(store, "a", "b")
    recorder = AccessRecorder(store, bucket_seconds=60)
    recorder.note([a], T0 + timedelta(seconds=1))
    recorder.note([b], T0 + timedelta(seconds=30))
    await recorder.flush()
    for memory_id in (a, b):  # one statement for the bucket, at its latest access
        assert store.state.memories[memory_id].last_accessed_at == T0 + timedelta(seconds=30)


async def test_accesses_to_deleted_memories_are_ignored() -> None:
    store = FakeStore()
    (a,) = await stored(store, "a")
    recorder = AccessRecorder(store)
    recorder.note(["gone", a], T0)
    assert await recorder.flush() == 2
    assert store.state.memories[a].access_count == 1


class _Broken:
    async def __aenter__(self) -> Self:
        raise ProviderError("database down")

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


class _Flaky:
    """A unit-of-work factory over a FakeStore that fails while ``down``."""

    def __init__(self, store: FakeStore) -> None:
        self.store = store
        self.down = False

    def __call__(self, *, read_only: bool = False) -> FakeUnitOfWork | _Broken:
        return _Broken() if self.down else self.store(read_only=read_only)


async def test_a_failed_flush_keeps_the_tallies_for_the_next() -> None:
    store = FakeStore()
    (a,) = await stored(store, "a")
    flaky = _Flaky(store)
    recorder = AccessRecorder(flaky)  # type: ignore[arg-type]
    recorder.note([a, a], T0)
    flaky.down = True
    with pytest.raises(ProviderError):
        await recorder.flush()
    recorder.note([a], T0 + timedelta(seconds=1))  # noted while the database was down
    flaky.down = False
    assert await recorder.flush() == 1
    assert store.state.memories[a].access_count == 3
    assert store.state.memories[a].last_accessed_at == T0 + timedelta(seconds=1)


async def test_when_the_buffer_is_full_new_memories_are_dropped_not_blocked() -> None:
    store = FakeStore()
    a, b, c = await stored(store, "a", "b", "c")
    recorder = AccessRecorder(store, max_pending=2)
    recorder.note([a, b, c], T0)
    recorder.note([a], T0)  # already pending: still counted
    assert recorder.pending == 2
    await recorder.flush()
    counts = [store.state.memories[i].access_count for i in (a, b, c)]
    assert counts == [2, 1, 0]


class _BatchMemories:
    """Records each batch: one call per flush, whatever the counts."""

    def __init__(self) -> None:
        self.calls: list[dict[str, tuple[int, datetime]]] = []

    async def add_accesses(self, accesses: Mapping[str, Access]) -> None:
        self.calls.append({k: (a.count, a.at) for k, a in accesses.items()})


class _BatchUow:
    def __init__(self, memories: _BatchMemories) -> None:
        self.memories = memories
        self.committed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def commit(self) -> None:
        self.committed = True


async def test_a_flush_is_one_batch_with_times_per_bucket() -> None:
    memories = _BatchMemories()
    units: list[_BatchUow] = []

    def factory(*, read_only: bool = False) -> _BatchUow:
        units.append(_BatchUow(memories))
        return units[-1]

    recorder = AccessRecorder(factory)  # type: ignore[arg-type]
    for _ in range(50):
        recorder.note(["hot"], T0)
    recorder.note(["cold"], T0 + timedelta(seconds=0.5))
    recorder.note(["late"], T0 + timedelta(seconds=3))
    await recorder.flush()
    bucket = T0 + timedelta(seconds=0.5)  # one time per bucket: few statements
    assert memories.calls == [
        {"hot": (50, bucket), "cold": (1, bucket), "late": (1, T0 + timedelta(seconds=3))}
    ]
    assert units[-1].committed
