"""Namespaced items (LangGraph's store model): labels, stored keys, value filters as filter
trees, list_namespaces' matching."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore.domain.errors import InvalidParams
from agentcore.domain.filters import Condition, Field, Not, Op
from agentcore.domain.namespaces import (
    Match,
    check_labels,
    item_metadata,
    matching_namespaces,
    namespace_of,
    stored_key,
    under,
    value_filter,
)


@pytest.mark.parametrize("labels", [["a.b"], [""], ["a", "b\x00"], ["*"], ["x"] * 33])
def test_labels_langgraph_refuses_are_refused(labels: list[str]) -> None:
    with pytest.raises(InvalidParams):
        check_labels(labels, "namespace")


def test_wildcards_only_where_allowed() -> None:
    assert check_labels(["a", "*"], "prefix", wildcards=True) == ("a", "*")


def test_stored_keys_cannot_collide() -> None:
    """A key may hold dots: the depth says where the namespace ends."""
    assert stored_key(("a", "b"), "c") != stored_key(("a",), "b.c")
    assert stored_key(("a",), "b.c") == "1:a.b.c"
    with pytest.raises(InvalidParams, match="256"):
        stored_key(("n",) * 30, "k" * 200)
    with pytest.raises(InvalidParams):
        stored_key((), "k")


def test_metadata_holds_each_leading_part() -> None:
    metadata = item_metadata(("m", "alice", "trips"), "k", {"v": 1}, True, None)
    assert metadata["ns_1"] == "m"
    assert metadata["ns_2"] == "m.alice"
    assert metadata["ns_3"] == "m.alice.trips"
    assert metadata["ttl_minutes"] is None
    assert namespace_of(metadata) == ("m", "alice", "trips")
    assert under(("m", "alice")) == Condition(Field.METADATA, Op.EQ, "m.alice", path=("ns_2",))


def _value(*path: str) -> tuple[str, ...]:
    return ("value", *path)


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"a": 1}, Condition(Field.METADATA, Op.EQ, 1, path=_value("a"))),
        ({"a": {"b": "x"}}, Condition(Field.METADATA, Op.EQ, "x", path=_value("a", "b"))),
        ({"a": {"$gt": 2.5}}, Condition(Field.METADATA, Op.GT, 2.5, path=_value("a"))),
        (
            {"a": {"$ne": "x"}},
            Not((Condition(Field.METADATA, Op.EQ, "x", path=_value("a")),)),
        ),
        ({"a": None}, Not((Condition(Field.METADATA, Op.PRESENT, path=_value("a")),))),
    ],
)
def test_value_filters(flt: dict[str, Any], expected: object) -> None:
    assert value_filter(flt) == expected


@pytest.mark.parametrize(
    "flt",
    [
        {"a": [1, 2]},
        {"a": {"$regex": "x"}},
        {"a": {"$gt": "x"}},
        {"a": {"$gt": True}},
        {"a": {"$eq": {"b": 1}}},
        {"a": float("nan")},
        {f"k{n}": n for n in range(65)},
    ],
)
def test_bad_value_filters_are_refused(flt: dict[str, Any]) -> None:
    with pytest.raises(InvalidParams):
        value_filter(flt)


def test_list_namespaces_matching() -> None:
    found = [("a", "b", "c"), ("a", "x", "c"), ("a", "b"), ("z", "b", "c")]
    assert matching_namespaces(found, [Match("prefix", ("a", "*", "c"))], None, 10, 0) == [
        ("a", "b", "c"),
        ("a", "x", "c"),
    ]
    assert matching_namespaces(found, [Match("suffix", ("b", "c"))], None, 10, 0) == [
        ("a", "b", "c"),
        ("z", "b", "c"),
    ]
    assert matching_namespaces(found, [], 1, 10, 0) == [("a",), ("z",)]
    assert matching_namespaces(found, [], None, 2, 1) == [("a", "b", "c"), ("a", "x", "c")]
    assert Match("prefix", ("a", "*", "c")).fixed_prefix() == ("a",)
    assert Match("suffix", ("c",)).fixed_prefix() == ()
