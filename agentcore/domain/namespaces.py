"""Items by namespace: LangGraph's store model (``BaseStore``) as memories of a scope.

An item is a JSON object under a key in a namespace, a tuple of labels (``("memories",
"alice")``). It is stored as a key-value memory of the scope the caller names:

- the memory's ``key`` is ``"<depth>:<labels joined by dots>.<key>"`` (labels hold no dot, so
  the depth tells where the namespace ends and the key begins; unique per scope);
- its ``metadata`` holds the object under ``value``, the namespace's path under ``namespace``
  and each leading part of it under ``ns_1`` … ``ns_<depth>`` (top-level text values, which a
  vector store's payload decides, so a prefix costs one equality), the item's key under
  ``item_key``, whether it is ``indexed`` and its ``ttl_minutes`` when it has one;
- its content is the text of the fields the caller chose to index (the whole object when
  not chosen), which search matches by words and meaning like any memory's.

Filters on values use LangGraph's grammar (``{"field": value}``, nested objects for nested
fields, operators ``$eq $ne $gt $gte $lt $lte``) and become a filter tree on the metadata
(``agentcore.domain.filters``), evaluated by the stores. As in LangGraph's in-memory store,
``$ne`` and a ``None`` value match an item that lacks the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentcore.domain.errors import InvalidParams
from agentcore.domain.filters import Condition, Field, Filter, Not, Op, all_of

Namespace = tuple[str, ...]

MAX_DEPTH = 32  # labels in a namespace
MAX_STORED_KEY = 256  # characters of the memory key (the key-value contract's limit)
MAX_FILTER_CONDITIONS = 64
WILDCARD = "*"  # in list_namespaces conditions: any one label
VALUE = "value"
NAMESPACE = "namespace"
ITEM_KEY = "item_key"
INDEXED = "indexed"
TTL_MINUTES = "ttl_minutes"
_OPS = {"$eq": Op.EQ, "$gt": Op.GT, "$gte": Op.GTE, "$lt": Op.LT, "$lte": Op.LTE}


def _invalid(field: str, message: str) -> InvalidParams:
    return InvalidParams(f"{field}: {message}", errors=[{"field": field, "message": message}])


def check_labels(labels: Sequence[str], field: str, *, wildcards: bool = False) -> Namespace:
    """The labels as a namespace: each a non-empty string without a dot or NUL (LangGraph's
    rules; ``"*"`` only where ``wildcards``), at most ``MAX_DEPTH`` of them."""
    if len(labels) > MAX_DEPTH:
        raise _invalid(field, f"at most {MAX_DEPTH} labels")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise _invalid(field, "labels are non-empty strings")
        if "." in label or "\x00" in label:
            raise _invalid(field, f"label {label[:100]!r} holds a dot or a NUL")
        if label == WILDCARD and not wildcards:
            raise _invalid(field, "'*' matches labels only in list_namespaces conditions")
    return tuple(labels)


def path(namespace: Namespace) -> str:
    return ".".join(namespace)


def stored_key(namespace: Namespace, key: str) -> str:
    """The memory key of an item (module doc); ``InvalidParams`` when it is too long."""
    if not namespace:
        raise _invalid("namespace", "an item's namespace has at least one label")
    stored = f"{len(namespace)}:{path(namespace)}.{key}"
    if len(stored) > MAX_STORED_KEY:
        raise _invalid(
            "key", f"namespace and key together take {len(stored)} characters; at most 256"
        )
    return stored


def item_metadata(
    namespace: Namespace, key: str, value: Mapping[str, Any], indexed: bool, ttl: float | None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        VALUE: dict(value),
        NAMESPACE: path(namespace),
        ITEM_KEY: key,
        INDEXED: indexed,
        TTL_MINUTES: ttl,  # null when none: a put replaces a TTL the item had
    }
    for depth in range(1, len(namespace) + 1):
        metadata[f"ns_{depth}"] = path(namespace[:depth])
    return metadata


def namespace_of(metadata: Mapping[str, Any]) -> Namespace:
    found = metadata.get(NAMESPACE)
    return tuple(found.split(".")) if isinstance(found, str) and found else ()


def under(prefix: Namespace) -> Filter:
    """Items whose namespace starts with ``prefix`` (every item for an empty one)."""
    if not prefix:
        return Condition(Field.METADATA, Op.PRESENT, path=(NAMESPACE,))
    return Condition(Field.METADATA, Op.EQ, path(prefix), path=(f"ns_{len(prefix)}",))


def indexed_only() -> Filter:
    return Condition(Field.METADATA, Op.EQ, True, path=(INDEXED,))


def check_ttl(ttl: float | None) -> float | None:
    if ttl is not None and (not math.isfinite(ttl) or ttl <= 0):
        raise _invalid("ttl", "minutes, a positive number")
    return ttl


def value_filter(flt: Mapping[str, Any] | None) -> Filter | None:
    """LangGraph's filter on an item's value as a filter tree (module doc)."""
    if not flt:
        return None
    parts: list[Filter] = []
    for name, wanted in flt.items():
        parts.extend(_conditions((VALUE, str(name)), wanted, f"filter.{name}"))
    if len(parts) > MAX_FILTER_CONDITIONS:
        raise _invalid("filter", f"at most {MAX_FILTER_CONDITIONS} conditions")
    return all_of(*parts)


def _conditions(at: tuple[str, ...], wanted: Any, field: str) -> list[Filter]:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return [
                _operator(at, str(op), operand, f"{field}.{op}") for op, operand in wanted.items()
            ]
        found: list[Filter] = []
        for name, inner in wanted.items():
            found.extend(_conditions((*at, str(name)), inner, f"{field}.{name}"))
        return found
    return [_equal(at, wanted, field)]


def _equal(at: tuple[str, ...], wanted: Any, field: str) -> Filter:
    if wanted is None:
        return Not((Condition(Field.METADATA, Op.PRESENT, path=at),))
    return Condition(Field.METADATA, Op.EQ, _scalar(wanted, field), path=at)


def _operator(at: tuple[str, ...], op: str, operand: Any, field: str) -> Filter:
    if op == "$ne":
        return Not((_equal(at, operand, field),))
    if op == "$eq":
        return _equal(at, operand, field)
    if op not in _OPS:
        raise _invalid(field, "operators are $eq $ne $gt $gte $lt $lte")
    if isinstance(operand, bool) or not isinstance(operand, int | float):
        raise _invalid(field, "compares with a number")
    return Condition(Field.METADATA, _OPS[op], _scalar(operand, field), path=at)


def _scalar(value: Any, field: str) -> str | int | float | bool:
    if isinstance(value, float) and not math.isfinite(value):
        raise _invalid(field, "a finite number")
    if isinstance(value, str | int | float | bool):
        return value
    raise _invalid(field, "compares with a string, a number or a boolean (not a list)")


@dataclass(frozen=True, slots=True)
class Match:
    """One condition of list_namespaces: the namespace's first (``prefix``) or last
    (``suffix``) labels are ``labels``, ``"*"`` matching any one label."""

    kind: Literal["prefix", "suffix"]
    labels: Namespace

    def holds(self, namespace: Namespace) -> bool:
        if len(namespace) < len(self.labels):
            return False
        part = (
            namespace[: len(self.labels)]
            if self.kind == "prefix"
            else namespace[-len(self.labels) :]
        )
        return all(w in (WILDCARD, label) for w, label in zip(self.labels, part, strict=True))

    def fixed_prefix(self) -> Namespace:
        """The leading labels before any wildcard (a prefix condition's); () otherwise."""
        if self.kind != "prefix":
            return ()
        fixed: list[str] = []
        for label in self.labels:
            if label == WILDCARD:
                break
            fixed.append(label)
        return tuple(fixed)


def matching_namespaces(
    namespaces: Sequence[Namespace],
    matches: Sequence[Match],
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[Namespace]:
    """LangGraph's list_namespaces over ``namespaces``: those every match holds for, cut to
    ``max_depth`` labels (duplicates merged), sorted, then ``offset`` and ``limit``."""
    kept = {ns for ns in namespaces if all(m.holds(ns) for m in matches)}
    if max_depth is not None:
        kept = {ns[:max_depth] for ns in kept}
    return sorted(kept)[offset : offset + limit]
