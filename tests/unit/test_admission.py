"""Admission: at most N calls run, writes at most a quarter, reads let in before writes, a write
that waited too long before the reads, and a caller that gives up frees its place."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from agentcore.services.admission import Admission, AdmissionMetrics, Kind


async def _hold(
    admission: Admission, kind: Kind, order: list[str], name: str, go: asyncio.Event
) -> None:
    async with admission.turn(kind):
        order.append(name)
        await go.wait()


def _calls(
    admission: Admission, kind: Kind, order: list[str], go: asyncio.Event, *names: str
) -> list[asyncio.Task[None]]:
    """One call of ``kind`` per name, each holding its place until ``go``."""
    return [asyncio.create_task(_hold(admission, kind, order, name, go)) for name in names]


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_reads_waiting_go_before_writes_that_came_first() -> None:
    admission = Admission(2, write_wait=60)
    order: list[str] = []
    go = asyncio.Event()
    running = _calls(admission, Kind.READ, order, go, "r0", "r1")
    await _settle()
    assert admission.saturated() is False
    waiting = _calls(admission, Kind.WRITE, order, go, "w1", "w2")
    await _settle()
    waiting += _calls(admission, Kind.READ, order, go, "r3")
    await _settle()
    assert order == ["r0", "r1"]
    assert admission.saturated()
    go.set()
    await asyncio.gather(*running, *waiting)
    assert order[2] == "r3"  # the read that came last ran first
    assert order[3:] == ["w1", "w2"]
    assert not admission.saturated()


async def test_writes_take_at_most_a_quarter_of_the_places_and_a_read_gets_one() -> None:
    admission = Admission(8, write_wait=60)
    order: list[str] = []
    go = asyncio.Event()
    writes = _calls(admission, Kind.WRITE, order, go, "w0", "w1", "w2", "w3")
    await _settle()
    assert order == ["w0", "w1"]  # two more wait although six places are free
    [read] = _calls(admission, Kind.READ, order, go, "r")
    await _settle()
    assert order == ["w0", "w1", "r"]  # the read did not queue behind the waiting writes
    go.set()
    await asyncio.gather(*writes, read)
    assert sorted(order) == ["r", "w0", "w1", "w2", "w3"]


async def test_two_places_still_let_one_write_run() -> None:
    admission = Admission(2, write_wait=60)
    order: list[str] = []
    go = asyncio.Event()
    writes = _calls(admission, Kind.WRITE, order, go, "w0", "w1")
    await _settle()
    assert order == ["w0"]
    go.set()
    await asyncio.gather(*writes)
    assert order == ["w0", "w1"]


async def test_a_write_that_waited_too_long_goes_before_the_reads() -> None:
    admission = Admission(2, write_wait=0.05)
    order: list[str] = []
    first, rest = asyncio.Event(), asyncio.Event()
    running = _calls(admission, Kind.READ, order, first, "r0", "r1")
    await _settle()
    [write] = _calls(admission, Kind.WRITE, order, rest, "w")
    await asyncio.sleep(0.1)
    reads = _calls(admission, Kind.READ, order, rest, "late0", "late1")
    await _settle()
    first.set()
    await asyncio.gather(*running)
    await _settle()
    assert order[2] == "w"  # overdue: let in ahead of the reads that wait
    rest.set()
    await asyncio.gather(write, *reads)


async def test_a_caller_that_gives_up_waiting_leaves_its_place_to_the_next() -> None:
    registry = CollectorRegistry()
    admission = Admission(2, write_wait=60, metrics=AdmissionMetrics(registry))
    order: list[str] = []
    go = asyncio.Event()
    running = _calls(admission, Kind.READ, order, go, "r0", "r1")
    await _settle()
    gives_up, stays = _calls(admission, Kind.READ, order, go, "gone", "stays")
    await _settle()
    assert registry.get_sample_value("agentcore_rpc_admission_waiting", {"kind": "read"}) == 2
    gives_up.cancel()
    go.set()
    await asyncio.gather(*running, stays)
    with pytest.raises(asyncio.CancelledError):
        await gives_up
    assert order == ["r0", "r1", "stays"]
    assert registry.get_sample_value("agentcore_rpc_admission_waiting", {"kind": "read"}) == 0
    assert (
        registry.get_sample_value("agentcore_rpc_admission_wait_seconds_count", {"kind": "read"})
        == 3
    )
    # every place is free again: a new call runs at once
    async with admission.turn(Kind.WRITE):
        assert not admission.saturated()


async def test_a_caller_cancelled_after_being_let_in_frees_its_place() -> None:
    admission = Admission(2, write_wait=60)
    order: list[str] = []
    go = asyncio.Event()
    running = _calls(admission, Kind.READ, order, go, "r0", "r1")
    await _settle()
    late, after = _calls(admission, Kind.READ, order, go, "late", "after")
    await _settle()
    go.set()
    await asyncio.sleep(0)  # the holders finish and let the two in; cancel one before it runs
    late.cancel()
    await asyncio.gather(*running, after, return_exceptions=True)
    await asyncio.gather(late, return_exceptions=True)
    assert "after" in order
    async with admission.turn(Kind.READ), admission.turn(Kind.READ):
        assert not admission.saturated()  # both places were free
