"""The part of a filter tree (``agentcore.domain.filters``) a vector engine can evaluate on its
payload, for every engine: each adapter says how its client library writes a condition
(``PayloadConditions``), this module decides what to say.

The payload (``payload.point_payload``) holds the layer, stage, scope ids, tags, criticality,
creation time and the top-level scalar metadata values, not importance, updated_at or nested
metadata. So the payload filter is a sound *over*-approximation: every point whose memory
satisfies the tree passes it, and the database decides on the rows read
(``LexicalIndex.lookup``), with the dense candidates widened when a tree is given
(``services.candidates``).

Two translations keep that sound through ``OR`` and ``NOT``: ``_wider`` (a superset of the
matches; a part it cannot say is dropped from an ALL, and makes an ANY say nothing) and
``_narrower`` (a subset, used under NOT; a part it cannot say exactly makes an ALL say
nothing and is dropped from an ANY). A condition is *exact* when the payload decides it as the
database does (``services.vector_payload.decided``: the memory's own fields, string equality
on top-level metadata) and the engine can say it; other metadata conditions are only a
superset (qdrant-client's local mode compares ``True == 1`` in Python), never used under NOT.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from agentcore.domain.filters import (
    OPTIONAL_FIELDS,
    RANGES,
    All,
    AnyOf,
    Condition,
    Field,
    Filter,
    Op,
)
from agentcore.services.vector_payload import decided, payload_key

C = TypeVar("C")


class PayloadConditions(Protocol[C]):
    """How one engine writes payload conditions."""

    def keyword(self, key: str, values: Sequence[str]) -> C:
        """The value at ``key`` (or an element of the list there) is one of ``values``."""
        ...

    def flag(self, key: str, value: bool) -> C:
        """The boolean at ``key`` is ``value``."""
        ...

    def range(
        self,
        key: str,
        *,
        gt: float | None = None,
        gte: float | None = None,
        lt: float | None = None,
        lte: float | None = None,
    ) -> C:
        """The number at ``key`` is within the bounds given."""
        ...

    def empty(self, key: str) -> C | None:
        """``key`` is missing, null or an empty list; None when the engine cannot say it."""
        ...

    def all(self, parts: list[C]) -> C: ...

    def any(self, parts: list[C]) -> C: ...

    def none(self, parts: list[C]) -> C: ...


def payload_filter(node: Filter, engine: PayloadConditions[C]) -> C | None:
    """A condition every point whose memory satisfies ``node`` passes; None when the payload
    narrows nothing."""
    return _wider(node, engine)


def _wider(node: Filter, engine: PayloadConditions[C]) -> C | None:
    if isinstance(node, Condition):
        found = _condition(node, engine)
        return None if found is None else found[0]
    if isinstance(node, All):
        parts = [w for part in node.parts if (w := _wider(part, engine)) is not None]
        return _joined(parts, engine.all)
    if isinstance(node, AnyOf):
        wide = [_wider(part, engine) for part in node.parts]
        if not wide or any(w is None for w in wide):
            return None
        return _joined([w for w in wide if w is not None], engine.any)
    # None of the parts: each part's exact (or narrower) condition must not hold.
    narrow = [n for part in node.parts if (n := _narrower(part, engine)) is not None]
    return engine.none(narrow) if narrow else None


def _narrower(node: Filter, engine: PayloadConditions[C]) -> C | None:
    """A condition only points whose memory satisfies ``node`` pass; None for "none"."""
    if isinstance(node, Condition):
        found = _condition(node, engine)
        return found[0] if found is not None and found[1] else None
    if isinstance(node, All):
        narrow = [_narrower(part, engine) for part in node.parts]
        if any(n is None for n in narrow):
            return None
        return _joined([n for n in narrow if n is not None], engine.all)
    if isinstance(node, AnyOf):
        parts = [n for part in node.parts if (n := _narrower(part, engine)) is not None]
        return _joined(parts, engine.any)
    wide = [_wider(part, engine) for part in node.parts]
    if any(w is None for w in wide):
        return None
    return engine.none([w for w in wide if w is not None])


def _joined(parts: list[C], join: _Join[C]) -> C | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else join(parts)


class _Join(Protocol[C]):
    def __call__(self, parts: list[C], /) -> C: ...


def _condition(c: Condition, engine: PayloadConditions[C]) -> tuple[C, bool] | None:
    """The payload condition of ``c`` and whether it is exact; None when it has none."""
    found = _said(c, engine)
    if found is None:
        return None
    condition, said_whole = found
    return condition, said_whole and decided(c)


def _said(c: Condition, engine: PayloadConditions[C]) -> tuple[C, bool] | None:
    """The payload condition of ``c``, and False when the engine could not say all of it."""
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    key = payload_key(c)
    if key is None:
        return None  # importance, updated_at, nested metadata: not in the payload
    if c.field is Field.METADATA:
        found = _values(key, c.op, values, engine)
        return None if found is None else (found, True)
    if c.field is Field.TAGS:
        return _tags(c.op, [str(v) for v in values], engine)
    if c.op is Op.PRESENT:
        if c.field not in OPTIONAL_FIELDS:
            return None  # always present: no condition
        empty = engine.empty(key)
        return None if empty is None else (engine.none([empty]), True)
    if c.op in (Op.NE, Op.NIN):
        equal = _values(key, Op.IN, values, engine)
        if equal is None:
            return None
        if c.field not in OPTIONAL_FIELDS:
            return engine.none([equal]), True
        empty = engine.empty(key)  # a memory without a stage (or id) is not "not equal"
        if empty is None:
            return engine.none([equal]), False
        return engine.none([equal, empty]), True
    found = _values(key, c.op, values, engine)
    return None if found is None else (found, True)


def _tags(op: Op, tags: list[str], engine: PayloadConditions[C]) -> tuple[C, bool] | None:
    if op is Op.PRESENT:
        empty = engine.empty("tags")
        return None if empty is None else (engine.none([empty]), True)
    if not tags:
        return None
    if op is Op.ANY:
        return engine.keyword("tags", tags), True
    if op is Op.ALL:
        held = [engine.keyword("tags", [tag]) for tag in tags]
        return (held[0] if len(held) == 1 else engine.all(held)), True
    return engine.none([engine.keyword("tags", tags)]), True  # Op.NONE


def _values(key: str, op: Op, values: Sequence[object], engine: PayloadConditions[C]) -> C | None:
    """``op`` (EQ, IN or a range) on the scalar at ``key``; None when it has no payload
    condition (other operators, no values)."""
    if op in RANGES:
        bound = _number(values[0])
        if bound is None:
            return None
        return engine.range(key, **{op.value: bound})
    if op not in (Op.EQ, Op.IN) or not values:
        return None
    texts = [v for v in values if isinstance(v, str)]
    parts = [engine.keyword(key, texts)] if texts else []
    for value in values:
        if isinstance(value, bool):
            parts.append(engine.flag(key, value))
        elif not isinstance(value, str):
            number = _number(value)
            if number is None:
                return None
            parts.append(engine.range(key, gte=number, lte=number))
    return parts[0] if len(parts) == 1 else engine.any(parts)


def _number(value: object) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()  # created_at is in the payload as epoch seconds
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
