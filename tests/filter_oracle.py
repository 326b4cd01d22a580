"""What a filter tree means, in Python: the reference the stores' SQL and payload filters are
tested against (``agentcore.domain.filters`` defines it in words). Tests only: the service
never filters by scanning in Python."""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from agentcore.domain.filters import (
    RANGES,
    SCOPE_ID_FIELDS,
    All,
    AnyOf,
    Condition,
    Field,
    Filter,
    Op,
)
from agentcore.domain.models import Memory

_MISSING = object()
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
Payload = Mapping[str, Any]
Predicate = Callable[[Payload], bool]


def satisfies(memory: Memory, node: Filter | None) -> bool:
    if node is None:
        return True
    if isinstance(node, All):
        return all(satisfies(memory, part) for part in node.parts)
    if isinstance(node, AnyOf):
        return any(satisfies(memory, part) for part in node.parts)
    if isinstance(node, Condition):
        return _holds(memory, node)
    return not any(satisfies(memory, part) for part in node.parts)


def _holds(memory: Memory, c: Condition) -> bool:
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    if c.field is Field.TAGS:
        held = set(memory.tags)
        if c.op is Op.PRESENT:
            return bool(held)
        if c.op is Op.ALL:
            return set(values) <= held
        found = bool(held & set(values))
        return not found if c.op is Op.NONE else found
    value = _value(memory, c)
    if value is _MISSING or value is None:
        return False
    if c.op is Op.PRESENT:
        return True
    if c.op in (Op.EQ, Op.IN):
        return any(_equal(value, v) for v in values)
    if c.op in (Op.NE, Op.NIN):
        return not any(_equal(value, v) for v in values)
    if c.op in RANGES:
        if isinstance(value, datetime) != isinstance(c.value, datetime) or not _ordered(value):
            return False
        return _compare(value, c.op, c.value)
    if c.op is Op.CONTAINS:
        if isinstance(value, str):
            return isinstance(c.value, str) and c.value in value
        return isinstance(value, list) and any(_equal(e, c.value) for e in value)
    assert c.op is Op.ICONTAINS
    return isinstance(value, str) and lower(str(c.value)) in lower(value)


def lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def _value(memory: Memory, c: Condition) -> Any:
    if c.field in SCOPE_ID_FIELDS:
        return getattr(memory.scope, c.field.value)
    if c.field is not Field.METADATA:
        value = getattr(memory, c.field.value)
        return value.value if c.field is Field.LAYER else value
    found: Any = memory.metadata
    for key in c.path:
        if not isinstance(found, dict) or key not in found:
            return _MISSING
        found = found[key]
    return found


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _equal(a: object, b: object) -> bool:
    return _kind(a) == _kind(b) and a == b


def _ordered(value: object) -> bool:
    return isinstance(value, datetime) or _kind(value) == "number"


def _compare(left: Any, op: Op, right: Any) -> bool:
    return bool(
        {
            Op.GT: left > right,
            Op.GTE: left >= right,
            Op.LT: left < right,
            Op.LTE: left <= right,
        }[op]
    )


class FakeConditions:
    """Payload conditions as Python predicates over a point's payload (for the fake vector
    store): what ``payload_filter`` asks of an engine, evaluated as Qdrant would."""

    def keyword(self, key: str, values: Sequence[str]) -> Predicate:
        def test(payload: Payload) -> bool:
            found = _at(payload, key)
            if isinstance(found, list):
                return any(isinstance(e, str) and e in values for e in found)
            return isinstance(found, str) and found in values

        return test

    def flag(self, key: str, value: bool) -> Predicate:
        return lambda payload: _at(payload, key) is value

    def range(
        self,
        key: str,
        *,
        gt: float | None = None,
        gte: float | None = None,
        lt: float | None = None,
        lte: float | None = None,
    ) -> Predicate:
        def test(payload: Payload) -> bool:
            found = _at(payload, key)
            if _kind(found) != "number":
                return False
            return (
                (gt is None or found > gt)
                and (gte is None or found >= gte)
                and (lt is None or found < lt)
                and (lte is None or found <= lte)
            )

        return test

    def empty(self, key: str) -> Predicate:
        return lambda payload: _at(payload, key) in (_MISSING, None, [])

    def all(self, parts: list[Predicate]) -> Predicate:
        return lambda payload: all(part(payload) for part in parts)

    def any(self, parts: list[Predicate]) -> Predicate:
        return lambda payload: any(part(payload) for part in parts)

    def none(self, parts: list[Predicate]) -> Predicate:
        return lambda payload: not any(part(payload) for part in parts)


def _at(payload: Payload, key: str) -> Any:
    found: Any = payload
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return _MISSING
        found = found[part]
    return found
