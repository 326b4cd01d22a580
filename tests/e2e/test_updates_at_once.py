"""Knowledge updates hold the moment a write answers: every case of the project's update sets
(benchmarks/data/knowledge_updates*.json: its distractors, its first statement and its second,
each write answered before the next), asked at once, over JSON-RPC on both backends; and the
same cases 200 at a time against a real server whose indexer is behind.

What must hold (DESIGN §3, the consistency promise): a superseded statement never ranks above
the one that replaced it, and what a write's reading decided is decided when it answers
(nothing is recorded later, so a read right after the reply and one a minute later agree).
Whether a case is recorded as an update at all is the method's quality, measured by
benchmarks/knowledge_updates.py, not asserted here."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result
from tests.server_process import Server

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
IN_FLIGHT = 200


def _cases() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(DATA.glob("knowledge_updates*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            first = case.get("old", case.get("first"))
            second = case.get("new", case.get("second"))
            name = f"{path.stem}/{case['id']}"
            cases.append({**case, "first": first, "second": second, "name": name})
    return cases


CASES = _cases()


def test_the_sets_are_all_here() -> None:
    assert len(CASES) >= 443  # sets a (240) and b (203), and any set added since
    assert all(c["first"] and c["second"] and c["question"] for c in CASES)


def _stale_above_current(results: list[dict[str, Any]]) -> list[str]:
    """Results ranked above the result that replaced them (recorded supersession)."""
    rank = {r["memory"]["id"]: n for n, r in enumerate(results)}
    return [
        r["memory"]["content"]
        for n, r in enumerate(results)
        if (successor := r["memory"]["superseded_by"]) in rank and rank[successor] > n
    ]


def _scope(case: dict[str, Any], run: str) -> dict[str, str]:
    return {"user_id": f"{run}-{case['name']}"}


def _settle(backlog: Callable[[], int], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while backlog() > 0:
        assert time.monotonic() < deadline, "the indexer did not catch up"
        time.sleep(0.1)


def test_every_case_ranks_its_update_at_once(backends: TestClient) -> None:
    decided: dict[str, tuple[dict[str, Any], str | None]] = {}  # first's id -> case, successor
    for case in CASES:
        scope = _scope(case, "at-once")
        if case["distractors"]:
            items = [{"content": text, **scope} for text in case["distractors"]]
            result(backends, "memory.add_batch", items=items)
        first = result(backends, "memory.add", content=case["first"], **scope)["memory_id"]
        second = result(backends, "memory.add", content=case["second"], **scope)["memory_id"]
        found = result(backends, "memory.search", query=case["question"], limit=10, **scope)
        assert _stale_above_current(found["results"]) == [], case["name"]
        successor = result(backends, "memory.get", memory_id=first, **scope)["superseded_by"]
        assert successor in (None, second), case["name"]
        decided[first] = (case, successor)
    _settle(lambda: int(result(backends, "memory.health")["indexing_backlog"]))
    changed = [
        case["name"]
        for first, (case, successor) in decided.items()
        if result(backends, "memory.get", memory_id=first, **_scope(case, "at-once"))[
            "superseded_by"
        ]
        != successor
    ]
    assert changed == [], "recorded after the write had answered"
    assert any(successor for _, successor in decided.values())  # the sets hold updates


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("data"))
    running.start()
    yield running
    running.stop()


class _Rpc:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def __call__(self, method: str, **params: Any) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = (await self.http.post("/rpc", json=body)).json()
        assert "error" not in reply, (method, reply)
        return reply["result"]


async def _run_case(rpc: _Rpc, case: dict[str, Any], run: str) -> tuple[str, bool, list[str]]:
    """(case name, whether its first statement was superseded when the second answered, the
    results ranked above what replaced them)."""
    scope = _scope(case, run)
    if case["distractors"]:
        items = [{"content": text, **scope} for text in case["distractors"]]
        await rpc("memory.add_batch", items=items)
    first = (await rpc("memory.add", content=case["first"], **scope))["memory_id"]
    await rpc("memory.add", content=case["second"], **scope)
    found = await rpc("memory.search", query=case["question"], limit=10, **scope)
    stored = await rpc("memory.get", memory_id=first, **scope)
    return case["name"], stored["superseded_by"] is not None, _stale_above_current(found["results"])


async def test_updates_hold_under_200_in_flight_with_the_indexer_behind(server: Server) -> None:
    # A connection idle in the pool is dropped well before the server's keep-alive timeout
    # (5 s) could close it under a request sent on it.
    limits = httpx.Limits(max_connections=IN_FLIGHT + 2, keepalive_expiry=1.0)
    async with httpx.AsyncClient(base_url=server.base, timeout=120, limits=limits) as http:
        rpc = _Rpc(http)
        alone = [await _run_case(rpc, case, "alone") for case in CASES]

        queue = list(CASES)
        together: list[tuple[str, bool, list[str]]] = []
        backlog_seen = 0

        async def caller() -> None:
            while queue:
                together.append(await _run_case(rpc, queue.pop(), "together"))

        async def watch() -> None:
            nonlocal backlog_seen
            while queue:
                health = await rpc("memory.health")
                backlog_seen = max(backlog_seen, int(health["indexing_backlog"]))
                await asyncio.sleep(0.05)

        await asyncio.gather(watch(), *(caller() for _ in range(IN_FLIGHT)))

    assert backlog_seen > 0, "the indexer was never behind: the load did not test it"
    assert [ranked for _, _, ranked in together if ranked] == []
    marked_alone = {case_id for case_id, marked, _ in alone if marked}
    marked_together = {case_id for case_id, marked, _ in together if marked}
    assert marked_together == marked_alone
