"""Hypothesis strategies for hostile JSON-RPC input, driven by the OpenRPC document: params
that fit each method's schema (so calls get past validation and reach the services), and
mutations of them: wrong types, boundary and oversized values, hostile unicode, unknown and
missing params, broken envelopes."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Ids from small pools, so that calls meet data that earlier calls stored.
SCOPE_IDS = {
    "user_id": ["fz-u1", "fz-u2"],
    "agent_id": ["fz-a1"],
    "session_id": ["fz-s1", "fz-s2"],
    "task_id": ["fz-t1", "fz-t2"],
    "project_id": ["fz-p1"],
    "team_id": ["fz-team"],
    "org_id": ["fz-org"],
    "company_id": ["fz-co"],
}
WORDS = ["plan", "the", "tests", "deploy", "key", "rotates", "Monday", "Alice", "prefers"]
WORDS += ["tea", "must", "never", "exceed", "budget", "tomorrow", "failed", "because"]
HOSTILE_PIECES = [
    "\ud800",  # a lone surrogate: valid JSON (as \ud800), not encodable as UTF-8
    "\udfff\ud800",
    "\x00",
    "\u202e",  # right-to-left override
    "\ufeff",
    "\u200b\u200d",
    "\U0010ffff",
    "e\u0301" * 50,  # combining marks
    "\U0001f642" * 20,
    "'; DROP TABLE memories;--",
    '"},{"jsonrpc":"2.0"',
    "%s%n%x",
    "{{7*7}}${7*7}",
    "../../../etc/passwd",
    "\r\n\t",
    "\\u0000",
    "NaN",
    "*",
    "",
    " ",
]
DATES = ["2026-01-01T00:00:00Z", "2026-13-45T99:99:99", "0001-01-01T00:00:00", "yesterday"]


def hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(HOSTILE_PIECES),
        st.lists(st.sampled_from(HOSTILE_PIECES + WORDS), min_size=1, max_size=8).map("".join),
        st.text(st.characters(codec=None, exclude_categories=()), max_size=40),
        st.sampled_from([1, 2, 63, 64, 65, 255, 256, 257, 2000, 4001, 100_000]).map(
            lambda n: "x" * n
        ),
    )


def hostile_value() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([1e308, -1e308, 5e-324, -0.0]),
        hostile_text(),
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=5),
            st.dictionaries(hostile_text(), children, max_size=5),
        ),
        max_leaves=12,
    )


class Schemas:
    """Plausible values for the JSON schemas of one OpenRPC document."""

    def __init__(self, document: dict[str, Any], memory_ids: list[str]) -> None:
        self._components: dict[str, Any] = document["components"]["schemas"]
        self._memory_ids = memory_ids

    def value(self, name: str, schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
        if "$ref" in schema:
            if depth > 3:
                return st.just({})
            return self.value(name, self._components[schema["$ref"].rsplit("/", 1)[1]], depth + 1)
        if "anyOf" in schema:
            return st.one_of([self.value(name, branch, depth) for branch in schema["anyOf"]])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if "const" in schema:
            return st.just(schema["const"])
        kind = schema.get("type")
        if kind == "string":
            return self._string(name, schema)
        if kind == "integer":
            low, high = schema.get("minimum", 0), schema.get("maximum", 50)
            return st.integers(min_value=low, max_value=min(high, low + 50))
        if kind == "number":
            low, high = schema.get("minimum", 0.0), schema.get("maximum", 1.0)
            return st.floats(min_value=low, max_value=high, allow_nan=False)
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        if kind == "array":
            items = schema.get("items", {"type": "string"})
            low = schema.get("minItems", 0)
            high = min(schema.get("maxItems", 3), low + 3)
            return st.lists(self.value(name, items, depth + 1), min_size=low, max_size=high)
        if kind == "object" or "properties" in schema:
            return self.params(schema, depth + 1)
        return hostile_value()  # JsonValue and other open schemas

    def params(self, schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
        properties: dict[str, Any] = schema.get("properties", {})
        if not properties:
            return st.dictionaries(st.sampled_from(WORDS), st.sampled_from(WORDS), max_size=3)
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {
                name: self.value(name, sub, depth)
                for name, sub in properties.items()
                if name in required
            },
            optional={
                name: self.value(name, sub, depth)
                for name, sub in properties.items()
                if name not in required
            },
        )

    def _string(self, name: str, schema: dict[str, Any]) -> st.SearchStrategy[str]:
        if name in SCOPE_IDS:
            return st.sampled_from(SCOPE_IDS[name])
        if name in ("memory_id", "source_id"):  # one draw whatever the pool holds
            pool = self._memory_ids
            return st.integers(0, 49).map(lambda i: pool[-1 - i % len(pool)] if pool else "m-0")
        if schema.get("format") == "date-time":
            return st.sampled_from(DATES[:1])
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: len(s) <= schema.get("maxLength", 64)
            )
        low = max(1, schema.get("minLength", 1))
        return st.lists(st.sampled_from(WORDS), min_size=low, max_size=low + 6).map(" ".join)
