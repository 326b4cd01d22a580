"""What a vector store's payload decides of a filter: the contract ``VectorStore.search``
keeps for ``VectorFilter.where``.

A point's payload holds what ``VectorPoint`` carries of its memory: the layer, stage, scope
ids, tags, criticality, creation time and the top-level scalar metadata values (not
importance, ``updated_at`` or nested metadata). A search never leaves out a point whose
memory satisfies ``where``; when every condition of ``where`` is ``decided`` by the payload
it returns exactly those points (as of the payload last written), otherwise possibly more,
and the memory rows decide (``services.candidates``).
"""

from __future__ import annotations

import re

from agentcore.domain.filters import (
    OPTIONAL_FIELDS,
    SCOPE_ID_FIELDS,
    Condition,
    Field,
    Filter,
    Op,
)

PAYLOAD_FIELDS = SCOPE_ID_FIELDS | {
    Field.LAYER,
    Field.STAGE_ID,
    Field.TAGS,
    Field.CRITICAL,
    Field.CREATED_AT,
}
# Metadata keys a payload path names as they are (no quoting in any engine's key syntax).
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_]+$")


def payload_key(c: Condition) -> str | None:
    """The payload key ``c`` reads; None when the payload does not hold its value."""
    if c.field is Field.METADATA:
        plain = len(c.path) == 1 and _PLAIN_KEY.match(c.path[0]) is not None
        return f"metadata.{c.path[0]}" if plain else None
    return c.field.value if c.field in PAYLOAD_FIELDS else None


def decided(node: Filter) -> bool:
    """Whether the payload decides every condition of ``node`` as the database does."""
    if not isinstance(node, Condition):
        return all(decided(part) for part in node.parts)
    if payload_key(node) is None or node.value == ():
        return False  # not in the payload; an empty list is left to the database
    if node.field is Field.METADATA:
        # A string matches a keyword exactly in every engine (numbers and booleans may meet
        # Python's True == 1 in qdrant-client's local mode: only a superset there).
        values = node.value if isinstance(node.value, tuple) else (node.value,)
        return node.op in (Op.EQ, Op.IN) and all(isinstance(v, str) for v in values)
    if node.op is Op.PRESENT:
        return node.field in OPTIONAL_FIELDS or node.field is Field.TAGS
    return node.op not in (Op.CONTAINS, Op.ICONTAINS)
