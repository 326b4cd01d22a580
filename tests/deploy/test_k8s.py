"""What the schemas cannot see in k8s/: the pieces are all there and fit together.

Each check names what it found wrong; none passes on an empty set of resources.
"""

from __future__ import annotations

import re
import shlex
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy.kustomize import Resource, containers_in, name_of, split_image
from tests.deploy.manifests import (
    APP_IMAGE,
    app_containers,
    compose,
    env_value,
    find,
    kustomization,
    of_kind,
    pod_labels,
    pod_spec,
    rendered,
    rendered_raw,
    selects,
    template_secrets,
    workloads,
)

NAMESPACE = "agentcore"
CONFIG = "agentcore-config"
SECRET = "agentcore-secrets"


@pytest.fixture(scope="module")
def k8s() -> list[Resource]:
    return rendered()


def _config(k8s: list[Resource]) -> dict[str, str]:
    return dict(find(k8s, "ConfigMap", CONFIG)["data"])


def _service_for(k8s: list[Resource], url: str) -> tuple[Resource, int]:
    parts = urlsplit(url)
    service = find(k8s, "Service", str(parts.hostname))
    ports = [p["port"] for p in service["spec"]["ports"]]
    assert parts.port in ports, f"{url}: Service {parts.hostname} has ports {ports}"
    return service, int(parts.port or 0)


def _pods_of(k8s: list[Resource], service: Resource) -> list[Resource]:
    return [w for w in workloads(k8s) if selects(service["spec"]["selector"], pod_labels(w))]


def _ports(workload: Resource) -> dict[str | int, int]:
    """Container ports of the pod, by name and by number."""
    ports: dict[str | int, int] = {}
    for container in pod_spec(workload)["containers"]:
        for port in container.get("ports", []):
            ports[port["containerPort"]] = port["containerPort"]
            if "name" in port:
                ports[port["name"]] = port["containerPort"]
    return ports


# --------------------------------------------------------------------------- the pieces


def test_everything_lives_in_the_namespace(k8s: list[Resource]) -> None:
    assert find(k8s, "Namespace", NAMESPACE)
    elsewhere = [
        f"{r['kind']}/{name_of(r)}"
        for r in k8s
        if r["kind"] != "Namespace" and r["metadata"].get("namespace") != NAMESPACE
    ]
    assert elsewhere == []


def test_the_migration_job_is_deployed_with_the_api_image(k8s: list[Resource]) -> None:
    job = find(k8s, "Job", "agentcore-migrate")
    (container,) = pod_spec(job)["containers"]
    assert container["command"] == ["agentcore", "migrate"]
    assert pod_spec(job)["restartPolicy"] == "Never"
    (api,) = pod_spec(find(k8s, "Deployment", "agentcore-api"))["containers"]
    assert container["image"] == api["image"]


@pytest.mark.parametrize("name", ["agentcore-api", "agentcore-worker", "agentcore-beat"])
def test_pods_wait_for_the_schema_before_they_start(k8s: list[Resource], name: str) -> None:
    """Kubernetes starts the Job and the Deployments together: each pod's init container
    waits until the database is at its image's head (the script is in a ConfigMap)."""
    spec = pod_spec(find(k8s, "Deployment", name))
    (init,) = spec.get("initContainers", [])
    (main,) = spec["containers"]
    assert init["image"] == main["image"]
    command = init["command"]
    assert command[0] == "python", command
    script = command[1]
    mount = next(
        m for m in init["volumeMounts"] if script.startswith(m["mountPath"].rstrip("/") + "/")
    )
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    configmap = find(k8s, "ConfigMap", volume["configMap"]["name"])
    key = script[len(mount["mountPath"].rstrip("/")) + 1 :]
    assert key in configmap["data"], f"{configmap['metadata']['name']} has no {key}"
    assert "wait_for_schema" in key


