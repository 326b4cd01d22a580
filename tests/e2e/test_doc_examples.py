"""The examples of README.md and docs/*.md against the real service (embedded default).

The pages' "Every method, by example" sections (``EXAMPLES``): each line runs in order and
succeeds, and every method of ``rpc.discover`` has a line. Every other JSON-RPC request a page
shows (a curl body, a ``{"method": ...}`` line) is one the service accepts: it may name data the
store lacks, never a method it lacks or params it refuses (but for the values it elides with
"…", which only say that an id or cursor goes there). The README's quickstart runs top to
bottom on a real server in ``test_quickstart.py``; the Python examples of the integrations page
run as programs against a real server here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc
from tests.server_process import Server

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# (page, heading): sections whose lines run in order against one service, pages in this order.
EXAMPLES = [(ROOT / "docs" / "api.md", "Every method, by example")]
PLACEHOLDER = re.compile(r"^<([a-z_]+)(?::-(\d+))?>$")
REQUEST = re.compile(r"""-d '(\{.*?\})'|^(\{"method": [^\n]*)$""", re.DOTALL | re.MULTILINE)
# Errors that say the request itself is wrong, whatever the store holds.
REFUSED = {"PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR"}


def _section(page: Path, heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in text, f"{page.name} has no section {heading!r}"
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _examples() -> list[dict[str, Any]]:
    calls = []
    for page, heading in EXAMPLES:
        blocks = re.findall(r"```json\n(.*?)```", _section(page, heading), flags=re.DOTALL)
        calls += [json.loads(line) for block in blocks for line in block.splitlines() if line]
    return calls


def _shown_requests() -> list[tuple[str, dict[str, Any]]]:
    """Every JSON-RPC request of every page outside the ``EXAMPLES`` sections, as shown (the
    REST bodies of docs/openspec.md are not JSON-RPC: tests/e2e/test_openspec_api.py sends
    them)."""
    requests = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for other, heading in EXAMPLES:
            if other == page:
                text = text.replace(_section(page, heading), "")
        for body, line in REQUEST.findall(text):
            shown = json.loads(body or line)
            if "method" in shown:
                requests.append((page.name, shown))
    return requests


def _found(value: Any, name: str) -> Any:
    """The first value of key ``name`` in ``value``, depth first (None when absent)."""
    if isinstance(value, dict):
        if name in value:
            return value[name]
        items = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        if (hit := _found(item, name)) is not None:
            return hit
    return None


def _resolve(value: Any, seen: list[Any]) -> Any:
    """``"<name>"`` is ``name`` in the latest result holding it; ``"<name:-2>"`` the one before."""
    if isinstance(value, dict):
        return {key: _resolve(item, seen) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, seen) for item in value]
    if isinstance(value, str) and (match := PLACEHOLDER.match(value)):
        name, back = match.group(1), int(match.group(2) or 1)
        holding = [hit for r in reversed(seen) if (hit := _found(r, name)) is not None]
        assert len(holding) >= back, f"no earlier result holds {name}"
        return holding[back - 1]
    return value


def test_every_example_runs(client: TestClient) -> None:
    seen: list[Any] = []
    for example in _examples():
        params = _resolve(example["params"], seen)
        seen.append(result(client, example["method"], **params))


def test_every_method_has_an_example(client: TestClient) -> None:
    listed = {method["name"] for method in result(client, "rpc.discover")["methods"]}
    shown = {example["method"] for example in _examples()}
    assert listed - shown == set(), "methods without an example in " + str(EXAMPLES)
    assert shown - listed == set(), "examples of methods the service does not have"


@pytest.mark.parametrize(
    ("page", "request_"),
    [pytest.param(page, r, id=f"{page}:{r['method']}") for page, r in _shown_requests()],
)
def test_every_request_a_page_shows_is_accepted(
    client: TestClient, page: str, request_: dict[str, Any]
) -> None:
    reply = rpc(client, request_["method"], **request_["params"])
    error = reply.get("error", {}).get("data", {})
    elided = {
        name
        for name, value in request_["params"].items()
        if "…" in json.dumps(value, ensure_ascii=False)
    }
    wrong = {item["field"].split(".")[0].split("[")[0] for item in error.get("errors", [])}
    if error.get("code") == "INVALID_PARAMS" and wrong and wrong <= elided:
        return  # only a value the page elides was refused
    assert error.get("code") not in REFUSED, (page, reply)


PYTHON_PAGES = [ROOT / "docs" / "integrations.md"]  # pages whose Python examples run as shown
DOC_URL = "http://127.0.0.1:8080"


def _python_examples() -> list[tuple[str, str]]:
    return [
        (f"{page.name}:{n}", block)
        for page in PYTHON_PAGES
        for n, block in enumerate(
            re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)
        )
    ]


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("data"))
    server.start(timeout=120)
    yield server
    server.stop()


@pytest.mark.parametrize(("where", "code"), _python_examples(), ids=lambda v: v[:40])
def test_python_examples_run_as_shown(serving: Server, where: str, code: str) -> None:
    """Each Python example of the pages, run as a program against a real server (its address
    in place of the page's)."""
    assert DOC_URL in code, f"{where} does not talk to {DOC_URL}"
    program = code.replace(DOC_URL, serving.base)
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, (where, done.stdout[-2000:], done.stderr[-4000:])
