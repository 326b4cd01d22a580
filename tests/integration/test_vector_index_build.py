"""The embedded shard's HNSW builds (edge_index): made on a copy in another process while the
shard serves, switched in without losing a write, and safe against crashes of the builder, of
the shard's process and of either in the middle of a switch."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.domain.errors import ProviderError
from agentcore.services.ports import VectorFilter, VectorPoint

DIM = 32
THRESHOLD = 300
SCOPE = "user:u1"
EMBEDDER = "test-embedder"


def vector(n: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    values = np.random.default_rng(n).standard_normal(DIM).astype(np.float32)
    unit: np.ndarray[Any, np.dtype[np.float32]] = values / np.linalg.norm(values)
    return unit


def point(n: int, layer: str = "episodic") -> VectorPoint:
    return VectorPoint(
        id=str(uuid.UUID(int=n + 1)),
        vector=vector(n),
        scope_key=SCOPE,
        scope_ids={"user_id": "u1"},
        layer=layer,
        tags=(f"t{n % 10}",),
        created_at=float(n),
    )


def points(start: int, end: int) -> list[VectorPoint]:
    return [point(n) for n in range(start, end)]


async def count(store: EdgeVectorStore, numbers: list[int], layer: str | None = None) -> int:
    ids = [point(n).id for n in numbers]
    layers = None if layer is None else [layer]
    return await store.count(VectorFilter(scope_keys=[SCOPE], layers=layers, ids=ids))


async def wait_for(
    store: EdgeVectorStore, done: Callable[[dict[str, Any]], bool], seconds: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        status = await store.index_status()
        if done(status):
            return status
        assert time.monotonic() < deadline, f"index build: still {status}"
        await asyncio.sleep(0.02)


def building(status: dict[str, Any]) -> bool:
    return status["builder_pid"] is not None


def built(status: dict[str, Any]) -> bool:
    return status["builds"] >= 1 and status["state"] == "idle"


def files(data_dir: Path) -> list[str]:
    return sorted(entry.name for entry in data_dir.iterdir())


@pytest.fixture
async def opened(tmp_path: Path) -> AsyncIterator[list[EdgeVectorStore]]:
    stores: list[EdgeVectorStore] = []
    yield stores
    for store in stores:
        await store.close()


async def open_store(
    data_dir: Path, opened: list[EdgeVectorStore], own_process: bool = True
) -> EdgeVectorStore:
    store = EdgeVectorStore(data_dir, own_process=own_process, index_threshold=THRESHOLD)
    opened.append(store)
    await store.ensure_collection(DIM, EMBEDDER)
    return store


@pytest.mark.parametrize("own_process", [True, False], ids=["process", "thread"])
async def test_a_switch_under_concurrent_writes_loses_nothing(
    tmp_path: Path, opened: list[EdgeVectorStore], own_process: bool
) -> None:
    store = await open_store(tmp_path, opened, own_process)
    await store.upsert(points(0, 2 * THRESHOLD))
    await store.flush()
    written, deleted, moved = list(range(2 * THRESHOLD)), [], []
    n = len(written)
    status = await store.index_status()
    while not built(status):  # writes go on through the copy, the build and the catch-up
        await store.upsert(points(n, n + 10))
        written += range(n, n + 10)
        gone = [written.pop(7), written.pop(len(written) - 3)]  # an old one and a new one
        await store.delete([point(m).id for m in gone])
        deleted += gone
        moved.append(written[len(moved) * 5])  # an update: the point's payload changes
        await store.upsert([point(moved[-1], "semantic")])
        if n % 50 == 0:
            await store.flush()
        n += 10
        status = await store.index_status()
        assert status["failures"] == 0
        assert n < 100_000, "the build never ended"
    # Served from the last build's copy (on a busy machine the writes during one build can
    # pass the threshold again, and a second build follows at once).
    assert status["directory"] == f"shard-{status['builds']}"
    assert status["unindexed"] < status["points"]  # most points are in an HNSW segment now
    assert len(deleted) > 20  # the build ran under a stream of writes
    moved = [m for m in moved if m not in set(deleted)]

    for reopened in (False, True):
        if reopened:
            await store.close()
            store = await open_store(tmp_path, opened, own_process)
        assert await count(store, written) == len(written)
        assert await count(store, deleted) == 0
        assert await count(store, moved, "semantic") == len(moved)
        assert await store.count(VectorFilter(scope_keys=[SCOPE])) == len(written)
        for m in written[:: max(1, len(written) // 40)]:  # found by search, HNSW included
            hits = await store.search(vector(m), VectorFilter(scope_keys=[SCOPE]), 1)
            assert hits[0].id == point(m).id
    assert "shard" not in files(tmp_path)  # the unindexed directory was dropped


async def test_searches_answer_while_the_builder_runs(
    tmp_path: Path, opened: list[EdgeVectorStore]
) -> None:
    store = await open_store(tmp_path, opened)
    await store.upsert(points(0, 4_000))
    await store.flush()
    await wait_for(store, building)
    slowest, answered = 0.0, 0
    while building(await store.index_status()):
        began = time.perf_counter()
        hits = await store.search(vector(answered % 4_000), VectorFilter(scope_keys=[SCOPE]), 5)
        slowest = max(slowest, time.perf_counter() - began)
        assert hits
        answered += 1
    assert answered >= 20, answered
    assert slowest < 0.5, slowest
    await wait_for(store, built)


async def test_a_builder_that_dies_leaves_the_shard_serving(
    tmp_path: Path, opened: list[EdgeVectorStore]
) -> None:
    store = await open_store(tmp_path, opened)
    await store.upsert(points(0, 2 * THRESHOLD))
    await store.flush()
    status = await wait_for(store, building)
    os.kill(status["builder_pid"], signal.SIGKILL)
    await store.upsert(points(2 * THRESHOLD, 2 * THRESHOLD + 10))

    status = await wait_for(store, lambda s: s["failures"] == 1)
    assert status["state"] == "idle"
    assert status["directory"] == "shard"
    assert await count(store, list(range(2 * THRESHOLD + 10))) == 2 * THRESHOLD + 10
    assert files(tmp_path) == ["collection.json", "shard", "shard.lock"]


async def test_a_restart_in_the_middle_of_a_build_recovers(
    tmp_path: Path, opened: list[EdgeVectorStore]
) -> None:
    store = await open_store(tmp_path, opened)
    await store.upsert(points(0, 2 * THRESHOLD))
    await store.flush()
    status = await wait_for(store, building)
    await store.upsert(points(2 * THRESHOLD, 2 * THRESHOLD + 50))  # journaled, then flushed
    await store.flush()
    os.kill(status["process"], signal.SIGKILL)

    with pytest.raises(ProviderError) as failed:
        await store.count(VectorFilter(scope_keys=[SCOPE]))
    assert failed.value.retryable
    everything = list(range(2 * THRESHOLD + 50))
    assert await count(store, everything) == len(everything)  # the shard reopened, whole
    _wait_until_gone(status["builder_pid"])  # the builder died with its parent

    await store.upsert(points(2 * THRESHOLD + 50, 2 * THRESHOLD + 60))
    status = await wait_for(store, built)  # a new build, on a fresh copy
    assert status["directory"] != "shard"
    assert await count(store, list(range(2 * THRESHOLD + 60))) == 2 * THRESHOLD + 60
    assert files(tmp_path) == ["collection.json", status["directory"], "shard.lock"]


@pytest.mark.parametrize("switched", [False, True], ids=["before-switch", "after-switch"])
async def test_a_crash_during_a_switch_leaves_one_whole_shard(
    tmp_path: Path, opened: list[EdgeVectorStore], switched: bool
) -> None:
    """What a crash leaves: before the switch, a built copy and its journal beside the shard
    named in collection.json; after it, the old directory beside the new one."""
    store = await open_store(tmp_path, opened)
    await store.upsert(points(0, 2 * THRESHOLD))
    await store.flush()
    status = await wait_for(store, built) if switched else await store.index_status()
    await store.close()
    active = status["directory"]
    leftover = "shard" if switched else "shard-1"
    shutil.copytree(tmp_path / active, tmp_path / leftover)
    (tmp_path / f"{leftover}.journal").write_bytes(b"partial")
    (tmp_path / f"{leftover}.building").touch()

    store = EdgeVectorStore(tmp_path, own_process=True, index_threshold=0)
    opened.append(store)
    await store.ensure_collection(DIM, EMBEDDER)
    assert (await store.index_status())["directory"] == active
    assert files(tmp_path) == ["collection.json", active, "shard.lock"]
    assert await count(store, list(range(2 * THRESHOLD))) == 2 * THRESHOLD


def _wait_until_gone(pid: int, seconds: float = 10) -> None:
    """Until ``pid`` has ended (gone, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state == "Z":
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} still runs")
