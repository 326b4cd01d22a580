"""mem0's filter grammar, validated into the tree of ``agentcore.domain.filters``.

    {"field": value}                    equal (a list: any of them; "*": present)
    {"field": {"op": value, ...}}       eq ne gt gte lt lte in nin contains icontains
    {"tags": {"all" | "any" | "none": [...]}}
    {"AND": [...]}, {"OR": [...]}, {"NOT": [...]}   lists of filters (NOT: none of them)

Several keys (or operators) in one object must all hold. A field is one of the memory's own
(``layer``, ``tags``, ``stage_id``, ``critical``, ``importance``, ``created_at``,
``updated_at``) or a metadata key, nested by dots (``a.b.c``); ``metadata.`` in front names a
metadata key that has an own field's name. A bad filter raises ``InvalidParams`` whose
``errors`` name each failing place (``filter.OR[1].importance.gte``) and say why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agentcore.domain.errors import InvalidParams
from agentcore.domain.filters import (
    RANGES,
    SCOPE_ID_FIELDS,
    AnyOf,
    Condition,
    Field,
    Filter,
    Not,
    Op,
    Operand,
    Scalar,
    all_of,
)
from agentcore.domain.models import Layer

MAX_DEPTH = 5  # levels of objects, the outermost one included
MAX_CONDITIONS = 64
MAX_VALUES = 100  # in a list of values (in, nin, all, any, none)
MAX_STRING = 1_000  # characters of a value, a key or a dotted path
_MAX_ERRORS = 20
_MIN_INT, _MAX_INT = -(2**63), 2**63 - 1  # what SQLite binds
_METADATA_PREFIX = "metadata."
_SURROGATE = re.compile("[\ud800-\udfff]")
_LISTS = frozenset({Op.IN, Op.NIN, Op.ALL, Op.ANY, Op.NONE})
_COMPARABLE = frozenset({Op.EQ, Op.NE, *RANGES, Op.IN, Op.NIN, Op.PRESENT})
_OPS: dict[Field, frozenset[Op]] = {
    Field.METADATA: frozenset(Op) - {Op.ALL, Op.ANY, Op.NONE},
    Field.LAYER: frozenset({Op.EQ, Op.NE, Op.IN, Op.NIN, Op.PRESENT}),
    Field.TAGS: frozenset(
        {Op.EQ, Op.NE, Op.IN, Op.NIN, Op.CONTAINS, Op.ALL, Op.ANY, Op.NONE, Op.PRESENT}
    ),
    Field.STAGE_ID: frozenset({Op.EQ, Op.NE, Op.IN, Op.NIN, Op.CONTAINS, Op.ICONTAINS, Op.PRESENT}),
    Field.CRITICAL: frozenset({Op.EQ, Op.NE, Op.IN, Op.NIN, Op.PRESENT}),
    **dict.fromkeys(SCOPE_ID_FIELDS, frozenset({Op.EQ, Op.NE, Op.IN, Op.NIN, Op.PRESENT})),
    Field.IMPORTANCE: _COMPARABLE,
    Field.CREATED_AT: _COMPARABLE,
    Field.UPDATED_AT: _COMPARABLE,
}
# Tags are a list: equality and containment mean holding the tag.
_TAG_OPS = {Op.EQ: Op.ANY, Op.CONTAINS: Op.ANY, Op.IN: Op.ANY, Op.NE: Op.NONE, Op.NIN: Op.NONE}
_OWN = {field.value: field for field in Field if field is not Field.METADATA}
_OWN["run_id"] = Field.SESSION_ID  # mem0's name for a session
_OP_NAMES = {op.value: op for op in Op if op is not Op.PRESENT}  # "*" is a value, not a key
_LAYERS = frozenset(layer.value for layer in Layer)
_TEXT_FIELDS = SCOPE_ID_FIELDS | {Field.LAYER, Field.TAGS, Field.STAGE_ID}


class _Invalid(Exception):
    """One value that breaks the grammar: the message for its place."""


def parse_filter(raw: Mapping[str, Any] | None, name: str = "filter") -> Filter | None:
    """The filter as a tree; None when it is absent or empty (no condition)."""
    if raw is None:
        return None
    parser = _Parser()
    tree = parser.node(raw, name, 1)
    if parser.count > MAX_CONDITIONS:
        parser.fail(name, f"{parser.count} conditions; at most {MAX_CONDITIONS}")
    if parser.errors:
        first = parser.errors[0]
        raise InvalidParams(
            f"invalid {name}: {first['field']}: {first['message']}", errors=parser.errors
        )
    return tree


class _Parser:
    def __init__(self) -> None:
        self.errors: list[dict[str, str]] = []
        self.count = 0

    def fail(self, where: str, message: str) -> None:
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append({"field": where, "message": message})

    def node(self, raw: object, where: str, depth: int) -> Filter | None:
        if not isinstance(raw, Mapping):
            self.fail(where, "expected an object of conditions")
            return None
        if depth > MAX_DEPTH:
            self.fail(where, f"nested deeper than {MAX_DEPTH} levels")
            return None
        parts: list[Filter | None] = []
        for key, value in raw.items():
            if self.count > MAX_CONDITIONS:
                break
            if key in ("AND", "OR", "NOT"):
                parts.append(self._logical(key, value, f"{where}.{key}", depth))
            else:
                parts.append(self._field(str(key), value, f"{where}.{key}"))
        return all_of(*parts)

    def _logical(self, key: str, raw: object, where: str, depth: int) -> Filter | None:
        if not isinstance(raw, list):
            self.fail(where, f"{key} takes a list of filters")
            return None
        if not raw and key != "AND":
            self.fail(where, f"{key} takes a non-empty list of filters")
            return None
        parts: list[Filter] = []
        for n, item in enumerate(raw):
            if isinstance(item, Mapping) and not item:
                self.fail(f"{where}[{n}]", "an empty filter")
                continue
            part = self.node(item, f"{where}[{n}]", depth + 1)
            if part is not None:
                parts.append(part)
        if key == "AND":
            return all_of(*parts)
        return AnyOf(tuple(parts)) if key == "OR" else Not(tuple(parts))

    def _field(self, key: str, raw: object, where: str) -> Filter | None:
        try:
            field, path = _field_of(key)
        except _Invalid as exc:
            self.fail(where, str(exc))
            return None
        if isinstance(raw, Mapping):
            if not raw:
                self.fail(where, "no operator given")
                return None
            return all_of(
                *(
                    self._condition(field, path, op, value, f"{where}.{op}")
                    for op, value in raw.items()
                )
            )
        if raw == "*":
            return self._condition(field, path, Op.PRESENT, None, where)
        if isinstance(raw, list):
            return self._condition(field, path, Op.IN, raw, where)
        return self._condition(field, path, Op.EQ, raw, where)

    def _condition(
        self, field: Field, path: tuple[str, ...], op_name: Op | object, raw: object, where: str
    ) -> Condition | None:
        self.count += 1
        try:
            op = _op_of(op_name, field)
            value = _operand(field, op, raw)
        except _Invalid as exc:
            self.fail(where, str(exc))
            return None
        if field is Field.TAGS and op in _TAG_OPS:
            op, value = _TAG_OPS[op], value if isinstance(value, tuple) else (str(value),)
        return Condition(field, op, value, path)


def _unencodable(text: str) -> bool:
    """NUL (SQL text ends there) or a lone surrogate (not UTF-8: no store can take it; the
    JSON-RPC edge refuses these already)."""
    return "\x00" in text or _SURROGATE.search(text) is not None


def _field_of(key: str) -> tuple[Field, tuple[str, ...]]:
    if len(key) > MAX_STRING:
        raise _Invalid(f"a field name of at most {MAX_STRING} characters")
    if key in _OWN:
        return _OWN[key], ()
    dotted = key[len(_METADATA_PREFIX) :] if key.startswith(_METADATA_PREFIX) else key
    path = tuple(dotted.split("."))
    if any(not part for part in path):
        raise _Invalid("a metadata key path with an empty key (two dots, or one at an end)")
    if any('"' in part or _unencodable(part) for part in path):
        raise _Invalid(
            "a metadata key with a double quote, a NUL character or a lone surrogate cannot "
            "be filtered on"
        )
    return Field.METADATA, path


def _op_of(name: Op | object, field: Field) -> Op:
    """``name``: an operator key as the caller wrote it, or the operator a plain value means."""
    op = name if isinstance(name, Op) else _OP_NAMES.get(name) if isinstance(name, str) else None
    allowed = _OPS[field]
    if op is None:
        names = ", ".join(o.value for o in Op if o is not Op.PRESENT and o in allowed)
        raise _Invalid(f"unknown operator {str(name)[:50]!r}; {field.value} takes {names}")
    if op not in allowed:
        names = ", ".join(o.value for o in Op if o in allowed)
        raise _Invalid(f"{op.value!r} does not apply to {field.value}; it takes {names}")
    return op


def _operand(field: Field, op: Op, raw: object) -> Operand:
    if op is Op.PRESENT:
        return None
    if op in _LISTS:
        if not isinstance(raw, list):
            raise _Invalid(f"{op.value} takes a list of values")
        if len(raw) > MAX_VALUES:
            raise _Invalid(f"{len(raw)} values; at most {MAX_VALUES}")
        values: list[Any] = []
        for n, item in enumerate(raw):
            try:
                values.append(_scalar(field, Op.EQ, item))
            except _Invalid as exc:
                raise _Invalid(f"value {n}: {exc}") from None
        return tuple(values)
    return _scalar(field, op, raw)


def _scalar(field: Field, op: Op, raw: object) -> Scalar | datetime:
    """One value of a condition, checked against the field's type."""
    if isinstance(raw, str) and len(raw) > MAX_STRING:
        raise _Invalid(f"a string of at most {MAX_STRING} characters")
    if isinstance(raw, str) and _unencodable(raw):
        raise _Invalid("a string without NUL characters or lone surrogates")
    if field is Field.METADATA:
        return _metadata_value(op, raw)
    if field in _TEXT_FIELDS:
        if not isinstance(raw, str):
            raise _Invalid(f"{field.value} compares with a string, not {_kind(raw)}")
        if field is Field.LAYER and raw not in _LAYERS:
            raise _Invalid(f"unknown layer {raw[:50]!r}; one of {', '.join(sorted(_LAYERS))}")
        return raw
    if field is Field.CRITICAL:
        if not isinstance(raw, bool):
            raise _Invalid(f"critical compares with true or false, not {_kind(raw)}")
        return raw
    if field is Field.IMPORTANCE:
        return _number(raw, field.value)
    return _time(raw, field.value)


