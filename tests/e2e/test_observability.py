"""What an operator sees: /metrics follows the Prometheus naming conventions, every metric the
Grafana dashboard queries is exposed, and a request's id reaches its JSON log lines."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agentcore.logs import JsonFormatter, RequestIdFilter

DASHBOARD = Path(__file__).parents[2] / "docker" / "grafana" / "dashboards" / "agentcore.json"
METRIC_NAME = re.compile(r"\bagentcore_[a-z0-9_]+")
# Labels whose values grow with the data, never with the deployment: not for metrics.
UNBOUNDED_LABELS = {"memory_id", "user_id", "agent_id", "session_id", "task_id", "request_id"}
_TYPE = re.compile(r"# TYPE (\S+) (\S+)")
_SAMPLE = re.compile(r"(\w+)(?:\{(.*)\})? (\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def rpc(client: TestClient, method: str, **params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return client.post("/rpc", json=body)


@pytest.fixture(scope="module")
def exposition(client: TestClient) -> str:
    """/metrics after a few calls: a success, a search, a known error, an unknown method."""
    rpc(client, "memory.add", content="the deploy runs on Fridays", user_id="u-obs")
    rpc(client, "memory.search", query="deploy", user_id="u-obs")
    rpc(client, "memory.get", memory_id="missing", user_id="u-obs")
    rpc(client, "memory.nope")
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.text


def families(exposition: str) -> dict[str, str]:
    """Metric family name → type, as the exposition declares them."""
    return dict(_TYPE.findall(exposition))


def samples(exposition: str) -> list[tuple[str, dict[str, str], float]]:
    found = []
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            match = _SAMPLE.fullmatch(line)
            assert match is not None, line
            name, labels, value = match.groups()
            found.append((name, dict(_LABEL.findall(labels or "")), float(value)))
    return found


def queryable(exposition: str) -> set[str]:
    """The series names PromQL can select: a histogram's by its _bucket, _sum and _count."""
    names = set()
    for name, kind in families(exposition).items():
        if kind == "histogram":
            names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        else:
            names.add(name)
    return names


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())
    ]
    queries += [v["definition"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return queries


def test_every_metric_of_the_dashboard_is_exposed(exposition: str) -> None:
    """By the API's /metrics, or by a Celery worker's own (its jobs)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from agentcore.worker import JobMetrics

    registry = CollectorRegistry()
    JobMetrics(registry).observe("compress", {"ok": True}, 0.5)
    exposed = queryable(exposition) | queryable(generate_latest(registry).decode())
    queries = dashboard_queries()
    used = {name for query in queries for name in METRIC_NAME.findall(query)}
    assert all(METRIC_NAME.search(query) for query in queries)
    assert used - exposed == set()
    # What the issue asks the dashboard to show.
    for name in (
        "agentcore_rpc_requests_total",
        "agentcore_rpc_latency_seconds_bucket",
        "agentcore_store_up",
        "agentcore_vector_outbox_pending",
        "agentcore_indexing_backlog",
        "agentcore_compression_factor_bucket",
        "agentcore_llm_cost_usd_total",
        "agentcore_budget_used_ratio",
    ):
        assert name in used, name


def test_the_dashboard_uses_the_provisioned_datasource() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "prometheus"}
        assert panel["targets"], panel["title"]
        assert all(t["datasource"]["uid"] == "prometheus" for t in panel["targets"])
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for query in dashboard_queries():
        assert _balanced(query), query


def _balanced(query: str) -> bool:
    """Brackets close in order outside label values (no PromQL parser here; Grafana is the
    judge of the rest)."""
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for char in re.sub(r'"(?:[^"\\]|\\.)*"', '""', query):
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack


def test_metric_names_follow_the_prometheus_conventions(exposition: str) -> None:
    declared = families(exposition)
    ours = {name: kind for name, kind in declared.items() if name.startswith("agentcore_")}
    created = {f"{name.removesuffix('_total')}_created" for name in ours} | {
        f"{name}_created" for name in ours
    }
    for name, kind in ours.items():
        if name in created:  # prometheus_client's companion of a counter or histogram
            continue
        assert name.endswith("_total") == (kind == "counter"), name
        assert not re.search(r"_(pct|percent|percentage|ms|milliseconds)\b", name), name
        assert not name.endswith(("_latency", "_duration", "_size")), f"{name}: no unit"
    for name, labels, value in samples(exposition):
        assert not (UNBOUNDED_LABELS & labels.keys()), name
        if name.endswith("_ratio"):
            assert 0 <= value <= 1, name
        if name.endswith("_ratio_bucket") and labels["le"] != "+Inf":
            assert float(labels["le"]) <= 1, name


def test_the_health_of_each_store_and_the_backlogs_are_exposed(exposition: str) -> None:
    values = {
        (name, tuple(sorted(labels.items()))): value for name, labels, value in samples(exposition)
    }
    assert values[("agentcore_store_up", (("store", "database"),))] == 1
    assert values[("agentcore_store_up", (("store", "vector_store"),))] == 1
    assert values[("agentcore_vector_outbox_pending", ())] >= 0
    assert values[("agentcore_indexing_backlog", ())] >= 0
    get_not_found = (("method", "memory.get"), ("outcome", "MEMORY_NOT_FOUND"))
    assert values[("agentcore_rpc_requests_total", get_not_found)] >= 1
    unknown = (("method", "unknown"), ("outcome", "METHOD_NOT_FOUND"))
    assert values[("agentcore_rpc_requests_total", unknown)] >= 1


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The RPC edge's JSON log lines, at DEBUG (one per call)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("agentcore.api.rpc")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_call_logs_the_request_id_its_response_returns(
    client: TestClient, json_lines: io.StringIO
) -> None:
    given = rpc(client, "memory.list", user_id="u-obs").headers["x-request-id"]
    honoured = client.post(
        "/rpc",
        json={"jsonrpc": "2.0", "id": 2, "method": "memory.list", "params": {"user_id": "u-obs"}},
        headers={"X-Request-ID": "trace-4bf92f35"},
    ).headers["x-request-id"]
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    assert honoured == "trace-4bf92f35"
    assert [line["request_id"] for line in lines] == [given, honoured]
    assert all(line["message"].startswith("memory.list ok in ") for line in lines)
    assert client.get("/livez").headers["x-request-id"]
