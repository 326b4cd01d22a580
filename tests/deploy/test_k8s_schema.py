"""Every manifest the kustomization renders, and the templates beside it, against the
Kubernetes JSON schemas (kubernetes-validate bundles them: no cluster, no network), strict:
an unknown or misplaced field fails as it would on ``kubectl apply --validate=strict``."""

from __future__ import annotations

import kubernetes_validate
import pytest

from tests.deploy.kustomize import Resource, name_of
from tests.deploy.manifests import rendered, templates

# The oldest Kubernetes the manifests are meant for, and the newest the validator knows.
VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
RESOURCES = rendered() + templates()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "resource", RESOURCES, ids=[f"{r['kind']}/{name_of(r)}" for r in RESOURCES]
)
def test_manifest_is_valid(resource: Resource, version: str) -> None:
    try:
        kubernetes_validate.validate(resource, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(part) for part in exc.path)
        pytest.fail(f"{resource['kind']}/{name_of(resource)} at {path}: {exc.message}")


def test_the_schemas_catch_a_misspelt_field() -> None:
    """The validator is strict (else every test above would pass on anything)."""
    resource = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "x", "image": "x:1", "livenesProbe": {}}]},
            },
        },
    }
    with pytest.raises(kubernetes_validate.ValidationError, match="livenesProbe"):
        kubernetes_validate.validate(resource, VERSIONS[-1], strict=True)
