"""The generated agent traces are pinned: the COMPASS figures in docs/benchmarks.md were measured on
this exact text, so a change to the generator or to its data must show up here first.

The output hashes were recorded from the generator before its templates moved to data files;
a template word, a draw order or a slot rule that changes makes them differ.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.agent_traces import generate_traces

_DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "agent_traces" / "data"


def _sha256(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize(
    ("count", "seed", "size", "expected"),
    [
        # The COMPASS benchmark's run: compass_traces.py --tasks 20 --seed 1.
        (20, 1, "mixed", "5bdd294e318b56c205d34b78e7d49831f267b321e338b88d5c1a961be2dac790"),
        # All ten domains once.
        (10, 0, "small", "144b19063da82dc08b0dfa3215b375c9e52bd59bd665d7a7382daed5422205a2"),
        # The trace tests/e2e/test_compass_agents.py stores.
        (1, 3, "small", "9b4f5f3b99273516ec77d983862a965f65cca0f6b0f1f97825b4315e862fa0a4"),
        (3, 2024, "mixed", "4d86f87d2d6fe916aa65826ed205eccde8dc2eef4133937880b3d250e9d30d20"),
    ],
)
def test_traces_for_a_seed_are_byte_identical(
    count: int, seed: int, size: str, expected: str
) -> None:
    traces = generate_traces(count, seed, size=size)

    assert _sha256([dataclasses.asdict(trace) for trace in traces]) == expected


def test_the_template_data_is_pinned() -> None:
    # A template the pinned seeds never draw could change without changing their output, so
    # the data itself is pinned too. After a deliberate edit, update this hash and re-measure
    # the figures taken on the traces.
    files = sorted(_DATA.rglob("*.json"))
    data = {
        path.relative_to(_DATA).as_posix(): json.loads(path.read_text("utf-8")) for path in files
    }

    assert len(files) == 12
    assert _sha256(data) == "e6e4fc80852db8652a8068a915e0c33a2fb8fe0af443eb8cc18fde69c8377823"


def test_a_longer_list_extends_a_shorter_one() -> None:
    assert generate_traces(2, 5, size="small") == generate_traces(3, 5, size="small")[:2]
