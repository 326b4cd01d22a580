"""Admission: how many calls run at once, and which waiting call runs next.

At most ``limit`` calls run at a time in a process, writes in at most a quarter of them; a call
that arrives when its places are taken waits, cheaply (a future, no CPU), for its turn. Reads
(``domain.access.READ_METHODS``: searches, context, route context, strategic context, gets,
lists) are let in before writes, each kind in the order it came: an agent blocked on a search
does not queue behind a burst of adds, which are acknowledged when they run as before
(durably) and are never refused for it. A write that has waited ``write_wait`` seconds goes
before the reads, so a steady stream of reads cannot hold writes back for ever; and since
writes never take every place, a read finds one free as soon as one of the reads ahead of it
ends, not when a group of writes has committed.

Why a quarter: under saturation a search takes as long as the calls running beside it make it
(they share the event loop and, in production, PostgreSQL's cores), while an add's latency is
mostly its wait for a place, which costs nothing. With 200 callers in a closed loop, writes in
a quarter of 32 places rather than half brought the steady search p95 from 725 to 228-256 ms
in production and from 116-129 to 82-83 ms embedded, for 10-14 % fewer calls a second (fewer
adds share a group commit); an eighth cost 18 % (docs/benchmarks.md, Load).

Why a limit at all: without it every call that arrives starts at once, and a saturated
process interleaves hundreds of them on one event loop, each of their steps behind all the
others' (a call's latency is the number in flight over the throughput, whichever it is), and
each holding what it took meanwhile, a pooled database connection included.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import Enum

from prometheus_client import CollectorRegistry, Gauge, Histogram

WRITE_SHARE = 4  # writes run in at most 1 / WRITE_SHARE of the places (at least one)


class Kind(Enum):
    READ = "read"
    WRITE = "write"


_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class AdmissionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.wait = Histogram(
            "agentcore_rpc_admission_wait_seconds",
            "Time a call waited for its turn to run (0 when a place was free), by kind",
            ["kind"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.waiting = Gauge(
            "agentcore_rpc_admission_waiting",
            "Calls waiting for their turn to run, by kind",
            ["kind"],
            registry=registry,
            multiprocess_mode="livesum",
        )


class Admission:
    def __init__(
        self, limit: int, write_wait: float, metrics: AdmissionMetrics | None = None
    ) -> None:
        if limit < 2:
            raise ValueError("admission needs at least two places (one is always a read's)")
        self._limit = limit
        self._write_limit = max(1, limit // WRITE_SHARE)
        self._write_wait = write_wait
        self._metrics = metrics
        self._running = {Kind.READ: 0, Kind.WRITE: 0}
        # waiting callers by kind, oldest first: (when it came, its future)
        self._waiting: dict[Kind, deque[tuple[float, asyncio.Future[None]]]] = {
            Kind.READ: deque(),
            Kind.WRITE: deque(),
        }

    def saturated(self) -> bool:
        """Whether calls are waiting for their turn."""
        return any(self._waiting.values())

    @asynccontextmanager
    async def turn(self, kind: Kind) -> AsyncIterator[None]:
        """Run the body when this call's turn comes (at once when a place is free and no one
        waits)."""
        came = time.monotonic()
        ahead = self._waiting[Kind.READ] if kind is Kind.READ else self.saturated()
        if self._free(kind) and not ahead:
            self._running[kind] += 1
        else:
            await self._wait(kind, came)
        self._observe(kind, time.monotonic() - came)
        try:
            yield
        finally:
            self._running[kind] -= 1
            self._let_in()

    def _free(self, kind: Kind) -> bool:
        if sum(self._running.values()) >= self._limit:
            return False
        return kind is Kind.READ or self._running[Kind.WRITE] < self._write_limit

    async def _wait(self, kind: Kind, came: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[kind].append((came, future))
        self._gauge(kind, 1)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._running[kind] -= 1  # let in, then cancelled before it ran
            else:
                self._waiting[kind].remove((came, future))
            self._let_in()
            raise
        finally:
            self._gauge(kind, -1)

    def _let_in(self) -> None:
        reads, writes = self._waiting[Kind.READ], self._waiting[Kind.WRITE]
        while True:
            overdue = bool(writes) and writes[0][0] <= time.monotonic() - self._write_wait
            if writes and (overdue or not reads) and self._free(Kind.WRITE):
                kind = Kind.WRITE
            elif reads and self._free(Kind.READ):
                kind = Kind.READ
            else:
                return
            _, future = self._waiting[kind].popleft()
            self._running[kind] += 1
            future.set_result(None)

    def _observe(self, kind: Kind, seconds: float) -> None:
        if self._metrics is not None:
            self._metrics.wait.labels(kind.value).observe(seconds)

    def _gauge(self, kind: Kind, change: int) -> None:
        if self._metrics is not None:
            self._metrics.waiting.labels(kind.value).inc(change)
