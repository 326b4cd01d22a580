"""Health of every component: each probe is timed and bounded, and a failure is a status.

Beside the stores, the job queue: whether workers are alive to run its jobs, and how long
jobs wait. A queue nobody serves does not stop this process from serving (every other call
works, and queued jobs run once a worker is up), so it is reported as ``degraded`` with its
cause rather than making the process unready.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from agentcore.services.failures import log_failure
from agentcore.services.jobs import STALL_SECONDS, QueueFacts, queue_problems

log = logging.getLogger(__name__)

Probe = Callable[[], Awaitable[None]]
"""Returns when the component works; raises when it does not."""


@dataclass(frozen=True, slots=True)
class ComponentStatus:
    up: bool
    latency_ms: float
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class JobsHealth:
    facts: QueueFacts | None  # None: the queue could not be read
    problems: tuple[str, ...]  # why its jobs do not run, for an operator (empty: they do)


@dataclass(frozen=True, slots=True)
class HealthReport:
    ok: bool
    mode: str
    components: dict[str, ComponentStatus]
    pending_vector_writes: int
    indexing_backlog: int  # memories this process has stored and not yet embedded
    lexical_documents_in_memory: int  # the lexical index's documents this process holds
    embedder: str  # the model and how it runs: "multilingual-e5-small/384, int8 (u8s8 kernel)"
    jobs: JobsHealth | None = None  # None: jobs run in this process

    @property
    def degraded(self) -> list[str]:
        """What does not work although the stores answer (the job queue's problems)."""
        return [] if self.jobs is None else list(self.jobs.problems)


class HealthService:
    def __init__(
        self,
        probes: Mapping[str, Probe],
        mode: str,
        pending_vector_writes: Callable[[], Awaitable[int]],
        indexing_backlog: Callable[[], int] = lambda: 0,
        lexical_documents: Callable[[], int] = lambda: 0,
        embedder: str = "",
        timeout: float = 2.0,
        monotonic: Callable[[], float] = time.monotonic,
        jobs: Callable[[], Awaitable[QueueFacts | None]] | None = None,
        stall_seconds: float = STALL_SECONDS,
    ) -> None:
        self._probes = probes
        self._mode = mode
        self._pending = pending_vector_writes
        self._backlog = indexing_backlog
        self._lexical_documents = lexical_documents
        self._embedder = embedder
        self._timeout = timeout
        self._monotonic = monotonic
        self._jobs = jobs
        self._stall_seconds = stall_seconds
        self._last: tuple[float, HealthReport] | None = None  # when checked, what was found
        self._checking = asyncio.Lock()

    @property
    def last(self) -> HealthReport | None:
        """The latest report, whoever asked for it (``/health``, ``/readyz``, a scrape)."""
        return None if self._last is None else self._last[1]

    @property
    def indexing_backlog(self) -> int:
        """Read now: memories this process has stored and not yet embedded."""
        return self._backlog()

    @property
    def lexical_documents_in_memory(self) -> int:
        """Read now: the lexical index's documents this process holds."""
        return self._lexical_documents()

    async def recent(self, max_age: float) -> HealthReport:
        """A report at most ``max_age`` seconds old: the latest, or a new check that
        concurrent callers share. Frequent readers (metric scrapes) do not multiply probes."""
        async with self._checking:
            if self._last is not None and self._monotonic() - self._last[0] <= max_age:
                return self._last[1]
            return await self.check()

    async def check(self) -> HealthReport:
        names = list(self._probes)
        statuses, jobs = await asyncio.gather(
            asyncio.gather(*(self._run(name) for name in names)), self._job_queue()
        )
        components = dict(zip(names, statuses, strict=True))
        try:
            pending = await self._pending()
        except Exception as exc:  # reported as unknown rather than failing the health call
            log_failure(log, "counting pending vector writes failed", exc)
            pending = -1
        report = HealthReport(
            ok=all(s.up for s in statuses),
            mode=self._mode,
            components=components,
            pending_vector_writes=pending,
            indexing_backlog=self._backlog(),
            lexical_documents_in_memory=self._lexical_documents(),
            embedder=self._embedder,
            jobs=jobs,
        )
        self._last = (self._monotonic(), report)
        return report

    async def _job_queue(self) -> JobsHealth | None:
        if self._jobs is None:
            return None
        try:
            facts = await asyncio.wait_for(self._jobs(), self._timeout)
        except Exception as exc:  # reported, never failing the health call
            log.warning("reading the job queue failed: %r", exc)
            return JobsHealth(None, ("job queue unreadable (its Redis did not answer)",))
        if facts is None:
            return None
        return JobsHealth(facts, tuple(queue_problems(facts, self._stall_seconds)))

    async def _run(self, name: str) -> ComponentStatus:
        started = time.perf_counter()
        try:
            await asyncio.wait_for(self._probes[name](), self._timeout)
        except TimeoutError:
            return ComponentStatus(False, _ms(started), "timed out")
        except Exception as exc:  # a probe's failure is the status it reports
            log.warning("health probe %s failed: %r", name, exc)
            return ComponentStatus(False, _ms(started), "unreachable")
        return ComponentStatus(True, _ms(started))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
