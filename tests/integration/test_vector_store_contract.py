"""One contract for every VectorStore adapter: qdrant-edge on disk, qdrant-client local mode,
and mem0's Qdrant layer (qdrant-client local mode on disk)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from qdrant_client import AsyncQdrantClient

from agentcore.adapters.mem0 import Mem0VectorStore
from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.adapters.vectors.qdrant_server import QdrantServerVectorStore
from agentcore.domain.errors import ConfigurationError, ProviderError
from agentcore.domain.filter_grammar import parse_filter
from agentcore.services.ports import VectorFilter, VectorPoint, VectorStore
from agentcore.services.vector_payload import decided
from agentcore.services.vector_sync import to_point
from tests.filter_oracle import satisfies
from tests.filter_strategies import RECORDS, memory_of

DIM = 4
EMBEDDER = "test-embedder"
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Backend:
    store: VectorStore
    # Opens the same collection again (a new store object) for the given dimension.
    reopen: Callable[[int], Awaitable[VectorStore]]


@pytest.fixture(params=["qdrant-edge", "qdrant-edge-process", "qdrant", "mem0"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    opened: list[VectorStore] = []

    if request.param != "qdrant":

        async def open_store(dimension: int) -> VectorStore:
            store: VectorStore
            if request.param == "mem0":
                store = Mem0VectorStore.open(tmp_path / "data")
            else:
                own_process = request.param == "qdrant-edge-process"
                store = EdgeVectorStore(tmp_path / "vectors", own_process=own_process)
            opened.append(store)
            await store.ensure_collection(dimension, EMBEDDER)
            return store

        store = await open_store(DIM)

        async def reopen(dimension: int) -> VectorStore:
            await store.close()
            return await open_store(dimension)

    else:
        client = AsyncQdrantClient(location=":memory:")
        store = QdrantServerVectorStore(client, "agentcore_memories")
        opened.append(store)
        await store.ensure_collection(DIM, EMBEDDER)

        async def reopen(dimension: int) -> VectorStore:
            again = QdrantServerVectorStore(client, "agentcore_memories")
            await again.ensure_collection(dimension, "other-embedder")
            return again

    yield Backend(store, reopen)
    for each in opened:
        await each.close()


def vec(*values: float) -> npt.NDArray[np.float32]:
    array = np.asarray(values, dtype=np.float32)
    normalized: npt.NDArray[np.float32] = array / np.linalg.norm(array)
    return normalized


def new_id() -> str:
    return str(uuid.uuid4())


def point(vector: npt.NDArray[np.float32], **fields: Any) -> VectorPoint:
    values: dict[str, Any] = {
        "id": new_id(),
        "scope_key": "user:u1",
        "scope_ids": {"user_id": "u1"},
        "layer": "episodic",
    }
    values.update(fields)
    return VectorPoint(vector=vector, **values)


QUERY = vec(1, 0, 0, 0)
IN_SCOPE = VectorFilter(scope_keys=["user:u1"])


def where(raw: dict[str, Any]) -> VectorFilter:
    return VectorFilter(["user:u1"], where=parse_filter(raw))


async def ids(store: VectorStore, flt: VectorFilter, limit: int = 10) -> list[str]:
    return [hit.id for hit in await store.search(QUERY, flt, limit)]


async def test_search_orders_by_cosine(backend: Backend) -> None:
    far, near, mid = point(vec(0, 1, 0, 0)), point(vec(1, 0.1, 0, 0)), point(vec(1, 1, 0, 0))
    await backend.store.upsert([far, near, mid])

    hits = await backend.store.search(QUERY, IN_SCOPE, 10)

    assert [hit.id for hit in hits] == [near.id, mid.id, far.id]
    assert hits[0].score == pytest.approx(float(vec(1, 0.1, 0, 0)[0]), abs=1e-4)
    assert hits[2].score == pytest.approx(0.0, abs=1e-4)


async def test_scope_isolation(backend: Backend) -> None:
    mine = point(vec(0, 1, 0, 0))
    other = point(QUERY, scope_key="user:u2", scope_ids={"user_id": "u2"})
    await backend.store.upsert([mine, other])

    assert await ids(backend.store, IN_SCOPE) == [mine.id]
    both = VectorFilter(scope_keys=["user:u1", "user:u2"])
    assert set(await ids(backend.store, both)) == {mine.id, other.id}
    assert await ids(backend.store, VectorFilter(scope_keys=["user:u3"])) == []


async def test_empty_scope_keys_match_nothing(backend: Backend) -> None:
    await backend.store.upsert([point(QUERY)])

    assert await ids(backend.store, VectorFilter(scope_keys=[])) == []
    assert await backend.store.count(VectorFilter(scope_keys=[])) == 0


async def test_filter_by_layers(backend: Backend) -> None:
    episodic, semantic = point(QUERY), point(QUERY, layer="semantic")
    procedural = point(QUERY, layer="procedural")
    await backend.store.upsert([episodic, semantic, procedural])

    flt = VectorFilter(scope_keys=["user:u1"], layers=["semantic", "procedural"])
    assert set(await ids(backend.store, flt)) == {semantic.id, procedural.id}
    assert await ids(backend.store, VectorFilter(["user:u1"], layers=["working"])) == []


async def test_filter_by_stage(backend: Backend) -> None:
    staged, unstaged = point(QUERY, stage_id="stage-1"), point(QUERY)
    await backend.store.upsert([staged, unstaged, point(QUERY, stage_id="stage-2")])

    assert await ids(backend.store, where({"stage_id": "stage-1"})) == [staged.id]
    assert len(await ids(backend.store, IN_SCOPE)) == 3


async def test_filter_by_ids_scores_exactly_those_points(backend: Backend) -> None:
    near, far, other = point(vec(1, 0.1, 0, 0)), point(vec(0, 1, 0, 0)), point(QUERY)
    foreign = point(QUERY, scope_key="user:u2", scope_ids={"user_id": "u2"})
    await backend.store.upsert([near, far, other, foreign])

    flt = VectorFilter(["user:u1"], ids=[far.id, near.id, foreign.id, new_id()])
    hits = await backend.store.search(QUERY, flt, 10)

    assert [hit.id for hit in hits] == [near.id, far.id]  # the scope still applies
    assert hits[1].score == pytest.approx(0.0, abs=1e-4)
    assert await ids(backend.store, VectorFilter(["user:u1"], ids=[])) == []


async def test_filter_by_any_tag(backend: Backend) -> None:
    red, blue = point(QUERY, tags=["red", "x"]), point(QUERY, tags=["blue"])
    await backend.store.upsert([red, blue, point(QUERY)])

    flt = where({"tags": {"any": ["red", "blue"]}})
    assert set(await ids(backend.store, flt)) == {red.id, blue.id}
    assert await ids(backend.store, where({"tags": "x"})) == [red.id]


async def test_filter_by_all_tags(backend: Backend) -> None:
    both, red = point(QUERY, tags=["red", "x"]), point(QUERY, tags=["red"])
    await backend.store.upsert([both, red, point(QUERY, tags=["x"])])
    found = await ids(backend.store, where({"tags": {"all": ["red", "x"]}}))
    assert found == [both.id]


async def test_filter_by_metadata_equality(backend: Backend) -> None:
    match = point(QUERY, metadata={"source": "chat", "turn": 3, "pinned": True})
    other = point(QUERY, metadata={"source": "chat", "turn": 4, "pinned": True})
    await backend.store.upsert([match, other, point(QUERY)])

    flt = where({"source": "chat", "turn": 3})
    assert await ids(backend.store, flt) == [match.id]
    assert set(await ids(backend.store, where({"pinned": True}))) == {match.id, other.id}


async def test_expired_points_excluded_with_alive_at(backend: Backend) -> None:
    expired, later, forever = (
        point(QUERY, expires_at=100.0),
        point(QUERY, expires_at=300.0),
        point(QUERY),
    )
    await backend.store.upsert([expired, later, forever])

    flt = VectorFilter(["user:u1"], alive_at=200.0)
    assert set(await ids(backend.store, flt)) == {later.id, forever.id}
    assert await ids(backend.store, VectorFilter(["user:u1"], alive_at=300.0)) == [forever.id]
    assert len(await ids(backend.store, IN_SCOPE)) == 3


async def test_score_threshold_and_limit(backend: Backend) -> None:
    near, mid, far = point(vec(1, 0.1, 0, 0)), point(vec(1, 1, 0, 0)), point(vec(0, 1, 0, 0))
    await backend.store.upsert([near, mid, far])

    hits = await backend.store.search(QUERY, IN_SCOPE, 10, score_threshold=0.5)
    assert [hit.id for hit in hits] == [near.id, mid.id]
    assert await ids(backend.store, IN_SCOPE, limit=1) == [near.id]
    assert await ids(backend.store, IN_SCOPE, limit=0) == []


async def test_upsert_is_idempotent_and_updates_payload(backend: Backend) -> None:
    original = point(QUERY, layer="episodic", tags=["a"])
    await backend.store.upsert([original])
    await backend.store.upsert([original])
    assert await backend.store.count(IN_SCOPE) == 1

    promoted = point(QUERY, id=original.id, layer="semantic", tags=["b"])
    await backend.store.upsert([promoted])

    assert await backend.store.count(IN_SCOPE) == 1
    assert await ids(backend.store, VectorFilter(["user:u1"], layers=["episodic"])) == []
    assert await ids(backend.store, VectorFilter(["user:u1"], layers=["semantic"])) == [original.id]
    assert await ids(backend.store, where({"tags": "a"})) == []


async def test_delete_and_count(backend: Backend) -> None:
    points = [point(QUERY) for _ in range(3)] + [point(QUERY, layer="semantic")]
    await backend.store.upsert(points)
    assert await backend.store.count(IN_SCOPE) == 4
    assert await backend.store.count(VectorFilter(["user:u1"], layers=["semantic"])) == 1

    await backend.store.delete([points[0].id, points[1].id, new_id()])
    await backend.store.delete([])

    assert await backend.store.count(IN_SCOPE) == 2
    assert set(await ids(backend.store, IN_SCOPE)) == {points[2].id, points[3].id}


async def test_stored_vectors_by_id(backend: Backend) -> None:
    first, second = point(vec(1, 2, 0, 0)), point(vec(0, 0, 3, 1))
    await backend.store.upsert([first, second])
    missing = new_id()

    found = await backend.store.vectors([first.id, second.id, missing])

    assert set(found) == {first.id, second.id}
    for stored in (first, second):
        assert found[stored.id] == pytest.approx(stored.vector, abs=1e-5)
    assert await backend.store.vectors([]) == {}


async def test_concurrent_calls_all_land(backend: Backend) -> None:
    points = [point(vec(1, i / 20, 0, 0)) for i in range(20)]
    searches = [backend.store.search(QUERY, IN_SCOPE, 5) for _ in range(20)]

    await asyncio.gather(*(backend.store.upsert([p]) for p in points), *searches)

    assert await backend.store.count(IN_SCOPE) == 20
    assert await ids(backend.store, IN_SCOPE, limit=1) == [points[0].id]


async def test_other_dimension_is_a_configuration_error(backend: Backend) -> None:
    await backend.store.upsert([point(QUERY)])

    with pytest.raises(ConfigurationError) as raised:
        await backend.reopen(DIM * 2)

    assert str(DIM) in raised.value.message
    assert str(DIM * 2) in raised.value.message
    assert EMBEDDER in raised.value.message or "other-embedder" in raised.value.message


async def test_a_reset_starts_over_for_another_dimension(backend: Backend) -> None:
    await backend.store.upsert([point(QUERY)])
    await backend.store.flush()

    await backend.store.reset_collection(DIM * 2, "other-embedder")
    assert await backend.store.count(IN_SCOPE) == 0
    wide = vec(1, 0, 0, 0, 0, 0, 0, 1)
    wider = point(wide)
    await backend.store.upsert([wider])
    await backend.store.flush()
    hits = await backend.store.search(wide, IN_SCOPE, 10)
    assert [hit.id for hit in hits] == [wider.id]
    again = await backend.reopen(DIM * 2)  # the new dimension is the collection's now
    assert await again.count(IN_SCOPE) == 1


async def test_same_dimension_reopens(backend: Backend) -> None:
    kept = point(QUERY)
    await backend.store.upsert([kept])
    await backend.store.flush()

    again = await backend.reopen(DIM)

    assert await ids(again, IN_SCOPE) == [kept.id]


async def test_edge_persists_across_close_and_reopen(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path)
    await store.ensure_collection(DIM, EMBEDDER)
    kept = point(QUERY, tags=["t"])
    await store.upsert([kept, point(vec(0, 1, 0, 0))])
    await store.flush()
    await store.close()

    reopened = EdgeVectorStore(tmp_path)
    await reopened.ensure_collection(DIM, EMBEDDER)
    try:
        assert (await reopened.search(QUERY, IN_SCOPE, 1))[0].id == kept.id
        assert await ids(reopened, where({"tags": "t"})) == [kept.id]
        assert await reopened.count(IN_SCOPE) == 2
    finally:
        await reopened.close()


async def test_edge_names_dimensions_when_metadata_file_is_lost(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path)
    await store.ensure_collection(DIM, EMBEDDER)
    await store.close()
    (tmp_path / "collection.json").unlink()

    other = EdgeVectorStore(tmp_path)
    with pytest.raises(ConfigurationError, match=f"{DIM}-dimensional.*{DIM * 2} dimensions"):
        await other.ensure_collection(DIM * 2, EMBEDDER)
    await other.close()


_KILLED_WRITER = """
import asyncio, os, signal, sys
import numpy as np
from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.services.ports import VectorPoint

