"""A filter tree (``agentcore.domain.filters``) as one SQL condition on the memories table,
for SQLite (``json_type``/``json_extract``/``json_each``) and PostgreSQL (jsonb operators).

Every condition compiles to a value that is never NULL (a missing metadata value makes a
comparison false, not unknown), so ``NOT`` means "none of them" in both databases, as in
the domain's definition. Metadata paths are read key by key: a key never indexes a list
(SQLite's quoted labels and PostgreSQL's ``->`` with a text operand both refuse to).
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    FromClause,
    Text,
    and_,
    cast,
    exists,
    false,
    func,
    literal,
    literal_column,
    not_,
    or_,
    select,
    true,
    type_coerce,
)
from sqlalchemy.dialects.postgresql import JSONB

from agentcore.adapters.db.dialect import json_array_contains_all, json_array_contains_any
from agentcore.domain.filters import (
    OPTIONAL_FIELDS,
    SCOPE_ID_FIELDS,
    All,
    AnyOf,
    Condition,
    Field,
    Filter,
    Not,
    Op,
)

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_COLUMNS = {
    Field.LAYER: "layer",
    Field.STAGE_ID: "stage_id",
    Field.CRITICAL: "critical",
    Field.IMPORTANCE: "importance",
    Field.CREATED_AT: "created_at",
    Field.UPDATED_AT: "updated_at",
    **{field: field.value for field in SCOPE_ID_FIELDS},
}
_SQLITE_NUMBERS = ("integer", "real")
# PostgreSQL: an element of the list equals $v (jsonpath's == compares by type, as jsonb's =).
_ELEMENT_EQUALS: ColumnElement[Any] = literal_column("'strict $[*] ? (@ == $v)'::jsonpath")

Sql = ColumnElement[bool]


def filter_sql(dialect: str, table: FromClause, node: Filter) -> Sql:
    """``node`` as a condition on ``table`` (the memories table, or a selection of its rows
    with its columns) in ``dialect``."""
    if isinstance(node, All):
        return and_(true(), *(filter_sql(dialect, table, part) for part in node.parts))
    if isinstance(node, AnyOf):
        return or_(false(), *(filter_sql(dialect, table, part) for part in node.parts))
    if isinstance(node, Not):
        return not_(or_(false(), *(filter_sql(dialect, table, part) for part in node.parts)))
    if node.field is Field.TAGS:
        return _tags(dialect, table.c.tags, node)
    if node.field is Field.METADATA:
        value: _SqliteValue | _PgValue = _SqliteValue(table.c.metadata, node.path)
        if dialect == "postgresql":
            value = _PgValue(table.c.metadata, node.path)
        return _never_null(_metadata(value, node))
    return _column(dialect, table.c[_COLUMNS[node.field]], node)


def _never_null(condition: Sql) -> Sql:
    return func.coalesce(condition, false())


def _column(dialect: str, column: ColumnElement[Any], c: Condition) -> Sql:
    """A condition on one of the memory's own columns (scalars)."""
    nullable = c.field in OPTIONAL_FIELDS
    present: Sql = column.is_not(None) if nullable else true()
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    if c.op is Op.PRESENT:
        return present
    if c.op is Op.NE:
        return and_(present, column != c.value)
    if c.op is Op.NIN:
        return and_(present, column.not_in(values)) if values else present
    if c.op is Op.IN:
        condition: Sql = column.in_(values) if values else false()
    elif c.op is Op.CONTAINS:
        condition = _substring(dialect, column, str(c.value)) > 0
    elif c.op is Op.ICONTAINS:
        condition = _substring(dialect, _ascii_lower(dialect, column), _lower(c.value)) > 0
    else:
        condition = _compare(column, c.op, c.value)
    return _never_null(condition) if nullable else condition


def _tags(dialect: str, column: ColumnElement[Any], c: Condition) -> Sql:
    tags = [str(tag) for tag in c.value] if isinstance(c.value, tuple) else []
    if c.op is Op.PRESENT:
        length = func.jsonb_array_length if dialect == "postgresql" else func.json_array_length
        return length(column) > 0
    if c.op is Op.ALL:
        return json_array_contains_all(dialect, column, tags) if tags else true()
    held = json_array_contains_any(dialect, column, tags) if tags else false()
    return not_(held) if c.op is Op.NONE else held


def _metadata(value: _SqliteValue | _PgValue, c: Condition) -> Sql:
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    if c.op is Op.PRESENT:
        return value.present()
    if c.op is Op.EQ:
        return value.equals_any(values)
    if c.op is Op.NE:
        return and_(value.present(), not_(_never_null(value.equals_any(values))))
    if c.op is Op.IN:
        return value.equals_any(values) if values else false()
    if c.op is Op.NIN:
        if not values:
            return value.present()
        return and_(value.present(), not_(_never_null(value.equals_any(values))))
    if c.op is Op.CONTAINS:
        if not isinstance(c.value, str | int | float):  # the grammar gives a scalar
            raise ValueError(f"contains takes a scalar, not {c.value!r}")
        return value.contains(c.value)
    if c.op is Op.ICONTAINS:
        return value.contains_text(_lower(c.value), fold=True)
    return value.compare(c.op, c.value)


def _compare(left: ColumnElement[Any], op: Op, right: object) -> Sql:
    if op is Op.EQ:
        return left == right
    if op is Op.GT:
        return left > right
    if op is Op.GTE:
        return left >= right
    if op is Op.LT:
        return left < right
    if op is Op.LTE:
        return left <= right
    raise ValueError(f"not a comparison: {op}")


