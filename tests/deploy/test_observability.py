"""Prometheus and Grafana of docker/compose.yaml: what they read is there and points at the
services that exist. Dashboards (docker/grafana/dashboards/*.json) are checked as they appear."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.deploy.manifests import DOCKER, compose

GRAFANA = DOCKER / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
# Data sources every Grafana has.
BUILT_IN = {"grafana", "-- Grafana --", "-- Mixed --", "-- Dashboard --"}


def _mounts(service: str) -> dict[str, Path]:
    """Container path -> host path of the service's bind mounts."""
    mounts = {}
    for volume in compose()["services"][service]["volumes"]:
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[target] = (DOCKER / source).resolve()
    return mounts


def _host_path(service: str, path: str) -> Path:
    """Where a file the container reads at ``path`` comes from on this host."""
    for target, source in _mounts(service).items():
        if path == target or path.startswith(target.rstrip("/") + "/"):
            return source / path[len(target) :].lstrip("/")
    raise AssertionError(f"{service} mounts nothing at {path}")


def _prometheus_command() -> str:
    service = compose()["services"]["prometheus"]
    return " ".join(service.get("entrypoint", []) + service.get("command", []))


def _prometheus_config() -> dict[str, Any]:
    flag = re.search(r"--config\.file=(\S+)", _prometheus_command())
    assert flag, "prometheus must be given --config.file"
    return dict(yaml.safe_load(_host_path("prometheus", flag.group(1)).read_text()))


def _datasources() -> list[dict[str, Any]]:
    directory = _host_path("grafana", "/etc/grafana/provisioning/datasources")
    return [
        source
        for path in sorted(directory.glob("*.y*ml"))
        for source in yaml.safe_load(path.read_text())["datasources"]
    ]


def test_prometheus_scrapes_the_api_metrics() -> None:
    services = compose()["services"]
    api = services["api"]["command"]
    port = api[api.index("--port") + 1]
    jobs = [
        job
        for job in _prometheus_config()["scrape_configs"]
        if any(f"api:{port}" in c["targets"] for c in job.get("static_configs", []))
    ]
    assert len(jobs) == 1, f"no scrape job targets api:{port}"
    assert jobs[0].get("metrics_path", "/metrics") == "/metrics"
    for job in _prometheus_config()["scrape_configs"]:
        for config in job.get("static_configs", []):
            for target in config["targets"]:
                assert target.split(":")[0] in services, f"{job['job_name']}: {target}"


def test_prometheus_scrapes_every_worker_at_its_metrics_port() -> None:
    services = compose()["services"]
    jobs = {job["job_name"]: job for job in _prometheus_config()["scrape_configs"]}
    (found,) = jobs["agentcore-worker"]["dns_sd_configs"]
    assert set(found["names"]) == {"worker", "beat"}
    for name in found["names"]:
        command = services[name]["command"]
        assert command[:2] == ["agentcore", "worker"]
        assert int(command[command.index("--metrics-port") + 1]) == found["port"]
        assert command[command.index("--metrics-host") + 1] == "0.0.0.0"
    assert jobs["agentcore-worker"]["authorization"] == jobs["agentcore-api"]["authorization"]


def test_prometheus_sends_the_metrics_token_it_is_given() -> None:
    """With AGENTCORE_METRICS_TOKEN on the host the API asks for it; the scrape job reads
    it from the file the Prometheus container writes from the same variable."""
    (job,) = [j for j in _prometheus_config()["scrape_configs"] if j["job_name"].endswith("api")]
    credentials = job["authorization"]["credentials_file"]
    assert job["authorization"].get("type", "Bearer") == "Bearer"
    services = compose()["services"]
    assert "AGENTCORE_METRICS_TOKEN" in services["prometheus"]["environment"]
    assert "AGENTCORE_METRICS_TOKEN" in services["api"]["environment"]
    command = _prometheus_command()
    assert f'"$AGENTCORE_METRICS_TOKEN" > {credentials}' in command
    assert "exec /bin/prometheus" in command
    assert shlex.split(command)  # quotes balance


def test_grafana_reads_prometheus() -> None:
    (source,) = [s for s in _datasources() if s["type"] == "prometheus"]
    url = urlsplit(source["url"])
    assert url.hostname in compose()["services"]
    listen = re.search(r"--web\.listen-address=\S*:(\d+)", _prometheus_command())
    assert url.port == (int(listen.group(1)) if listen else 9090)  # Prometheus's default
    assert source["uid"]


def test_grafana_loads_the_dashboards_folder() -> None:
    directory = _host_path("grafana", "/etc/grafana/provisioning/dashboards")
    providers = [
        provider
        for path in sorted(directory.glob("*.y*ml"))
        for provider in yaml.safe_load(path.read_text())["providers"]
    ]
    assert providers
    for provider in providers:
        assert provider["type"] == "file"
        source = _host_path("grafana", provider["options"]["path"])
        assert source == (GRAFANA / "dashboards").resolve()
        assert source.is_dir()


def _references(node: Any) -> list[Any]:
    """Every ``datasource`` value in a dashboard."""
    if isinstance(node, dict):
        found = [node["datasource"]] if "datasource" in node else []
        return found + [r for value in node.values() for r in _references(value)]
    if isinstance(node, list):
        return [r for item in node for r in _references(item)]
    return []


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.name for p in DASHBOARDS])
def test_dashboard_uses_the_provisioned_data_source(path: Path) -> None:
    dashboard = json.loads(path.read_text())
    assert dashboard.get("title")
    assert dashboard.get("panels")
    variables = {v["name"] for v in dashboard.get("templating", {}).get("list", [])}
    sources = _datasources()
    known = BUILT_IN | {s["uid"] for s in sources} | {s["name"] for s in sources}
    types = {s["type"] for s in sources} | {"datasource", "grafana", "dashboard"}
    for reference in _references(dashboard):
        if reference is None:
            continue  # the default data source
        uid = reference if isinstance(reference, str) else reference.get("uid")
        kind = None if isinstance(reference, str) else reference.get("type")
        if isinstance(uid, str) and uid.startswith("$"):
            name = uid.strip("${}").split(":")[0]
            assert name in variables, f"{path.name}: data source variable {uid} is not defined"
        else:
            assert uid in known, f"{path.name}: data source {reference} is not provisioned"
        assert kind is None or kind in types, f"{path.name}: data source type {kind}"
