"""Group commit (``agentcore.services.group_commit``): writes that arrive while a group is
being committed go together as the next group; each request stays atomic and fails alone."""

from __future__ import annotations

import asyncio

import pytest

from agentcore.domain.errors import Conflict, ProviderError
from agentcore.services.group_commit import GroupCommit


class Store:
    """Commits lists of strings; the first commit waits for ``gate``; a bad item fails the
    whole commit it is in."""

    def __init__(self) -> None:
        self.commits: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.outage = False

    async def commit(self, items: list[str]) -> list[str]:
        await self.gate.wait()
        if self.outage:
            raise ProviderError("the database is out of reach", store="database")
        if "bad" in items:
            raise Conflict("bad is taken")
        self.commits.append(items)
        return [item.upper() for item in items]


async def test_writes_that_arrive_during_a_commit_are_committed_together() -> None:
    store = Store()
    groups = GroupCommit(store.commit, max_items=100)
    store.gate.clear()
    first = asyncio.create_task(groups.submit(["a"]))
    await asyncio.sleep(0.01)  # "a" is being committed
    rest = [asyncio.create_task(groups.submit([f"b{i}", f"c{i}"])) for i in range(3)]
    await asyncio.sleep(0.01)
    store.gate.set()
    assert await first == ["A"]
    assert [await task for task in rest] == [[f"B{i}", f"C{i}"] for i in range(3)]
    assert store.commits == [["a"], ["b0", "c0", "b1", "c1", "b2", "c2"]]


async def test_a_group_holds_whole_requests_up_to_its_size() -> None:
    store = Store()
    groups = GroupCommit(store.commit, max_items=4)
    store.gate.clear()
    tasks = [asyncio.create_task(groups.submit(items)) for items in (["a"], ["b", "c", "d"])]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(groups.submit(["e", "f"])))
    tasks.append(asyncio.create_task(groups.submit(["g", "h", "i", "j", "k"])))  # too big: alone
    await asyncio.sleep(0.01)
    store.gate.set()
    await asyncio.gather(*tasks)
    assert store.commits == [["a", "b", "c", "d"], ["e", "f"], ["g", "h", "i", "j", "k"]]


async def test_a_request_that_cannot_be_stored_fails_alone() -> None:
    store = Store()
    groups = GroupCommit(store.commit, max_items=100)
    store.gate.clear()
    tasks = [asyncio.create_task(groups.submit(items)) for items in (["x"], ["y"], ["bad", "z"])]
    tasks.append(asyncio.create_task(groups.submit(["w"])))
    await asyncio.sleep(0.01)
    store.gate.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert outcomes[:2] == [["X"], ["Y"]]
    assert isinstance(outcomes[2], Conflict)
    assert outcomes[3] == ["W"]
    assert not any("z" in commit for commit in store.commits)  # atomic: none of its items


async def test_an_outage_fails_the_whole_group_at_once() -> None:
    store = Store()
    groups = GroupCommit(store.commit, max_items=100)
    store.outage = True
    outcomes = await asyncio.gather(
        *(groups.submit([f"m{i}"]) for i in range(5)), return_exceptions=True
    )
    assert all(isinstance(outcome, ProviderError) for outcome in outcomes)
    store.outage = False
    assert await groups.submit(["after"]) == ["AFTER"]


async def test_a_caller_that_gives_up_still_gets_its_write_committed() -> None:
    store = Store()
    groups = GroupCommit(store.commit, max_items=100)
    store.gate.clear()
    task = asyncio.create_task(groups.submit(["kept"]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    store.gate.set()
    await groups.drain()
    assert store.commits == [["kept"]]
