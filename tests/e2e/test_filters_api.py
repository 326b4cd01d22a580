"""Filters with operators, time ranges and ``as_of`` over JSON-RPC, on both backends (embedded:
SQLite + qdrant-edge; production: PostgreSQL + Redis): memory.list, memory.search and
memory.export select what the domain's definition (``tests.filter_oracle``) selects from a
fixed set of 40 imported memories, and a bad filter is refused with its place, changing
nothing."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from agentcore.domain.filter_grammar import parse_filter
from agentcore.domain.models import Memory
from tests.e2e.test_rpc_api import result, rpc
from tests.filter_oracle import satisfies
from tests.filter_strategies import RECORDS, SESSION, T0, memory_of

USER = "e2e-filters"
SCOPE = {"user_id": USER, "session_id": SESSION}  # every fourth record is of the session


class Loaded:
    """The 40 records as imported: their ids by number, and the memories the oracle reads."""

    def __init__(self, client: TestClient, imported_before: str) -> None:
        self.client = client
        self.imported_before = imported_before
        listed = result(client, "memory.list", limit=100, **SCOPE)["memories"]
        self.by_number = {m["metadata"]["i"]: m["id"] for m in listed}
        self.memories: list[tuple[str, Memory]] = [
            (self.by_number[i], memory_of(record, USER)) for i, record in enumerate(RECORDS)
        ]

    def expected(self, raw: dict[str, Any]) -> set[str]:
        tree = parse_filter(raw)
        return {memory_id for memory_id, memory in self.memories if satisfies(memory, tree)}

    def listed(self, raw: dict[str, Any], **params: Any) -> set[str]:
        page = result(self.client, "memory.list", filter=raw, limit=100, **SCOPE, **params)
        ids = {m["id"] for m in page["memories"]}
        assert page["total_count"] == len(ids)
        return ids

    def searched(self, raw: dict[str, Any] | None, limit: int = 10, **params: Any) -> list[str]:
        found = result(
            self.client,
            "memory.search",
            query="Which box on the shelf holds the item?",
            filter=raw,
            limit=limit,
            **SCOPE,
            **params,
        )
        return [hit["memory"]["id"] for hit in found["results"]]


@pytest.fixture(scope="module")
def loaded(backends: TestClient) -> Loaded:
    before = datetime.now(UTC).isoformat()
    records = [{**record, "user_id": USER} for record in RECORDS]
    report = result(backends, "memory.import", records=records, **SCOPE)
    assert len(report["imported"]) == len(RECORDS)
    return Loaded(backends, before)


OPERATORS: list[dict[str, Any]] = [
    {"city": "Berlin"},
    {"city": {"eq": "Berlin"}},
    {"city": {"ne": "Berlin"}},
    {"city": {"in": ["Paris", "Munich"]}},
    {"city": {"nin": ["Paris", "Munich"]}},
    {"city": {"contains": "erl"}},
    {"city": {"icontains": "BERL"}},
    {"city": "*"},
    {"n": {"gt": 3}},
    {"n": {"gte": 3}},
    {"n": {"lt": 3}},
    {"n": {"lte": 3}},
    {"n": 3},  # plain values keep their type: not "3", not 3.5
    {"n": "3"},
    {"flag": True},  # not the integer 1
    {"flag": 1},
    {"labels": {"contains": "b"}},  # an element of a list (or a substring of a string)
    {"labels": {"contains": 3}},
    {"profile.age": {"gte": 22, "lt": 24}},  # nested by dots
    {"profile.name": {"icontains": "ADA"}},
    {"note": "*"},  # null is not present
    {"missing": {"ne": "x"}},
]
COMBINATIONS: list[dict[str, Any]] = [
    {"AND": [{"city": {"icontains": "berlin"}}, {"n": {"lt": 4}}]},
    {"OR": [{"flag": True}, {"profile.age": 24}]},
    {"NOT": [{"city": "*"}, {"layer": "procedural"}]},
    {"OR": [{"AND": [{"tags": "red"}, {"NOT": [{"critical": True}]}]}, {"stage_id": "s2"}]},
    {"city": {"icontains": "ber"}, "NOT": [{"tags": {"any": ["blue"]}}]},
]
OWN_FIELDS: list[dict[str, Any]] = [
    {"layer": "semantic"},
    {"layer": {"in": ["semantic", "procedural"]}},
    {"tags": {"all": ["red", "blue"]}},
    {"tags": {"any": ["green"]}},
    {"tags": {"none": ["red", "green"]}},
    {"tags": "*"},
    {"stage_id": "s1"},
    {"stage_id": {"ne": "s1"}},
    {"stage_id": "*"},
    {"critical": True},
    {"critical": {"ne": True}},
    {"importance": {"gte": 0.55}},
    {"importance": {"lt": 0.2}},
    {"importance": {"gt": 0.3, "lte": 0.65}, "critical": False},
    {"created_at": {"gte": RECORDS[10]["created_at"], "lt": RECORDS[20]["created_at"]}},
    {"created_at": {"lte": (T0 + timedelta(hours=4, minutes=30)).isoformat()}},
    {"metadata.i": {"lt": 5}},
    {"session_id": SESSION},
    {"run_id": {"ne": SESSION}},  # mem0's name; the others have no session
    {"user_id": USER, "NOT": [{"session_id": "*"}]},
]


@pytest.mark.parametrize("raw", OPERATORS + COMBINATIONS + OWN_FIELDS)
def test_list_and_search_select_what_the_filter_means(loaded: Loaded, raw: dict[str, Any]) -> None:
    expected = loaded.expected(raw)
    assert loaded.listed(raw) == expected
    found = loaded.searched(raw)
    assert set(found) <= expected
    assert len(found) == min(10, len(expected))  # no match lost among the candidates


def test_the_chosen_cases_are_not_trivial(loaded: Loaded) -> None:
    sizes = [len(loaded.expected(raw)) for raw in OPERATORS + COMBINATIONS + OWN_FIELDS]
    assert sum(0 < size < 40 for size in sizes) >= len(sizes) - 3


def test_plain_key_value_keeps_its_meaning(loaded: Loaded) -> None:
    three = {loaded.by_number[i] for i in (3, 24)}
    assert loaded.listed({"n": 3}) == three
    assert loaded.listed({"n": "3"}) == {loaded.by_number[i] for i in (17, 38)}
    assert loaded.listed({"flag": True}) == {loaded.by_number[i] for i in range(0, 40, 8)}
    assert loaded.listed({"n": 3, "city": "berlin"}) == set()
    assert set(loaded.searched({"n": 3}, limit=5)) == three


def test_updated_at_compares_as_a_time(loaded: Loaded) -> None:
    every = set(loaded.by_number.values())
    assert loaded.listed({"updated_at": {"gte": loaded.imported_before}}) == every
    assert loaded.listed({"updated_at": {"lt": loaded.imported_before}}) == set()


def test_since_and_until(loaded: Loaded) -> None:
    since, until = RECORDS[10]["created_at"], RECORDS[14]["created_at"]
    window = {loaded.by_number[i] for i in range(10, 14)}  # since inclusive, until exclusive
    assert set(loaded.searched(None, since=since, until=until)) == window
    assert loaded.listed({}, since=since, until=until) == window
    red = set(loaded.searched({"tags": "red"}, since=since, until=until))
    assert red == {loaded.by_number[i] for i in (11, 13)}
    assert loaded.searched(None, since=until, until=since) == []


def test_export_takes_the_filter(loaded: Loaded) -> None:
    raw = {"OR": [{"layer": "procedural"}, {"profile.age": 20}]}
    page = result(loaded.client, "memory.export", filter=raw, limit=500, **SCOPE)
    assert {r["original_id"] for r in page["records"]} == loaded.expected(raw)
    assert page["total_count"] == len(page["records"])


BAD_FILTERS: list[tuple[dict[str, Any], str]] = [
    ({"OR": [{"city": "Berlin"}, {"importance": {"gte": "high"}}]}, "filter.OR[1].importance.gte"),
    ({"importance": {"gt": "high"}}, "filter.importance.gt"),
    ({"city": {"like": "B%"}}, "filter.city.like"),
    ({"tags": {"gt": 3}}, "filter.tags.gt"),
    ({"created_at": {"gte": "last week"}}, "filter.created_at.gte"),
    ({"n": {"in": "3"}}, "filter.n.in"),
    ({"NOT": []}, "filter.NOT"),
    ({"AND": [{"AND": [{"AND": [{"AND": [{"AND": [{"n": 1}]}]}]}]}]}, "filter.AND[0].AND[0]"),
]


@pytest.mark.parametrize(("raw", "place"), BAD_FILTERS)
@pytest.mark.parametrize("method", ["memory.search", "memory.list", "memory.export"])
def test_a_bad_filter_is_refused_with_its_place(
    loaded: Loaded, method: str, raw: dict[str, Any], place: str
) -> None:
    before = result(loaded.client, "memory.list", limit=100, **SCOPE)
    params: dict[str, Any] = {"query": "box"} if method == "memory.search" else {}
    error = rpc(loaded.client, method, filter=raw, **params, **SCOPE)["error"]
    assert (error["code"], error["data"]["code"]) == (-32602, "INVALID_PARAMS")
    assert error["data"]["errors"][0]["field"].startswith(place)
    assert error["data"]["retryable"] is False
    after = result(loaded.client, "memory.list", limit=100, **SCOPE)
    unchanged = ("id", "content", "metadata", "tags", "updated_at")
    assert [{k: m[k] for k in unchanged} for m in after["memories"]] == [
        {k: m[k] for k in unchanged} for m in before["memories"]
    ]


def test_as_of_respects_validity(backends: TestClient) -> None:
    scope = {"user_id": "e2e-filters-as-of"}
    berlin = result(backends, "memory.add", content="I live in Berlin.", **scope)["memory_id"]
    result(backends, "memory.add", content="I love hiking on weekends.", **scope)
    time.sleep(0.01)
    munich = result(backends, "memory.add", content="I moved to Munich last month.", **scope)
    moved_at = munich["memory"]["created_at"]
    old = result(backends, "memory.get", memory_id=berlin, **scope)
    assert old["valid_to"] == moved_at

    def search(as_of: str, query: str = "Where does the user live?") -> list[dict[str, Any]]:
        found = result(backends, "memory.search", query=query, as_of=as_of, **scope)
        hits: list[dict[str, Any]] = found["results"]
        return hits

    # Superseded at as_of (valid_to == as_of): not current then; its successor ranks first.
    at_move = search(moved_at)
    ids = [h["memory"]["id"] for h in at_move]
    assert ids.index(munich["memory_id"]) < ids.index(berlin)
    assert (
        next(h for h in at_move if h["memory"]["id"] == berlin)["superseded_by"]
        == (munich["memory_id"])
    )
    # Just before: Berlin is current, Munich does not exist yet.
    before = (datetime.fromisoformat(moved_at) - timedelta(microseconds=1)).isoformat()
    past = search(before, "Where does the user live now?")
    assert munich["memory_id"] not in [h["memory"]["id"] for h in past]
    assert (past[0]["memory"]["id"], past[0]["current_for"]) == (berlin, "user|home")
    assert past[0]["superseded_by"] is None
    # Created since the move: only the new value.
    later = result(
        backends, "memory.search", query="Where does the user live?", since=moved_at, **scope
    )["results"]
    assert [h["memory"]["id"] for h in later] == [munich["memory_id"]]
