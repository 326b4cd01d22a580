"""The part of kustomize that k8s/kustomization.yaml uses, for checks without a kustomize binary.

Supported: ``resources`` (files only), ``namespace`` and ``images`` (name, newName, newTag,
digest). Any other field raises ``RenderError``, so a kustomization that grows a feature this
renderer does not apply fails the checks instead of being checked half-rendered.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

FIELDS = {"apiVersion", "kind", "namespace", "resources", "images"}
IMAGE_FIELDS = {"name", "newName", "newTag", "digest"}
CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "IngressClass",
    "Namespace",
    "PersistentVolume",
    "PriorityClass",
    "StorageClass",
}
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")

Resource = dict[str, Any]


class RenderError(Exception):
    pass


def load_kustomization(directory: Path) -> dict[str, Any]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = sorted(set(kustomization) - FIELDS)
    if unknown:
        raise RenderError(f"kustomization fields this renderer does not apply: {unknown}")
    if kustomization.get("kind", "Kustomization") != "Kustomization":
        raise RenderError(f"not a Kustomization: {kustomization.get('kind')}")
    return dict(kustomization)


def render(directory: Path) -> list[Resource]:
    """The resources ``kubectl kustomize directory`` would print (in file order)."""
    kustomization = load_kustomization(directory)
    resources: list[Resource] = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        if not path.is_file():
            raise RenderError(f"resource {entry!r} is not a file in {directory}")
        resources.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None)
    namespace = kustomization.get("namespace")
    for resource in resources:
        if namespace and resource["kind"] not in CLUSTER_SCOPED:
            resource["metadata"]["namespace"] = namespace
    for image in kustomization.get("images", []):
        unknown = sorted(set(image) - IMAGE_FIELDS)
        if unknown:
            raise RenderError(f"image fields this renderer does not apply: {unknown}")
        for resource in resources:
            for container in containers_in(resource):
                container["image"] = _retag(container["image"], image)
    seen: set[tuple[str, str, str]] = set()
    for resource in resources:
        key = (resource["kind"], resource["metadata"].get("namespace", ""), name_of(resource))
        if key in seen:
            raise RenderError(f"resource defined twice: {key}")
        seen.add(key)
    return resources


def name_of(resource: Resource) -> str:
    return str(resource["metadata"]["name"])


def containers_in(node: Any) -> Iterator[dict[str, Any]]:
    """Every container of ``node`` (a resource or part of one), init containers included."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONTAINER_LISTS and isinstance(value, list):
                yield from value
            else:
                yield from containers_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from containers_in(item)


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of an image reference; a registry port is part of the name."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = None
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest or None


def _retag(reference: str, image: dict[str, Any]) -> str:
    name, tag, digest = split_image(reference)
    if name != image["name"]:
        return reference
    name = image.get("newName", name)
    if "newTag" in image:
        tag, digest = str(image["newTag"]), None
    if "digest" in image:
        tag, digest = None, str(image["digest"])
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
