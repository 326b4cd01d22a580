"""Filters on memories: a typed tree of conditions joined by ALL / ANY / NOT.

Callers write them in mem0's grammar (``agentcore.domain.filter_grammar`` validates that into
this tree); the stores evaluate the tree themselves: SQL on the memories table
(``agentcore.adapters.db.filter_sql``) and payload filters in the vector engines
(``agentcore.adapters.vectors.payload_filter``). Nothing evaluates it in Python on the
service's path.

What a condition means (the same in every store):

- A metadata condition reads the value at ``path`` (object keys, outermost first). A value is
  *present* when every key exists and it is not JSON null.
- ``EQ``: present and equal, type-sensitive (``"1"`` ≠ ``1``, ``true`` ≠ ``1``; ``1`` = ``1.0``).
  ``NE``: present and not equal. ``IN`` / ``NIN``: present and equal to one / to none of the
  values (``IN []`` matches nothing).
- ``GT``/``GTE``/``LT``/``LTE``: present, a number (metadata, importance) or a time
  (created_at, updated_at) on the right side of the comparison; a string or a boolean never
  compares with a number.
- ``CONTAINS``: a string holding the value as a substring (case-sensitive), or a list holding
  an element equal to the value. ``ICONTAINS``: a string holding it with ASCII letters' case
  ignored (what SQLite's ``lower()`` folds; both stores fold the same letters).
- ``PRESENT``: the value is present (for tags: at least one tag; a stage or a scope id: the
  memory has one).
- Tags: ``ANY`` / ``ALL`` / ``NONE`` of the given tags are held.
- ``Not(parts)``: none of the parts holds (a missing value satisfies ``Not(EQ ...)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Op(StrEnum):
    EQ = "eq"
    NE = "ne"
    GT = "gt"
    GTE = "gte"
    LT = "lt"
    LTE = "lte"
    IN = "in"
    NIN = "nin"
    CONTAINS = "contains"
    ICONTAINS = "icontains"
    PRESENT = "*"
    ALL = "all"  # tags only
    ANY = "any"  # tags only
    NONE = "none"  # tags only


RANGES = frozenset({Op.GT, Op.GTE, Op.LT, Op.LTE})


class Field(StrEnum):
    """What a condition reads: a metadata value, or one of the memory's own fields."""

    METADATA = "metadata"
    LAYER = "layer"
    TAGS = "tags"
    STAGE_ID = "stage_id"
    CRITICAL = "critical"
    IMPORTANCE = "importance"
    CREATED_AT = "created_at"
    UPDATED_AT = "updated_at"
    TASK_ID = "task_id"
    AGENT_ID = "agent_id"
    USER_ID = "user_id"
    SESSION_ID = "session_id"
    PROJECT_ID = "project_id"
    TEAM_ID = "team_id"
    ORG_ID = "org_id"
    COMPANY_ID = "company_id"


SCOPE_ID_FIELDS = frozenset(
    {
        Field.TASK_ID,
        Field.AGENT_ID,
        Field.USER_ID,
        Field.SESSION_ID,
        Field.PROJECT_ID,
        Field.TEAM_ID,
        Field.ORG_ID,
        Field.COMPANY_ID,
    }
)
OPTIONAL_FIELDS = SCOPE_ID_FIELDS | {Field.STAGE_ID}  # a memory may have none


Scalar = str | int | float | bool
Operand = Scalar | datetime | tuple[Scalar, ...] | tuple[datetime, ...] | None


@dataclass(frozen=True, slots=True)
class Condition:
    """One test of one field. ``value``: a scalar (or a UTC datetime for created_at and
    updated_at), a tuple for ``IN``/``NIN``/``ANY``/``ALL``/``NONE``, None for ``PRESENT``.
    ``path``: the metadata keys, outermost first (metadata conditions only)."""

    field: Field
    op: Op
    value: Operand = None
    path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class All:
    parts: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    parts: tuple[Filter, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """None of ``parts`` holds."""

    parts: tuple[Filter, ...]


Filter = Condition | All | AnyOf | Not


def all_of(*parts: Filter | None) -> Filter | None:
    """The parts that are given, joined by ALL (nested ALLs flattened); None when none is."""
    kept: list[Filter] = []
    for part in parts:
        if isinstance(part, All):
            kept.extend(part.parts)
        elif part is not None:
            kept.append(part)
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else All(tuple(kept))


def metadata_equals(values: Mapping[str, Scalar] | None) -> Filter | None:
    """Each top-level metadata key holding exactly that value (the keys are not split)."""
    if not values:
        return None
    return all_of(
        *(Condition(Field.METADATA, Op.EQ, value, (key,)) for key, value in values.items())
    )


def tags_filter(tags: Sequence[str] | None, match: str = "any") -> Filter | None:
    """Memories holding any (``match="any"``) or all of ``tags``; None for no tags."""
    if not tags:
        return None
    return Condition(Field.TAGS, Op.ALL if match == "all" else Op.ANY, tuple(tags))


def created_between(
    since: datetime | None = None, until: datetime | None = None, *, through: datetime | None = None
) -> Filter | None:
    """Created at or after ``since``, before ``until``, at or before ``through``."""
    return all_of(
        None if since is None else Condition(Field.CREATED_AT, Op.GTE, since),
        None if until is None else Condition(Field.CREATED_AT, Op.LT, until),
        None if through is None else Condition(Field.CREATED_AT, Op.LTE, through),
    )


def conditions(node: Filter) -> Iterator[Condition]:
    """Every condition of the tree, depth first."""
    if isinstance(node, Condition):
        yield node
        return
    for part in node.parts:
        yield from conditions(part)
