"""mem0's filter grammar validated into the typed tree (``agentcore.domain.filter_grammar``):
what each form means, and a bad filter refused with the place and the reason."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentcore.domain.errors import InvalidParams
from agentcore.domain.filter_grammar import MAX_CONDITIONS, parse_filter
from agentcore.domain.filters import (
    All,
    AnyOf,
    Condition,
    Field,
    Not,
    Op,
    all_of,
    conditions,
    created_between,
    metadata_equals,
    tags_filter,
)

META = Field.METADATA


def test_absent_or_empty_is_no_filter() -> None:
    assert parse_filter(None) is None
    assert parse_filter({}) is None
    assert parse_filter({"AND": []}) is None


def test_plain_values() -> None:
    assert parse_filter({"city": "Berlin"}) == Condition(META, Op.EQ, "Berlin", ("city",))
    assert parse_filter({"n": 1}) == Condition(META, Op.EQ, 1, ("n",))
    assert parse_filter({"ok": True}) == Condition(META, Op.EQ, True, ("ok",))
    assert parse_filter({"city": ["a", 2]}) == Condition(META, Op.IN, ("a", 2), ("city",))
    assert parse_filter({"city": "*"}) == Condition(META, Op.PRESENT, None, ("city",))
    # "*" under an operator is the string itself
    assert parse_filter({"city": {"eq": "*"}}) == Condition(META, Op.EQ, "*", ("city",))


def test_every_operator() -> None:
    for op, value in [
        ("eq", "x"),
        ("ne", 2.5),
        ("gt", 1),
        ("gte", 1.5),
        ("lt", -3),
        ("lte", 0),
        ("contains", "x"),
        ("icontains", "X"),
    ]:
        assert parse_filter({"k": {op: value}}) == Condition(META, Op(op), value, ("k",))
    assert parse_filter({"k": {"in": [1, "1", True]}}) == Condition(
        META, Op.IN, (1, "1", True), ("k",)
    )
    assert parse_filter({"k": {"nin": []}}) == Condition(META, Op.NIN, (), ("k",))


def test_several_operators_and_keys_are_all_required() -> None:
    assert parse_filter({"n": {"gte": 1, "lt": 5}, "city": "x"}) == All(
        (
            Condition(META, Op.GTE, 1, ("n",)),
            Condition(META, Op.LT, 5, ("n",)),
            Condition(META, Op.EQ, "x", ("city",)),
        )
    )


def test_logical_operators_nest() -> None:
    tree = parse_filter(
        {"OR": [{"a": 1}, {"AND": [{"b": 2}, {"NOT": [{"c": 3}, {"d": 4}]}]}], "e": 5}
    )
    assert tree == All(
        (
            AnyOf(
                (
                    Condition(META, Op.EQ, 1, ("a",)),
                    All(
                        (
                            Condition(META, Op.EQ, 2, ("b",)),
                            Not(
                                (
                                    Condition(META, Op.EQ, 3, ("c",)),
                                    Condition(META, Op.EQ, 4, ("d",)),
                                )
                            ),
                        )
                    ),
                )
            ),
            Condition(META, Op.EQ, 5, ("e",)),
        )
    )


def test_dotted_keys_are_nested_and_own_fields_are_fields() -> None:
    assert parse_filter({"a.b.c": 1}) == Condition(META, Op.EQ, 1, ("a", "b", "c"))
    assert parse_filter({"layer": "semantic"}) == Condition(Field.LAYER, Op.EQ, "semantic")
    assert parse_filter({"metadata.layer": "x"}) == Condition(META, Op.EQ, "x", ("layer",))
    assert parse_filter({"critical": False}) == Condition(Field.CRITICAL, Op.EQ, False)
    assert parse_filter({"importance": {"gt": 0.5}}) == Condition(Field.IMPORTANCE, Op.GT, 0.5)
    assert parse_filter({"stage_id": {"ne": "s1"}}) == Condition(Field.STAGE_ID, Op.NE, "s1")


def test_times_are_parsed_to_utc() -> None:
    tree = parse_filter({"created_at": {"gte": "2025-03-01T14:00:00+02:00"}})
    assert tree == Condition(Field.CREATED_AT, Op.GTE, datetime(2025, 3, 1, 12, tzinfo=UTC))
    naive = parse_filter({"updated_at": {"lt": "2025-03-01"}})
    assert naive == Condition(Field.UPDATED_AT, Op.LT, datetime(2025, 3, 1, tzinfo=UTC))


def test_tags_mean_holding_tags() -> None:
    tags = Field.TAGS
    assert parse_filter({"tags": "a"}) == Condition(tags, Op.ANY, ("a",))
    assert parse_filter({"tags": {"contains": "a"}}) == Condition(tags, Op.ANY, ("a",))
    assert parse_filter({"tags": ["a", "b"]}) == Condition(tags, Op.ANY, ("a", "b"))
    assert parse_filter({"tags": {"ne": "a"}}) == Condition(tags, Op.NONE, ("a",))
    assert parse_filter({"tags": {"nin": ["a"]}}) == Condition(tags, Op.NONE, ("a",))
    assert parse_filter({"tags": {"all": ["a", "b"]}}) == Condition(tags, Op.ALL, ("a", "b"))
    assert parse_filter({"tags": {"any": ["a"]}}) == Condition(tags, Op.ANY, ("a",))
    assert parse_filter({"tags": {"none": ["a"]}}) == Condition(tags, Op.NONE, ("a",))
    assert parse_filter({"tags": "*"}) == Condition(tags, Op.PRESENT)


def errors_of(raw: Any) -> list[dict[str, str]]:
    with pytest.raises(InvalidParams) as raised:
        parse_filter(raw)
    found: list[dict[str, str]] = raised.value.details["errors"]
    return found


@pytest.mark.parametrize(
    ("raw", "field", "says"),
    [
        (
            {"OR": [{"a": 1}, {"importance": {"gte": "high"}}]},
            "filter.OR[1].importance.gte",
            "number",
        ),
        ({"importance": {"gt": "high"}}, "filter.importance.gt", "not a string"),
        ({"importance": {"gt": True}}, "filter.importance.gt", "not a boolean"),
        ({"a": {"like": "x"}}, "filter.a.like", "unknown operator 'like'"),
        ({"a": {"*": 1}}, "filter.a.*", "unknown operator"),
        ({"a": {}}, "filter.a", "no operator"),
        ({"a": None}, "filter.a", "not null"),
        ({"a": {"eq": [1]}}, "filter.a.eq", "not a list"),
        ({"a": {"eq": {"b": 1}}}, "filter.a.eq", "not an object"),
        ({"a": {"in": "x"}}, "filter.a.in", "list"),
        ({"a": {"in": [1, [2]]}}, "filter.a.in", "value 1"),
        ({"a": {"gt": "2025-01-01"}}, "filter.a.gt", "only created_at and updated_at"),
        ({"a": {"icontains": 3}}, "filter.a.icontains", "string"),
        ({"a": {"all": ["x"]}}, "filter.a.all", "does not apply to metadata"),
        ({"tags": {"gt": 1}}, "filter.tags.gt", "does not apply to tags"),
        ({"tags": {"icontains": "x"}}, "filter.tags.icontains", "does not apply"),
        ({"tags": 3}, "filter.tags", "string"),
        ({"layer": "bogus"}, "filter.layer", "unknown layer"),
        ({"layer": {"gt": "a"}}, "filter.layer.gt", "does not apply"),
        ({"critical": "yes"}, "filter.critical", "true or false"),
        ({"stage_id": 3}, "filter.stage_id", "string"),
        ({"created_at": {"gt": "yesterday"}}, "filter.created_at.gt", "ISO 8601"),
        ({"created_at": {"gt": 1700000000}}, "filter.created_at.gt", "ISO 8601"),
        ({"a..b": 1}, "filter.a..b", "empty key"),
        ({'a"b': 1}, 'filter.a"b', "double quote"),
        ({"AND": {"a": 1}}, "filter.AND", "list"),
        ({"OR": []}, "filter.OR", "non-empty"),
        ({"NOT": [1]}, "filter.NOT[0]", "object"),
        ({"NOT": [{}]}, "filter.NOT[0]", "empty filter"),
        ({"a": "x" * 1001}, "filter.a", "1000 characters"),
        ({"a": "x\x00y"}, "filter.a", "NUL"),
        ({"a\x00": 1}, "filter.a\x00", "NUL"),
        ({"a": "x\ud800"}, "filter.a", "lone surrogate"),
        ({"a\udfff": 1}, "filter.a\udfff", "lone surrogate"),
        ({"a": 2**63}, "filter.a", "64 bits"),
        ({"a": {"gt": float("nan")}}, "filter.a.gt", "finite"),
        ({"a": {"in": list(range(101))}}, "filter.a.in", "at most 100"),
    ],
)
def test_a_bad_filter_names_the_place_and_why(raw: Any, field: str, says: str) -> None:
    found = errors_of(raw)
    assert found[0]["field"] == field
    assert says in found[0]["message"]


def test_depth_and_size_are_bounded() -> None:
    deep: dict[str, Any] = {"a": 1}
    for _ in range(5):
        deep = {"AND": [deep]}
    assert errors_of(deep)[0]["field"] == "filter" + ".AND[0]" * 5
    assert parse_filter({"AND": [{"AND": [{"AND": [{"AND": [{"a": 1}]}]}]}]}) is not None
    wide = {f"k{n}": n for n in range(MAX_CONDITIONS + 1)}
    assert errors_of(wide)[-1] == {"field": "filter", "message": "65 conditions; at most 64"}
    assert parse_filter({f"k{n}": n for n in range(MAX_CONDITIONS)}) is not None


def test_every_error_is_reported() -> None:
    found = errors_of({"a": {"gt": "x"}, "OR": [{"b": {"bad": 1}}], "layer": "nope"})
    assert [e["field"] for e in found] == ["filter.a.gt", "filter.OR[0].b.bad", "filter.layer"]


def test_helpers_build_the_same_tree() -> None:
    assert metadata_equals({"a.b": 1}) == Condition(META, Op.EQ, 1, ("a.b",))  # not split
    assert tags_filter(["x"], "all") == Condition(Field.TAGS, Op.ALL, ("x",))
    assert tags_filter([], "all") is None
    since = datetime(2025, 1, 1, tzinfo=UTC)
    assert created_between(since) == Condition(Field.CREATED_AT, Op.GTE, since)
    assert all_of(None, all_of(None)) is None
    both = all_of(Condition(META, Op.PRESENT, None, ("a",)), created_between(since, since))
    assert isinstance(both, All)
    assert len(list(conditions(both))) == 3