async def main() -> None:
    store = EdgeVectorStore(sys.argv[1])
    await store.ensure_collection(4, "test-embedder")
    vector = np.asarray([1, 0, 0, 0], dtype=np.float32)
    await store.upsert([VectorPoint(sys.argv[2], vector, "user:u1", {}, "episodic")])
    if sys.argv[3] == "flush":
        await store.flush()
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


def write_then_sigkill(data_dir: Path, point_id: str, flush: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    script = textwrap.dedent(_KILLED_WRITER)
    args = [sys.executable, "-c", script, str(data_dir), point_id, "flush" if flush else "-"]
    done = subprocess.run(args, env=env, cwd=REPO_ROOT, capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr.decode()


async def test_edge_flushed_write_survives_sigkill(tmp_path: Path) -> None:
    point_id = new_id()
    write_then_sigkill(tmp_path, point_id, flush=True)

    store = EdgeVectorStore(tmp_path)
    await store.ensure_collection(DIM, EMBEDDER)
    try:
        assert await ids(store, IN_SCOPE) == [point_id]
    finally:
        await store.close()


async def test_edge_in_its_own_process_restarts_after_the_process_dies(tmp_path: Path) -> None:
    store = EdgeVectorStore(tmp_path, own_process=True)
    await store.ensure_collection(DIM, EMBEDDER)
    try:
        kept = point(QUERY)
        await store.upsert([kept])
        await store.flush()
        child = store._shard._process  # type: ignore[attr-defined]
        child.kill()
        child.join()
        with pytest.raises(ProviderError) as failed:  # the call under way: retryable
            await store.upsert([point(vec(0, 1, 0, 0))])
        assert failed.value.retryable
        assert await ids(store, IN_SCOPE) == [kept.id]  # a new process, the shard reopened
    finally:
        await store.close()
    assert not child.is_alive()


# Filters on the memory's fields (``VectorFilter.where``): each engine must keep every point
# whose memory satisfies the filter (the database decides on the rows read), and return
# exactly those when the payload decides the filter (``services.vector_payload.decided``: the
# memory's own fields, string equality on top-level metadata; mem0's adapter asks its Qdrant
# client for what mem0's syntax cannot say).
EXACT, WIDER = "exact", "wider"
WHERE_CASES: list[tuple[dict[str, Any], str]] = [
    ({"layer": "semantic"}, EXACT),
    ({"layer": {"nin": ["semantic", "procedural"]}}, EXACT),
    ({"stage_id": "s1"}, EXACT),
    ({"stage_id": {"ne": "s1"}}, EXACT),
    ({"stage_id": "*"}, EXACT),
    ({"tags": {"all": ["red", "blue"]}}, EXACT),
    ({"tags": {"none": ["red", "blue"]}}, EXACT),
    ({"tags": {"in": ["green", "blue"]}}, EXACT),
    ({"tags": "*"}, EXACT),
    ({"critical": True}, EXACT),
    ({"user_id": "u1", "session_id": "sess-1"}, EXACT),
    ({"session_id": {"ne": "sess-1"}}, EXACT),
    ({"run_id": "*"}, EXACT),
    ({"critical": {"ne": True}}, EXACT),
    ({"created_at": {"gte": RECORDS[10]["created_at"], "lt": RECORDS[20]["created_at"]}}, EXACT),
    ({"created_at": RECORDS[7]["created_at"]}, EXACT),
    ({"NOT": [{"layer": "episodic"}, {"tags": "red"}]}, EXACT),
    ({"OR": [{"critical": True}, {"tags": {"all": ["red", "green"]}}]}, EXACT),
    ({"NOT": [{"OR": [{"stage_id": "s2"}, {"critical": False}]}]}, EXACT),
    ({"city": "Berlin"}, EXACT),
    ({"city": {"in": ["Paris", "BERLIN wall"]}, "NOT": [{"tags": "red"}]}, EXACT),
    ({"n": 3}, WIDER),
    ({"n": {"gt": 2, "lte": 4.5}}, WIDER),
    ({"flag": True}, WIDER),
    ({"flag": {"in": [True, 1]}}, WIDER),
    ({"city": {"in": ["Paris", "Munich"]}, "layer": "episodic"}, EXACT),
    ({"NOT": [{"city": "Berlin"}]}, EXACT),  # a string is matched exactly
    ({"NOT": [{"n": 3}]}, WIDER),  # not pushed down: a number is only matched as a superset
    ({"OR": [{"city": "Paris"}, {"importance": {"gt": 0.5}}]}, WIDER),
    ({"importance": {"gte": 0.5}, "tags": "red"}, WIDER),
    ({"profile.age": 22}, WIDER),  # nested values are not in the payload
    ({"city": {"icontains": "ber"}, "stage_id": "s2"}, WIDER),
]


@pytest.mark.parametrize(("raw", "kind"), WHERE_CASES)
async def test_where_keeps_every_match(backend: Backend, raw: dict[str, Any], kind: str) -> None:
    memories = [memory_of(record) for record in RECORDS]
    await backend.store.upsert(
        [to_point(m, vec(1, 0.01 * n, 0, 0)) for n, m in enumerate(memories)]
    )
    tree = parse_filter(raw)
    expected = {m.id for m in memories if satisfies(m, tree)}

    found = set(await ids(backend.store, VectorFilter(["user:u1"], where=tree), limit=100))

    assert expected <= found
    assert decided(tree) == (kind == EXACT)
    if kind == EXACT:
        assert found == expected


async def test_top_level_metadata_values_narrow_the_search(backend: Backend) -> None:
    memories = [memory_of(record) for record in RECORDS]
    await backend.store.upsert([to_point(m, QUERY) for m in memories])
    for raw in ({"city": "Berlin"}, {"city": {"in": ["Paris", "berlin"]}, "n": {"lt": 3}}):
        tree = parse_filter(raw)
        found = set(await ids(backend.store, VectorFilter(["user:u1"], where=tree), limit=100))
        assert found == {m.id for m in memories if satisfies(m, tree)}