def metadata_text(dialect: str, table: FromClause, key: str) -> ColumnElement[str]:
    """The text of the top-level metadata value ``key`` (NULL when missing)."""
    if dialect == "postgresql":
        return type_coerce(table.c.metadata, JSONB).op("->>", return_type=Text)(_text(key))
    return func.json_extract(table.c.metadata, literal("$." + json.dumps(key), Text))


class _SqliteValue:
    """A metadata value in SQLite: ``json_type`` tells its JSON type (NULL when missing)."""

    def __init__(self, column: ColumnElement[Any], path: Sequence[str]) -> None:
        self._column = column
        # SQLite (3.40) matches a path's label to the key as written in the stored JSON, which
        # json.dumps escapes (non-ASCII, backslashes, control characters): escape it alike.
        labels = "".join(f'."{json.dumps(key)[1:-1]}"' for key in path)
        self._path = literal("$" + labels, Text)
        self._type = func.json_type(column, self._path)
        self._value = func.json_extract(column, self._path)

    def present(self) -> Sql:
        return func.coalesce(self._type, "null") != "null"

    def compare(self, op: Op, number: object) -> Sql:
        return and_(self._type.in_(_SQLITE_NUMBERS), _compare(self._value, op, number))

    def equals_any(self, values: Sequence[object]) -> Sql:
        return or_(false(), *_sqlite_equals(self._type, self._value, values))

    def contains(self, value: str | int | float | bool) -> Sql:
        element = func.json_each(self._column, self._path).table_valued("value", "type")
        held = exists(
            select(1)
            .select_from(element)
            .where(or_(false(), *_sqlite_equals(element.c.type, element.c.value, [value])))
        )
        in_list = and_(self._type == "array", held)
        if isinstance(value, str):
            return or_(self.contains_text(value, fold=False), in_list)
        return in_list

    def contains_text(self, needle: str, *, fold: bool) -> Sql:
        text = func.lower(self._value) if fold else self._value
        return and_(self._type == "text", func.instr(text, needle) > 0)


def _sqlite_equals(
    kind: ColumnElement[Any], value: ColumnElement[Any], values: Sequence[object]
) -> list[Sql]:
    """Equality by JSON type: text with text, numbers with numbers, booleans by type."""
    texts = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    booleans = sorted({"true" if v else "false" for v in values if isinstance(v, bool)})
    found: list[Sql] = []
    if texts:
        found.append(and_(kind == "text", value.in_(texts)))
    if numbers:
        found.append(and_(kind.in_(_SQLITE_NUMBERS), value.in_(numbers)))
    if booleans:
        found.append(kind.in_(booleans))
    return found


class _PgValue:
    """A metadata value in PostgreSQL: the jsonb at the path (key by key, ``->`` with text
    keys) and its text (``->>``); ``jsonb_typeof`` is NULL when it is missing."""

    def __init__(self, column: ColumnElement[Any], path: Sequence[str]) -> None:
        parent: ColumnElement[Any] = type_coerce(column, JSONB)
        for key in path[:-1]:
            parent = parent.op("->", return_type=JSONB)(_text(key))
        self._json = parent.op("->", return_type=JSONB)(_text(path[-1]))
        self._text = parent.op("->>", return_type=Text)(_text(path[-1]))
        self._type = func.jsonb_typeof(self._json)

    def present(self) -> Sql:
        return func.coalesce(self._type, "null") != "null"

    def compare(self, op: Op, number: object) -> Sql:
        # Between two jsonb numbers the order is numeric (the type test keeps others out).
        return and_(self._type == "number", _compare(self._json, op, _jsonb(number)))

    def equals_any(self, values: Sequence[object]) -> Sql:
        # jsonb equality is by type (a string never equals a number), numbers by value.
        return self._json.in_([_jsonb(v) for v in values])

    def contains(self, value: str | int | float | bool) -> Sql:
        in_list = and_(
            self._type == "array",
            func.jsonb_path_exists(self._json, _ELEMENT_EQUALS, _jsonb({"v": value}), True),
        )
        if isinstance(value, str):
            return or_(self.contains_text(value, fold=False), in_list)
        return in_list

    def contains_text(self, needle: str, *, fold: bool) -> Sql:
        text = _ascii_lower("postgresql", self._text) if fold else self._text
        return and_(self._type == "string", func.strpos(text, needle) > 0)


def _jsonb(value: object) -> ColumnElement[Any]:
    return cast(cast(literal(json.dumps(value)), Text), JSONB)


def _text(value: str) -> ColumnElement[Any]:
    return cast(literal(value), Text)


def _substring(dialect: str, haystack: ColumnElement[Any], needle: str) -> ColumnElement[Any]:
    if dialect == "postgresql":
        return func.strpos(haystack, needle)
    return func.instr(haystack, needle)


def _ascii_lower(dialect: str, text: ColumnElement[Any]) -> ColumnElement[Any]:
    """Lower case of ASCII letters only: SQLite's ``lower()``; ``translate`` on PostgreSQL
    (whose ``lower()`` also folds other letters)."""
    if dialect == "postgresql":
        return func.translate(text, string.ascii_uppercase, string.ascii_lowercase)
    return func.lower(text)


def _lower(value: object) -> str:
    return str(value).translate(_ASCII_LOWER)