def _metadata_value(op: Op, raw: object) -> Scalar:
    if op in RANGES:
        if isinstance(raw, str):
            raise _Invalid(
                "metadata compares by number (only created_at and updated_at compare as "
                f"times), not {_kind(raw)}"
            )
        return _number(raw, "metadata")
    if op is Op.ICONTAINS and not isinstance(raw, str):
        raise _Invalid(f"icontains takes a string, not {_kind(raw)}")
    if isinstance(raw, bool | str):
        return raw
    if isinstance(raw, int | float):
        return _number(raw, "metadata")
    raise _Invalid(f"a string, number or boolean, not {_kind(raw)}")


def _number(raw: object, name: str) -> int | float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise _Invalid(f"{name} compares with a number, not {_kind(raw)}")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise _Invalid("a finite number")
    if isinstance(raw, int) and not _MIN_INT <= raw <= _MAX_INT:
        raise _Invalid("an integer of at most 64 bits")
    return raw


def _time(raw: object, name: str) -> datetime:
    if not isinstance(raw, str):
        raise _Invalid(f"{name} compares with an ISO 8601 time (a string), not {_kind(raw)}")
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise _Invalid(f"{name} compares with an ISO 8601 time; {raw[:50]!r} is not one") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _kind(raw: object) -> str:
    if raw is None:
        return "null"
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, int | float):
        return "a number"
    if isinstance(raw, str):
        return f"a string ({raw[:30]!r})"
    if isinstance(raw, list):
        return "a list"
    return "an object"
