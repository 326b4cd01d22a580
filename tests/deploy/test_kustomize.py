"""The renderer the k8s checks stand on: what it applies, and that it refuses what it does not."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy.kustomize import RenderError, Resource, name_of, render, split_image
from tests.deploy.manifests import K8S, TEMPLATES, kustomization, rendered

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: init, image: "registry:5000/team/app:1.0"}]
      containers:
        - {name: app, image: "registry:5000/team/app:1.0"}
        - {name: side, image: redis}
"""


def _write(directory: Path, kustomization: str, **files: str) -> Path:
    (directory / "kustomization.yaml").write_text(kustomization)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_namespace_and_images_are_applied(tmp_path: Path) -> None:
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: prod}\n"
    _write(
        tmp_path,
        "namespace: prod\nresources: [ns.yaml, web.yaml]\nimages:\n"
        "  - {name: registry:5000/team/app, newName: example.com/app, newTag: '2.0'}\n"
        "  - {name: redis, digest: 'sha256:abc'}\n",
        **{"ns.yaml": namespace, "web.yaml": DEPLOYMENT},
    )
    ns, web = render(tmp_path)
    assert "namespace" not in ns["metadata"]
    assert web["metadata"]["namespace"] == "prod"
    spec = web["spec"]["template"]["spec"]
    assert spec["initContainers"][0]["image"] == "example.com/app:2.0"
    assert spec["containers"][0]["image"] == "example.com/app:2.0"
    assert spec["containers"][1]["image"] == "redis@sha256:abc"


@pytest.mark.parametrize(
    "kustomization",
    [
        "resources: [web.yaml]\npatches: [{path: p.yaml}]\n",
        "resources: [web.yaml]\nconfigMapGenerator: [{name: x, literals: [a=b]}]\n",
        "resources: [web.yaml]\nnamePrefix: a-\n",
        "resources: [web.yaml]\nimages: [{name: redis, newTag: '7', tagSuffix: x}]\n",
        "resources: [base/]\n",
        "resources: [web.yaml, web.yaml]\n",
    ],
)
def test_what_it_does_not_apply_fails(tmp_path: Path, kustomization: str) -> None:
    (tmp_path / "base").mkdir()
    _write(tmp_path, kustomization, **{"web.yaml": DEPLOYMENT})
    with pytest.raises(RenderError):
        render(tmp_path)


def test_image_references_split() -> None:
    assert split_image("redis") == ("redis", None, None)
    assert split_image("qdrant/qdrant:v1.19.1") == ("qdrant/qdrant", "v1.19.1", None)
    assert split_image("host:5000/a/b:1@sha256:x") == ("host:5000/a/b", "1", "sha256:x")


def test_every_manifest_is_in_the_kustomization_and_no_template_is() -> None:
    listed = set(kustomization()["resources"])
    manifests = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", *TEMPLATES}
    assert manifests - listed == set(), "manifests left out of kustomization.yaml"
    assert listed & set(TEMPLATES) == set(), "templates must not be applied"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_the_renderer_agrees_with_kubectl_kustomize() -> None:
    """Where kubectl is at hand, its kustomize prints exactly what the checks read."""
    done = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=True
    )
    theirs = [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]

    def by_name(resources: list[Resource]) -> dict[str, str]:
        return {f"{r['kind']}/{name_of(r)}": json.dumps(r, sort_keys=True) for r in resources}

    assert by_name(rendered()) == by_name(theirs)
