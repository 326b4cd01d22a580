"""The README's "Every method, by example": each line runs against the real service (embedded
default) in order and succeeds, and every method of ``rpc.discover`` has a line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result

README = Path(__file__).resolve().parents[2] / "README.md"
PLACEHOLDER = re.compile(r"^<([a-z_]+)(?::-(\d+))?>$")


def _examples() -> list[dict[str, Any]]:
    text = README.read_text(encoding="utf-8")
    section = text.split("### Every method, by example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", section, flags=re.DOTALL)
    return [json.loads(line) for block in blocks for line in block.splitlines() if line.strip()]


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
    assert listed - shown == set(), "methods without an example in the README"
    assert shown - listed == set(), "examples of methods the service does not have"
