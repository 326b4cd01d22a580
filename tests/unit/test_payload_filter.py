"""The payload part of a filter (``adapters.vectors.payload_filter``) is sound: every memory
that satisfies a filter passes its payload filter, through ANY and NOT too; on the memory's own
fields it is exact. Checked on the payloads of a fixed set of memories, engine-free (the
engines are checked against the same cases in tests/integration/test_vector_store_contract)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings

from agentcore.adapters.vectors.payload import point_payload
from agentcore.adapters.vectors.payload_filter import payload_filter
from agentcore.domain.filter_grammar import parse_filter
from agentcore.services.vector_payload import decided
from agentcore.services.vector_sync import to_point
from tests.filter_oracle import FakeConditions, satisfies
from tests.filter_strategies import RECORDS, filters, memory_of

MEMORIES = [memory_of(record) for record in RECORDS]
PAYLOADS = [point_payload(to_point(m, np.zeros(2, dtype=np.float32))) for m in MEMORIES]
OWN = ("layer", "tags", "stage_id", "critical", "created_at", "session_id", "run_id")


def passing(raw: dict[str, Any], engine: FakeConditions) -> set[str]:
    test = payload_filter(parse_filter(raw) or _never(), engine)
    return {m.id for m, p in zip(MEMORIES, PAYLOADS, strict=True) if test is None or test(p)}


def _never() -> Any:
    raise AssertionError("a filter was expected")


def matching(raw: dict[str, Any]) -> set[str]:
    tree = parse_filter(raw)
    return {m.id for m in MEMORIES if satisfies(m, tree)}


class NoEmpty(FakeConditions):
    """An engine that cannot say "empty" (mem0's syntax)."""

    def empty(self, key: str) -> Any:
        return None


@settings(max_examples=400, deadline=None)
@given(raw=filters())
def test_every_match_passes_the_payload_filter(raw: dict[str, Any]) -> None:
    assert matching(raw) <= passing(raw, FakeConditions())
    assert matching(raw) <= passing(raw, NoEmpty())


@settings(max_examples=400, deadline=None)
@given(raw=filters())
def test_what_the_payload_decides_is_exact(raw: dict[str, Any]) -> None:
    if decided(parse_filter(raw) or _never()):
        assert passing(raw, FakeConditions()) == matching(raw)


@settings(max_examples=300, deadline=None)
@given(raw=filters())
def test_own_fields_are_decided(raw: dict[str, Any]) -> None:
    if not _only_own_fields(raw) or "[]" in repr(raw):
        return  # an empty list (in: [] matches nothing) is left to the database
    assert decided(parse_filter(raw) or _never())


def test_what_is_not_in_the_payload_is_left_to_the_database() -> None:
    assert (
        payload_filter(parse_filter({"importance": {"gt": 0.5}}) or _never(), FakeConditions())
        is None
    )
    assert payload_filter(parse_filter({"profile.age": 22}) or _never(), FakeConditions()) is None
    assert payload_filter(parse_filter({"NOT": [{"n": 3}]}) or _never(), FakeConditions()) is None
    # an ALL keeps what the payload can say; an ANY with a part it cannot say says nothing
    assert passing({"importance": {"gt": 0.5}, "layer": "semantic"}, FakeConditions()) == matching(
        {"layer": "semantic"}
    )
    assert (
        len(passing({"OR": [{"importance": 0.05}, {"layer": "semantic"}]}, FakeConditions())) == 40
    )


def _only_own_fields(node: Any) -> bool:
    if isinstance(node, list):
        return all(_only_own_fields(part) for part in node)
    if not isinstance(node, dict):
        return True
    for key, value in node.items():
        if key in ("AND", "OR", "NOT"):
            if not _only_own_fields(value):
                return False
        elif key not in OWN:
            return False
        elif (
            key == "stage_id" and isinstance(value, dict) and {"contains", "icontains"} & set(value)
        ):
            return False  # substrings of a stage id are left to the database
        elif key in ("layer", "critical") and value == "*":
            return False  # always true: the payload says nothing
    return True
