"""Filters compiled to SQL (``adapters.db.filter_sql``) select, on SQLite and on PostgreSQL,
exactly the memories the domain's definition (``tests.filter_oracle``) selects: random
filters over a fixed set of 40 memories with varied metadata, and chosen cases."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.tables import Base
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.domain.errors import InvalidParams
from agentcore.domain.filter_grammar import parse_filter
from agentcore.domain.models import Memory
from agentcore.services.ports import ListQuery
from tests.conftest import migrate
from tests.filter_oracle import satisfies
from tests.filter_strategies import RECORDS, filters, memory_of
from tests.fuzz.hostile import hostile_text, hostile_value

KEY = "user:u1"


@dataclass(repr=False)
class Rows:
    loop: asyncio.AbstractEventLoop
    uows: SqlUnitOfWorkFactory
    memories: list[Memory]

    def listed(self, raw: dict[str, Any]) -> set[str]:
        query = ListQuery(scope_keys=[KEY], where=parse_filter(raw), limit=100)

        async def page() -> tuple[list[Memory], int]:
            async with self.uows(read_only=True) as uow:
                return await uow.memories.page(query)

        found, total = self.loop.run_until_complete(page())
        assert total == len(found)
        return {m.id for m in found}

    def expected(self, raw: dict[str, Any]) -> set[str]:
        where = parse_filter(raw)
        return {m.id for m in self.memories if satisfies(m, where)}


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def rows(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Rows]:
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
    else:
        path: Path = tmp_path_factory.mktemp("filters") / "agentcore.db"
        url = f"sqlite+aiosqlite:///{path}"
        migrate(url)
    loop = asyncio.new_event_loop()
    engine = create_engine(url)
    uows = SqlUnitOfWorkFactory(engine)
    memories = [memory_of(record) for record in RECORDS]

    async def load() -> None:
        async with engine.begin() as conn:
            for table in reversed(Base.metadata.sorted_tables):
                await conn.execute(delete(table))
        async with uows() as uow:
            await uow.memories.add_many(memories)
            await uow.commit()

    loop.run_until_complete(load())
    yield Rows(loop, uows, memories)
    loop.run_until_complete(engine.dispose())
    loop.close()


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=filters())
def test_random_filters_select_what_they_mean(rows: Rows, raw: dict[str, Any]) -> None:
    assert rows.listed(raw) == rows.expected(raw)


CASES: list[tuple[dict[str, Any], int]] = [
    ({"n": 3}, 2),  # 3 is not "3", nor 3.5
    ({"n": "3"}, 2),
    ({"n": {"gte": 3, "lt": 4}}, 4),  # 3 and 3.5, never the string "3"
    ({"flag": True}, 5),  # not the integer 1
    ({"flag": 1}, 10),  # not true
    ({"labels": {"contains": 3}}, 7),  # an element of a list
    ({"labels": {"contains": "a"}}, 14),  # an element, or a substring of "a, b"
    ({"labels": "a"}, 0),  # a list is never equal to a scalar
    ({"profile.age": {"gt": 22}}, 8),
    ({"profile": "*"}, 23),  # an object or a string
    ({"note": "*"}, 0),  # null is not present
    ({"NOT": [{"note": "x"}]}, 40),  # a missing value satisfies NOT eq
    ({"missing": {"ne": "x"}}, 0),  # ne needs a value
    ({"city": {"icontains": "BER"}}, 15),  # Berlin, berlin, BERLIN wall
    ({"city": {"icontains": "SÃO"}}, 0),  # only ASCII letters are folded
    ({"tags": {"all": ["red", "blue"]}}, 10),
    ({"tags": {"none": ["red", "blue"]}}, 10),
    ({"tags": "*"}, 35),
    ({"stage_id": {"ne": "s1"}}, 12),  # no stage is not "not s1"
    ({"importance": {"gt": 0.5}, "critical": True}, 6),
    ({"created_at": {"gte": RECORDS[10]["created_at"], "lt": RECORDS[20]["created_at"]}}, 10),
    ({"updated_at": {"gt": RECORDS[39]["created_at"]}}, 1),
    ({"OR": [{"layer": "semantic"}, {"metadata.layer": "*"}]}, 13),
    ({"größe": {"gt": 0}}, 13),
    ({"session_id": "sess-1"}, 10),
    ({"run_id": {"ne": "sess-1"}}, 0),  # the others have no session
    (
        {"user_id": "u1", "NOT": [{"session_id": "*"}]},
        30,
    ),  # a key JSON escapes (SQLite matches it escaped)
]


@pytest.mark.parametrize(("raw", "count"), CASES)
def test_chosen_filters(rows: Rows, raw: dict[str, Any], count: int) -> None:
    listed = rows.listed(raw)
    assert listed == rows.expected(raw)
    assert len(listed) == count


def hostile_filters() -> st.SearchStrategy[Any]:
    """Filters of the grammar's shape with hostile keys and values anywhere."""
    keys = st.one_of(
        st.sampled_from(["a", "a.b", "tags", "layer", "created_at", "AND", "OR", "NOT"]),
        hostile_text(),
    )
    ops = st.one_of(
        st.sampled_from(["eq", "ne", "gt", "in", "nin", "contains", "icontains", "all"]),
        hostile_text(),
    )
    leaf = st.one_of(hostile_value(), st.dictionaries(ops, hostile_value(), max_size=3))
    return st.recursive(
        st.dictionaries(keys, leaf, max_size=3),
        lambda inner: st.dictionaries(
            keys, st.one_of(inner, st.lists(inner, max_size=3)), max_size=3
        ),
        max_leaves=8,
    )


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=hostile_filters())
def test_hostile_filters_are_refused_or_run(rows: Rows, raw: Any) -> None:
    try:
        parse_filter(raw)
    except InvalidParams:
        return
    assert rows.listed(raw) == rows.expected(raw)
