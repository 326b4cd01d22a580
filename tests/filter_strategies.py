"""A fixed set of memories with varied metadata, and Hypothesis filters over them in mem0's
grammar (``agentcore.domain.filter_grammar``): shared by the SQL and the end-to-end property
tests of filters."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from agentcore.domain.models import Layer, Memory, ScopeIds, ScopeLevel

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SESSION = "sess-1"  # the session of every fourth record (they belong to the user's scope)
LAYERS = ("episodic", "semantic", "procedural")
TAGS = ("red", "blue", "green")
_CITIES = ("Berlin", "berlin", "Munich", "Paris", "São Paulo", "BERLIN wall")
_NAMES = ("Ada", "ada lovelace", "Grace", "Linus")


def record_fields(i: int) -> dict[str, Any]:
    """The fields of memory ``i`` (0-39): what ``memory.import`` takes, and what a test builds
    a ``Memory`` from. Values of one key vary in type (1 vs True vs "1", 3 vs 3.5 vs "3"),
    some keys are missing, null, lists or nested objects."""
    metadata: dict[str, Any] = {"i": i}
    if i % 5:
        metadata["city"] = _CITIES[i % len(_CITIES)]
    metadata["n"] = [i % 7, i % 7 + 0.5, str(i % 7)][i % 3]
    if i % 4 == 0:
        metadata["flag"] = i % 8 == 0
    elif i % 4 == 1:
        metadata["flag"] = 1
    if i % 6 == 0:
        metadata["labels"] = ["a", "b"]
    elif i % 6 == 1:
        metadata["labels"] = ["b", 3]
    elif i % 6 == 2:
        metadata["labels"] = "a, b"
    if i % 2 == 0:
        metadata["profile"] = {"age": 20 + i % 5, "name": _NAMES[i % 4]}
    elif i % 7 == 1:
        metadata["profile"] = "flat profile"
    if i % 9 == 0:
        metadata["note"] = None
    if i % 2:
        metadata["größe"] = i % 3  # a key that JSON escapes
    return {
        "original_id": f"rec-{i:02d}",
        **({"session_id": SESSION} if i % 4 == 0 else {}),
        "content": f"Note {i}: the {TAGS[i % 3]} box on shelf {i % 4} holds item {i}.",
        "layer": LAYERS[i % 3],
        "tags": [tag for bit, tag in enumerate(TAGS) if i >> bit & 1],
        "metadata": metadata,
        "stage_id": [None, "s1", "s2"][(i // 3) % 3],
        "critical": i % 4 == 3,
        "importance": round(0.05 + (i % 10) * 0.1, 2),
        "created_at": (T0 + timedelta(hours=i)).isoformat(),
    }


RECORDS = [record_fields(i) for i in range(40)]


def memory_of(record: dict[str, Any], user_id: str = "u1") -> Memory:
    """The memory a record describes, in ``user_id``'s scope (updated 30 minutes after its
    creation); its id is derived from the record's ``original_id``."""
    created = datetime.fromisoformat(record["created_at"])
    return Memory(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, record["original_id"])),
        content=record["content"],
        layer=Layer(record["layer"]),
        scope_level=ScopeLevel.USER,
        scope=ScopeIds(user_id=user_id, session_id=record.get("session_id")),
        created_at=created,
        updated_at=created + timedelta(minutes=30),
        metadata=dict(record["metadata"]),
        tags=list(record["tags"]),
        stage_id=record["stage_id"],
        critical=record["critical"],
        importance=record["importance"],
    )


def _at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


_STRINGS = ("Berlin", "berlin", "ber", "BER", "Paulo", "SÃO", "x", "a", "a, b", "3")
_NUMBERS = (0, 3, 3.5, 6, 20, 22, 24)
_TIMES = (_at(-1), _at(0), _at(10), _at(10.5), _at(39), _at(60))
# field -> (operators, values); "*" is written as a plain value.
_FIELDS: dict[str, tuple[tuple[str, ...], tuple[Any, ...]]] = {
    "city": (("eq", "ne", "in", "nin", "contains", "icontains", "*"), _STRINGS),
    "n": (("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "*"), (*_NUMBERS, "3", True)),
    "flag": (("eq", "ne", "in", "nin", "*"), (True, False, 1)),
    "labels": (("eq", "contains", "icontains", "in", "*"), ("a", "b", 3, "3", "a, b")),
    "profile.age": (("eq", "ne", "gt", "gte", "lt", "lte", "in", "*"), _NUMBERS),
    "profile.name": (("eq", "contains", "icontains", "*"), ("Ada", "ada", "LOVE", "Grace")),
    "profile": (("contains", "icontains", "*"), ("flat", "FLAT", "age")),
    "note": (("eq", "ne", "*"), ("x",)),
    "größe": (("eq", "ne", "gt", "lt", "*"), (0, 1, 2)),
    "missing": (("eq", "ne", "nin", "*"), ("x", 1)),
    "layer": (("eq", "ne", "in", "nin", "*"), LAYERS),
    "tags": (("eq", "ne", "in", "nin", "contains", "all", "any", "none", "*"), TAGS),
    "stage_id": (("eq", "ne", "in", "nin", "contains", "icontains", "*"), ("s1", "s2", "S")),
    "critical": (("eq", "ne", "in", "*"), (True, False)),
    "session_id": (("eq", "ne", "in", "nin", "*"), (SESSION, "sess-2")),
    "run_id": (("eq", "*"), (SESSION,)),  # mem0's name for a session
    "importance": (("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"), (0.05, 0.25, 0.5, 0.95)),
    "created_at": (("eq", "ne", "gt", "gte", "lt", "lte", "in"), _TIMES),
}
_RANGES = ("gt", "gte", "lt", "lte")
_LISTS = ("in", "nin", "all", "any", "none")


@st.composite
def conditions(draw: st.DrawFn) -> dict[str, Any]:
    """One condition: ``{field: value}`` or ``{field: {op: value}}``."""
    field = draw(st.sampled_from(sorted(_FIELDS)))
    ops, values = _FIELDS[field]
    op = draw(st.sampled_from(ops))
    if op == "*":
        return {field: "*"}
    pool = values
    if op in _RANGES and field not in ("created_at",):
        pool = tuple(v for v in values if isinstance(v, int | float) and not isinstance(v, bool))
    if op == "icontains":
        pool = tuple(v for v in values if isinstance(v, str))
    if op in _LISTS:
        value: Any = draw(st.lists(st.sampled_from(pool), max_size=3, unique=True))
    else:
        value = draw(st.sampled_from(pool))
    if op == "eq" and draw(st.booleans()):
        return {field: value}  # the plain form
    return {field: {op: value}}


def filters(depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """Filters of up to ``depth`` levels: conditions, several keys in one object, and
    AND / OR / NOT lists."""
    leaves = conditions()
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.builds(
                lambda key, parts: {key: parts},
                st.sampled_from(("AND", "OR", "NOT")),
                st.lists(inner, min_size=1, max_size=3),
            ),
            st.builds(_merged, inner, leaves),
        ),
        max_leaves=6,
    ).filter(lambda f: _depth(f) <= depth)


def _merged(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    """Two filters as one object (keys ANDed); the left one wins a shared key."""
    return {**right, **left}


def _depth(node: Any) -> int:
    if isinstance(node, dict):
        return 1 + max((_depth(v) for v in node.values()), default=0)
    if isinstance(node, list):
        return max((_depth(v) for v in node), default=0)
    return 0
