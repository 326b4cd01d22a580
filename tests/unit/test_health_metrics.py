"""Store health and backlogs as gauges, read at scrape time from the latest health check."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest

from agentcore.api.metrics import HealthCollector
from agentcore.services.health import HealthService


class FakeStore:
    def __init__(self) -> None:
        self.up = True
        self.probes = 0

    async def probe(self) -> None:
        self.probes += 1
        await asyncio.sleep(0)
        if not self.up:
            raise ConnectionError("refused")


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def scraped(registry: CollectorRegistry) -> dict[str, float]:
    """The exposition's samples, by name and labels as one string."""
    samples: dict[str, float] = {}
    for line in generate_latest(registry).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


async def test_a_scrape_reads_the_latest_check_and_probes_at_most_once_per_max_age() -> None:
    database, vectors, clock = FakeStore(), FakeStore(), FakeMonotonic()
    backlog = [7]

    async def pending() -> int:
        return 3

    health = HealthService(
        {"database": database.probe, "vector_store": vectors.probe},
        "embedded",
        pending,
        indexing_backlog=lambda: backlog[0],
        monotonic=clock,
    )
    registry = CollectorRegistry()
    registry.register(HealthCollector(health))
    before = scraped(registry)
    assert "agentcore_indexing_backlog" in before  # read live, no check needed
    assert not any(name.startswith("agentcore_store_up") for name in before)

    await asyncio.gather(health.recent(10), health.recent(10))  # concurrent scrapes share one
    assert database.probes == 1
    samples = scraped(registry)
    assert samples['agentcore_store_up{store="database"}'] == 1
    assert samples['agentcore_store_up{store="vector_store"}'] == 1
    assert samples["agentcore_vector_outbox_pending"] == 3
    assert samples["agentcore_indexing_backlog"] == 7

    vectors.up, backlog[0] = False, 0
    clock.now += 10
    await health.recent(10)  # still fresh: the stores are not asked again
    assert (database.probes, scraped(registry)['agentcore_store_up{store="vector_store"}']) == (
        1,
        1,
    )
    assert scraped(registry)["agentcore_indexing_backlog"] == 0

    clock.now += 0.5
    await health.recent(10)
    assert database.probes == 2
    assert scraped(registry)['agentcore_store_up{store="vector_store"}'] == 0


async def test_an_outbox_that_cannot_be_counted_has_no_sample() -> None:
    async def pending() -> int:
        raise ConnectionError("database away")

    health = HealthService({}, "embedded", pending)
    registry = CollectorRegistry()
    registry.register(HealthCollector(health))
    await health.check()
    exposition = generate_latest(registry).decode()
    assert "# TYPE agentcore_vector_outbox_pending gauge" in exposition
    assert "\nagentcore_vector_outbox_pending " not in exposition
