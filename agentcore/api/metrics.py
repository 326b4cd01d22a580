"""Prometheus metrics of the RPC edge, registered on the container's own registry.

- ``agentcore_rpc_requests_total{method, outcome}``: every call, ``outcome`` ``ok`` or the
  error's stable code (``MEMORY_NOT_FOUND``, ``RATE_LIMITED``, ...), so errors by code per
  method are ``outcome!="ok"``. A call that names no known method, and a body or member that is
  no valid request, count under ``method="unknown"`` (the label stays bounded by the method
  table).
- ``agentcore_rpc_latency_seconds{method}``: the time of each call that ran, whatever its
  outcome; a call refused before it ran (unknown method, access, rate limit) is not timed.

``HealthCollector`` adds, at scrape time, what lives elsewhere: each store's health and the
vector outbox's depth from the latest health check (``/metrics`` refreshes it when older than
``SCRAPE_HEALTH_MAX_AGE_SECONDS``, so scrapes never probe the stores more often than that), and
the in-process backlogs read from memory. With ``PROMETHEUS_MULTIPROC_DIR`` (several processes,
``agentcore/adapters/prometheus_files.py``) every other metric is summed over the processes,
while these are those of the process that answered the scrape: the stores' health and the
outbox are the whole service's anyway, the backlogs that process's.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from agentcore.services.health import HealthReport, HealthService

UNKNOWN_METHOD = "unknown"
SCRAPE_HEALTH_MAX_AGE_SECONDS = 10.0
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class RpcMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "agentcore_rpc_requests_total",
            "JSON-RPC calls by method and outcome (ok or an error code)",
            ["method", "outcome"],
            registry=registry,
        )
        self.latency = Histogram(
            "agentcore_rpc_latency_seconds",
            "JSON-RPC call latency by method, of the calls that ran",
            ["method"],
            buckets=_BUCKETS,
            registry=registry,
        )

    def observe(self, method: str, outcome: str, seconds: float | None) -> None:
        """Count one call; ``seconds`` is None for a call refused before it ran."""
        self.requests.labels(method, outcome).inc()
        if seconds is not None:
            self.latency.labels(method).observe(seconds)


class HealthCollector:
    """The health figures of a ``HealthService`` as gauges, read when scraped."""

    def __init__(self, health: HealthService) -> None:
        self._health = health

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return self._families()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._families(read=True)

    def _families(self, read: bool = False) -> Iterator[GaugeMetricFamily]:
        report = self._health.last if read else None
        up = GaugeMetricFamily(
            "agentcore_store_up",
            "1 when the store answered the latest health check, 0 when it did not",
            labels=["store"],
        )
        outbox = GaugeMetricFamily(
            "agentcore_vector_outbox_pending",
            "Vector writes owed to the vector store (outbox rows, every process's) at the "
            "latest health check",
        )
        if report is not None:
            for store, status in sorted(report.components.items()):
                up.add_metric([store], 1.0 if status.up else 0.0)
            if report.pending_vector_writes >= 0:  # -1: the count failed
                outbox.add_metric([], report.pending_vector_writes)
        yield up
        yield outbox
        backlog = GaugeMetricFamily(
            "agentcore_indexing_backlog",
            "Memories this process has stored and not yet embedded",
        )
        lexical = GaugeMetricFamily(
            "agentcore_lexical_documents_in_memory",
            "Lexical index documents this process holds in memory (embedded SQLite only)",
        )
        if read:
            backlog.add_metric([], self._health.indexing_backlog)
            lexical.add_metric([], self._health.lexical_documents_in_memory)
        yield backlog
        yield lexical
        yield from _job_queue(report)


def _job_queue(report: HealthReport | None) -> Iterator[GaugeMetricFamily]:
    """The job queue on workers at the latest health check (no sample in embedded mode, or
    when the queue could not be read): alert on no worker, or on an old queued job."""
    workers = GaugeMetricFamily("agentcore_job_workers_alive", "Job workers with a fresh heartbeat")
    queued = GaugeMetricFamily("agentcore_jobs_queued", "Jobs waiting for a worker")
    oldest = GaugeMetricFamily(
        "agentcore_jobs_oldest_queued_seconds", "How long the oldest queued job has waited"
    )
    facts = None if report is None or report.jobs is None else report.jobs.facts
    if facts is not None:
        workers.add_metric([], facts.workers_alive)
        queued.add_metric([], facts.queued)
        oldest.add_metric([], facts.oldest_queued_seconds or 0.0)
    yield workers
    yield queued
    yield oldest
