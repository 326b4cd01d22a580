"""Prometheus metrics of the RPC edge, registered on the container's own registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

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
            "JSON-RPC call latency by method",
            ["method"],
            buckets=_BUCKETS,
            registry=registry,
        )

    def observe(self, method: str, outcome: str, seconds: float) -> None:
        self.requests.labels(method, outcome).inc()
        if outcome != "METHOD_NOT_FOUND":
            self.latency.labels(method).observe(seconds)
