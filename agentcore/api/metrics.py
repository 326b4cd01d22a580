"""Prometheus metrics of the RPC edge, registered on the container's own registry.

- ``agentcore_rpc_requests_total{method, outcome}``: every call, ``outcome`` ``ok`` or the
  error's stable code (``MEMORY_NOT_FOUND``, ``RATE_LIMITED``, ...), so errors by code per
  method are ``outcome!="ok"``. A call that names no known method, and a body or member that is
  no valid request, count under ``method="unknown"`` (the label stays bounded by the method
  table).
- ``agentcore_rpc_latency_seconds{method}``: the time of each call that ran, whatever its
  outcome; a call refused before it ran (unknown method, access, rate limit) is not timed.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

UNKNOWN_METHOD = "unknown"
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