def test_redis_is_deployed_with_its_service_and_a_volume(k8s: list[Resource]) -> None:
    service, port = _service_for(k8s, _config(k8s)["REDIS_URL"])
    (redis,) = _pods_of(k8s, service)
    assert redis["kind"] == "StatefulSet"
    (container,) = pod_spec(redis)["containers"]
    assert port in _ports(redis).values()
    args = shlex.join(container.get("command", []) + container.get("args", []))
    # The broker's queue and the working memory are data, not cache.
    assert "--appendonly yes" in args
    assert "--maxmemory-policy noeviction" in args
    claims = {t["metadata"]["name"] for t in redis["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts.get("/data") in claims


def test_qdrant_is_a_cluster_on_persistent_volumes(k8s: list[Resource]) -> None:
    service, _ = _service_for(k8s, _config(k8s)["QDRANT_URL"])
    (qdrant,) = _pods_of(k8s, service)
    assert qdrant["kind"] == "StatefulSet"
    assert qdrant["spec"]["replicas"] >= 3
    assert qdrant["spec"]["podManagementPolicy"] == "Parallel"
    spec = pod_spec(qdrant)
    (container,) = spec["containers"]
    claims = {t["metadata"]["name"] for t in qdrant["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    for path in ("/qdrant/storage", "/qdrant/snapshots"):
        assert mounts.get(path) in claims, f"{path} is not on a volumeClaimTemplate"
    assert not [v for v in spec.get("volumes", []) if "emptyDir" in v]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["QDRANT__CLUSTER__ENABLED"] == "true"
    assert 2 <= int(env["QDRANT__STORAGE__COLLECTION__REPLICATION_FACTOR"]) <= 3
    p2p = int(env.get("QDRANT__CLUSTER__P2P__PORT", 6335))
    assert _ports(qdrant).get("p2p") == p2p
    # Peers find each other through the headless Service, ready or not.
    headless = find(k8s, "Service", qdrant["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert p2p in [p["port"] for p in headless["spec"]["ports"]]
    assert selects(headless["spec"]["selector"], pod_labels(qdrant))
    script = "\n".join(container.get("command", []) + container.get("args", []))
    first_peer = f"http://{name_of(qdrant)}-0.{name_of(headless)}:{p2p}"
    assert f'--bootstrap "{first_peer}"' in script
    assert f"http://${{HOSTNAME}}.{name_of(headless)}:{p2p}" in script  # its own --uri
    budget = find(k8s, "PodDisruptionBudget", name_of(qdrant))
    assert budget["spec"]["maxUnavailable"] == 1
    assert selects(budget["spec"]["selector"]["matchLabels"], pod_labels(qdrant))


def test_one_beat_scheduler(k8s: list[Resource]) -> None:
    beats = [
        w for w, c in app_containers(k8s) if "--beat" in c.get("command", []) + c.get("args", [])
    ]
    assert [name_of(b) for b in beats] == ["agentcore-beat"]
    (beat,) = beats
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"]["type"] == "Recreate"
    assert find(k8s, "Deployment", "agentcore-worker")


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize("name", ["agentcore-worker", "agentcore-beat"])
def test_workers_are_scraped_at_their_metrics_port(k8s: list[Resource], name: str) -> None:
    workload = find(k8s, "Deployment", name)
    template = workload["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    (container,) = template["spec"]["containers"]
    command = container["command"]
    port = command[command.index("--metrics-port") + 1]
    assert command[command.index("--metrics-host") + 1] == "0.0.0.0"
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == port
    assert annotations["prometheus.io/path"] == "/metrics"
    assert {"name": "metrics", "containerPort": int(port), "protocol": "TCP"} in container["ports"]


def test_production_settings_are_set(k8s: list[Resource]) -> None:
    config = _config(k8s)
    assert config["AGENTCORE_MODE"] == "production"
    assert config["REDIS_URL"].startswith("redis://")
    assert config["QDRANT_URL"].startswith("http")
    assert "DATABASE_URL" not in config, "a password belongs in the Secret"
    assert config.get("AGENTCORE_MIGRATE_ON_START", "false") == "false"


def test_every_app_container_requires_database_url(k8s: list[Resource]) -> None:
    """A missing DATABASE_URL stops the pod (CreateContainerConfigError) instead of leaving
    each pod with a SQLite file of its own."""
    found = list(app_containers(k8s))
    assert len(found) >= 7  # api, worker, beat (+ their init containers), migrate
    for workload, container in found:
        where = f"{name_of(workload)}/{container['name']}"
        entry = env_value(container, "DATABASE_URL")
        assert entry is not None, f"{where}: no DATABASE_URL"
        ref = entry["valueFrom"]["secretKeyRef"]
        assert ref["key"] == "DATABASE_URL"
        assert not ref.get("optional", False), f"{where}: DATABASE_URL must be required"
        if container not in pod_spec(workload).get("initContainers", []):
            sources = [next(iter(s.values()))["name"] for s in container.get("envFrom", [])]
            assert CONFIG in sources, f"{where}: no envFrom {CONFIG}"


# --------------------------------------------------------------------------- references


def _references(spec: dict[str, Any]) -> list[tuple[str, str, str | None, bool]]:
    """(kind, name, key, optional) of every ConfigMap, Secret and claim a pod spec names."""
    refs: list[tuple[str, str, str | None, bool]] = []
    for container in containers_in(spec):
        for source in container.get("envFrom", []):
            for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                if field in source:
                    ref = source[field]
                    refs.append((kind, ref["name"], None, ref.get("optional", False)))
        for entry in container.get("env", []):
            value_from = entry.get("valueFrom", {})
            for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                if field in value_from:
                    ref = value_from[field]
                    refs.append((kind, ref["name"], ref["key"], ref.get("optional", False)))
    for volume in spec.get("volumes", []):
        if "configMap" in volume:
            ref = volume["configMap"]
            keys = [item["key"] for item in ref.get("items", [])] or [None]
            refs += [("ConfigMap", ref["name"], k, ref.get("optional", False)) for k in keys]
        if "secret" in volume:
            ref = volume["secret"]
            keys = [item["key"] for item in ref.get("items", [])] or [None]
            refs += [("Secret", ref["secretName"], k, ref.get("optional", False)) for k in keys]
        if "persistentVolumeClaim" in volume:
            refs.append(("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"],
                         None, False))  # fmt: skip
    return refs


def test_every_reference_resolves(k8s: list[Resource]) -> None:
    """ConfigMaps and claims are rendered; Secrets are rendered or documented in
    secret.example.yaml (the operator creates them), with every key a pod requires."""
    external = template_secrets()
    assert "DATABASE_URL" in external[SECRET]
    available: dict[tuple[str, str], set[str]] = {
        (r["kind"], name_of(r)): set(r.get("data", {})) | set(r.get("stringData", {})) for r in k8s
    }
    available |= {("Secret", name): keys for name, keys in external.items()}
    checked = 0
    for workload in workloads(k8s):
        for kind, name, key, optional in _references(pod_spec(workload)):
            checked += 1
            where = f"{name_of(workload)} -> {kind}/{name}"
            if (kind, name) not in available:
                assert optional, f"{where}: neither rendered nor documented"
                continue
            if key is not None and not optional:
                assert key in available[(kind, name)], f"{where}: no key {key}"
    assert checked >= 20


def test_every_volume_mount_has_a_volume(k8s: list[Resource]) -> None:
    checked = 0
    for workload in workloads(k8s):
        spec = pod_spec(workload)
        names = {v["name"] for v in spec.get("volumes", [])}
        names |= {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for container in containers_in(spec):
            for mount in container.get("volumeMounts", []):
                checked += 1
                assert mount["name"] in names, f"{name_of(workload)}: {mount['name']}"
    assert checked >= 10


def test_every_service_selects_pods_with_its_target_ports(k8s: list[Resource]) -> None:
    services = of_kind(k8s, "Service")
    assert {name_of(s) for s in services} >= {"agentcore-api", "redis", "qdrant"}
    for service in services:
        pods = _pods_of(k8s, service)
        assert pods, f"Service {name_of(service)} selects no pod template"
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            for pod in pods:
                assert target in _ports(pod), f"{name_of(service)}: {target} not on {pod}"


# --------------------------------------------------------------------------- health


def _probe_port(probe: dict[str, Any]) -> str | int | None:
    for kind in ("httpGet", "tcpSocket", "grpc"):
        if kind in probe:
            return probe[kind]["port"]  # type: ignore[no-any-return]
    return None


def test_containers_that_listen_have_probes(k8s: list[Resource]) -> None:
    listening = 0
    for workload in workloads(k8s):
        for container in pod_spec(workload)["containers"]:
            if not container.get("ports"):
                continue
            listening += 1
            where = f"{name_of(workload)}/{container['name']}"
            for probe in ("readinessProbe", "livenessProbe"):
                assert probe in container, f"{where}: no {probe}"
                port = _probe_port(container[probe])
                assert port is None or port in _ports(workload), f"{where}: {probe} {port}"
    assert listening >= 3


def test_api_liveness_asks_no_store_and_readiness_asks_them_all(k8s: list[Resource]) -> None:
    (api,) = pod_spec(find(k8s, "Deployment", "agentcore-api"))["containers"]
    assert api["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"


# --------------------------------------------------------------------------- scaling


def _quantity(value: str | int | float) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "k": 1e3, "M": 1e6, "G": 1e9}  # fmt: skip
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(value))
    assert match, value
    return float(match.group(1)) * units.get(match.group(2), 1)


def test_every_container_has_requests_within_limits(k8s: list[Resource]) -> None:
    checked = 0
    for workload in workloads(k8s):
        for container in containers_in(pod_spec(workload)):
            checked += 1
            where = f"{name_of(workload)}/{container['name']}"
            resources = container.get("resources", {})
            for resource in ("cpu", "memory"):
                request = resources.get("requests", {}).get(resource)
                limit = resources.get("limits", {}).get(resource)
                assert request, f"{where}: no {resource} request"
                assert limit, f"{where}: no {resource} limit"
                assert _quantity(request) <= _quantity(limit), f"{where}: {resource}"
    assert checked >= 8


def test_the_api_autoscales_and_drains_safely(k8s: list[Resource]) -> None:
    (hpa,) = of_kind(k8s, "HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    deployment = find(k8s, target["kind"], target["name"])
    # The autoscaler owns the count: a replicas field would reset it on every apply.
    assert "replicas" not in deployment["spec"]
    assert 2 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    metrics = [m["resource"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Resource"]
    for resource in metrics:  # utilization is measured against the requests
        for container in pod_spec(deployment)["containers"]:
            assert resource in container["resources"]["requests"]
    budgets = [
        b
        for b in of_kind(k8s, "PodDisruptionBudget")
        if selects(b["spec"]["selector"]["matchLabels"], pod_labels(deployment))
    ]
    assert len(budgets) == 1
    # A budget that keeps every replica would block node drains.
    assert budgets[0]["spec"]["minAvailable"] < hpa["spec"]["minReplicas"]


# --------------------------------------------------------------------------- images


def test_every_image_is_pinned_in_the_kustomization(k8s: list[Resource]) -> None:
    """Versions are set in one place: every image is listed under ``images`` and renders
    with that tag; the manifests themselves carry the same tag (apply -f gives the same)."""
    pinned = {i["name"]: str(i["newTag"]) for i in kustomization()["images"]}
    assert APP_IMAGE in pinned
    raw = {c["image"] for r in rendered_raw() for c in containers_in(r)}
    images = {c["image"] for r in k8s for c in containers_in(r)}
    assert len(images) >= 3
    for image in images | raw:
        name, tag, _ = split_image(image)
        assert name in pinned, f"{image}: not listed in kustomization.yaml images"
        assert tag == pinned[name], f"{image}: kustomization.yaml pins {pinned[name]}"


@pytest.mark.parametrize("image", ["redis", "qdrant/qdrant"])
def test_compose_runs_the_same_store_versions(k8s: list[Resource], image: str) -> None:
    def tags(images: list[str]) -> set[str | None]:
        return {split_image(i)[1] for i in images if split_image(i)[0] == image}

    k8s_tags = tags([c["image"] for r in k8s for c in containers_in(r)])
    compose_tags = tags([s["image"] for s in compose()["services"].values() if "image" in s])
    assert len(k8s_tags) == 1
    assert compose_tags == k8s_tags
