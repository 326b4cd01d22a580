"""memory.context over JSON-RPC on the real app (embedded default): the budget, counted with the
project's tokenizer, is never exceeded; critical facts come first; sections are labelled and
ordered; items are deduplicated and carry the ids of what they show; the MCP tool."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.domain.context_block import normalized
from tests.e2e.test_rpc_api import result, rpc

USER, TASK, AGENT, SESSION = "ctx-user", "ctx-task", "ctx-agent", "ctx-session"
SCOPE = {"user_id": USER, "task_id": TASK, "agent_id": AGENT, "session_id": SESSION}
TITLES = {
    "critical": "Critical facts and constraints",
    "stage": "Task and current stage",
    "working": "Working memory (this session, oldest first)",
    "memories": "Relevant memories",
    "procedures": "Procedures",
    "errors": "Error lessons",
}
ORDER = list(TITLES)
BUDGETS = [50, 51, 57, 64, 80, 100, 128, 150, 200, 256, 300, 400, 512, 750, 1000, 1500, 2000]
BUDGETS += [3000, 4000, 8000, 32000]
TOPICS = [
    "Dana keeps her bike in the garage on Elm Street",
    "The staging database is refreshed every Monday night",
    "Omar's favourite band is Radiohead",
    "The quarterly review meeting moved to Thursday afternoon",
    "Priya is learning Portuguese before her trip to Lisbon",
    "The office printer on floor three jams with glossy paper",
    "Finance closes the books on the fifth working day",
    "Leo adopted a grey cat called Pixel",
    "The sales dashboard reads from the warehouse replica",
    "Marta runs the Berlin half marathon every April",
    "Support tickets about refunds go to the billing queue",
    "The team lunch is on the last Friday of the month",
]
CONSTRAINTS = ["The report must stay under two pages.", "Never email the CFO directly."]
FLAGGED = "Use metric units in every table."
DUPLICATE = "Alice prefers green tea in the morning."
WORKING = [f"Message {i}: checking the Q3 sales figures for region {i}." for i in range(8)]

tokens = BpeTokenCounter()


@pytest.fixture(scope="module")
def world(client: TestClient) -> dict[str, Any]:
    """A task in its execution stage (constraints, a flagged fact, a compressed planning
    stage), a user's memories, a session's working memory, an error with its recovery and a
    procedure; and another user's memory the caller must never see."""
    task = {"task_id": TASK, "user_id": USER}
    planning = result(client, "memory.stage.start", task_id=TASK, stage_type="planning")
    for text in [*CONSTRAINTS, "Plan: gather the Q3 sales figures from the finance export."]:
        result(client, "memory.add", content=text, **task)
    flagged = result(client, "memory.add", content=FLAGGED, critical=True, **task)
    result(client, "memory.stage.complete", task_id=TASK, stage_id=planning["stage_id"])
    execution = result(client, "memory.stage.start", task_id=TASK, stage_type="execution")
    result(client, "memory.add", content="Exported the Q3 sales figures to sales.csv.", **task)
    topics = [result(client, "memory.add", content=t, user_id=USER)["memory_id"] for t in TOPICS]
    twins = [result(client, "memory.add", content=DUPLICATE, user_id=USER) for _ in range(2)]
    result(client, "memory.add", content=WORKING[0], user_id=USER)  # also in working memory
    for text in WORKING:
        result(client, "memory.working.append", session_id=SESSION, content=text, role="user")
    error = result(
        client,
        "memory.error.record",
        task_id=TASK,
        agent_id=AGENT,
        error_type="missing_info",
        description="The EMEA export was empty, so the totals were wrong",
        severity=0.6,
        recovery_action="Re-run the export with the EMEA region selected",
    )
    for _ in range(3):
        result(
            client,
            "memory.procedure.record",
            agent_id=AGENT,
            action="export the sales csv for Q3",
            context="quarterly sales report figures",
            outcome="csv exported",
            success=True,
        )
    result(client, "memory.add", content="The other user's secret sales plan", user_id="ctx-other")
    return {
        "flagged": flagged["memory_id"],
        "planning": planning["stage_id"],
        "execution": execution["stage_id"],
        "topics": topics,
        "twins": [t["memory_id"] for t in twins],
        "error": error["error_id"],
    }


def context(client: TestClient, **params: Any) -> dict[str, Any]:
    block: dict[str, Any] = result(client, "memory.context", **params)
    return block


def headers(text: str) -> list[str]:
    return re.findall(r"^## (.+?)(?: \(truncated\))?$", text, re.MULTILINE)


def lines(text: str) -> dict[int, str]:
    return {int(n): line for n, line in re.findall(r"^\[(\d+)\] (.*)$", text, re.MULTILINE)}


@pytest.mark.parametrize("query", [None, "what are the Q3 sales figures for the report?"])
def test_the_budget_is_never_exceeded_and_critical_facts_come_first(
    client: TestClient, world: dict[str, Any], query: str | None
) -> None:
    extra = {} if query is None else {"query": query}
    for budget in BUDGETS:
        block = context(client, max_tokens=budget, **SCOPE, **extra)
        assert block["tokens_used"] == tokens.count(block["text"]) <= budget, budget
        assert (block["max_tokens"], block["tokenizer"]) == (budget, "o200k_base")
        sections = [s["name"] for s in block["sections"]]
        if block["included"]:
            assert sections[0] == "critical", (budget, sections)
            assert block["included"][0]["section"] == "critical"
        if sections != ["critical"]:  # a lower section got in: every critical fact is in
            assert "critical" not in block["omitted"], budget
            assert not block["truncated"]
    assert block["omitted"] == {}  # 32,000 tokens hold everything
    assert sections == ORDER


def test_critical_facts_hold_the_constraints_and_the_flagged_fact(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=2000, **SCOPE)
    critical = [
        lines(block["text"])[i["ref"]] for i in block["included"] if i["section"] == "critical"
    ]
    assert critical[0] == FLAGGED  # flagged by the caller: first
    assert set(critical) == {FLAGGED, *CONSTRAINTS}
    assert block["text"].startswith(f"## {TITLES['critical']}\n[1] {FLAGGED}\n")


def test_critical_facts_that_alone_exceed_the_budget_are_truncated(client: TestClient) -> None:
    scope = {"task_id": "ctx-long", "user_id": USER}
    result(client, "memory.stage.start", task_id="ctx-long", stage_type="planning")
    facts = [
        f"Rule {n}: every invoice above {n} thousand euros must be approved by two directors "
        f"from different regions before the payment run on the {n}th of the month."
        for n in range(1, 7)
    ]
    for fact in facts:
        result(client, "memory.add", content=fact, critical=True, **scope)
    block = context(client, max_tokens=100, **scope)
    assert block["truncated"]
    assert block["omitted"]["critical"] >= 3
    assert block["text"].startswith(f"## {TITLES['critical']} (truncated)\n")
    assert [s["name"] for s in block["sections"]] == ["critical"]
    shown = list(lines(block["text"]).values())
    assert shown
    assert all(line in facts for line in shown)  # whole facts, never cut
    assert block["tokens_used"] == tokens.count(block["text"]) <= 100


def test_sections_are_labelled_in_order_with_token_counts(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=4000, query="Q3 sales figures", **SCOPE)
    names = [s["name"] for s in block["sections"]]
    assert names == ORDER
    assert headers(block["text"]) == [TITLES[n] for n in names]
    assert [s["title"] for s in block["sections"]] == [TITLES[n] for n in names]
    assert sum(s["tokens"] for s in block["sections"]) == pytest.approx(
        block["tokens_used"], abs=len(names) * 2
    )
    for section in block["sections"]:
        shown = [i for i in block["included"] if i["section"] == section["name"]]
        assert section["items"] == len(shown) > 0
    for item in block["included"]:
        assert item["tokens"] == tokens.count(
            f"[{item['ref']}] {lines(block['text'])[item['ref']]}"
        )


def test_items_are_deduplicated_into_their_highest_section(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=8000, **SCOPE)
    ids = [i["id"] for i in block["included"]]
    assert len(set(world["twins"]) & set(ids)) == 1  # the same text twice: once
    assert block["text"].count(DUPLICATE) == 1
    assert block["text"].count(WORKING[0]) == 1  # a memory and a working item: working
    working = [
        lines(block["text"])[i["ref"]] for i in block["included"] if i["section"] == "working"
    ]
    assert f"user: {WORKING[0]}" in working
    assert len(ids) == len(set(ids))  # memory and working item ids appear once
    assert block["duplicates"] >= 2


def test_every_included_id_names_what_its_line_shows(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=8000, query="Q3 sales report", **SCOPE)
    text = lines(block["text"])
    working = {
        i["id"]: i["content"] for i in result(client, "memory.working.get", **SCOPE)["items"]
    }
    errors = {
        e["error_id"]: e for e in result(client, "memory.error.history", task_id=TASK)["errors"]
    }
    kinds = set()
    for item in block["included"]:
        line, kinds = text[item["ref"]], kinds | {item["kind"]}
        if item["kind"] == "memory":
            content = result(client, "memory.get", memory_id=item["id"], **SCOPE)["content"]
            if item["section"] == "critical":  # a constraint stated by the memory
                assert set(normalized(line).split()) <= set(normalized(content).split())
            else:
                assert line.removesuffix(" (superseded)") == " ".join(content.split())
        elif item["kind"] == "working_item":
            assert line.endswith(working[item["id"]])
        elif item["kind"] == "stage":
            stage = result(client, "memory.stage.get", stage_id=item["id"], task_id=TASK)
            assert stage["stage"]["stage_type"] in line
        elif item["kind"] in ("error", "error_pattern"):
            assert item["id"] in errors
            if item["kind"] == "error":
                assert errors[item["id"]]["description"] in line
        else:
            assert (item["kind"], item["id"]) == ("task", TASK)
    assert {"memory", "working_item", "stage", "error"} <= kinds


def test_without_a_query_the_newest_and_most_important_memories_are_shown(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=2000, user_id=USER)
    memories = [i for i in block["included"] if i["section"] == "memories"]
    assert memories
    assert {s["name"] for s in block["sections"]} == {"memories"}
    assert world["topics"][-1] in {i["id"] for i in memories}
    assert block["current_stage"] is None


def test_with_a_query_the_best_ranked_memories_lead(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=300, query="What is Leo's cat called?", user_id=USER)
    first = next(i for i in block["included"] if i["section"] == "memories")
    assert first["id"] == world["topics"][TOPICS.index("Leo adopted a grey cat called Pixel")]
    assert "secret" not in block["text"]  # another user's memory is never shown


def test_budget_left_over_is_not_filled_with_unrelated_memories(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=2000, query="What is Leo's cat called?", user_id=USER)
    shown = {i["id"] for i in block["included"] if i["section"] == "memories"}
    cat = world["topics"][TOPICS.index("Leo adopted a grey cat called Pixel")]
    assert cat in shown
    unrelated = [
        "The staging database is refreshed every Monday night",
        "Finance closes the books on the fifth working day",
        "The office printer on floor three jams with glossy paper",
        "Support tickets about refunds go to the billing queue",
    ]
    assert not shown & {world["topics"][TOPICS.index(text)] for text in unrelated}
    assert len(shown) < len(TOPICS) // 2


def test_working_memory_shows_the_newest_items_oldest_first(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=120, session_id=SESSION, layers=["working"])
    shown = [int(n) for n in re.findall(r"Message (\d+):", block["text"])]
    assert shown == sorted(shown)
    assert shown[-1] == 7
    assert 0 < len(shown) < len(WORKING)
    assert block["omitted"]["working"] == len(WORKING) - len(shown)
    assert block["text"].startswith(f"## {TITLES['working']}\n")


def test_procedures_and_error_lessons(client: TestClient, world: dict[str, Any]) -> None:
    block = context(client, max_tokens=2000, query="export the quarterly sales csv", **SCOPE)
    text = block["text"]
    procedures = text.split(f"## {TITLES['procedures']}\n")[1].split("\n\n")[0]
    assert "Procedure: export the sales csv for Q3 — works in 3/3 cases" in procedures
    lessons = text.split(f"## {TITLES['errors']}\n")[1]
    assert "missing_info error (severity 0.60): The EMEA export was empty" in lessons
    assert "Recovery: Re-run the export with the EMEA region selected." in lessons
    assert world["error"] in {i["id"] for i in block["included"] if i["kind"] == "error"}


def test_the_stage_section_and_the_stage_memories_are_ranked_for(
    client: TestClient, world: dict[str, Any]
) -> None:
    block = context(client, max_tokens=2000, query="sales figures", **SCOPE)
    stage = text_of(block, "stage")
    assert stage[0].startswith(f"Task {TASK}: current stage execution, active since ")
    assert stage[0].endswith("; completed stages: planning")
    # a one-stage task's brief says nothing its planning summary does not: one of them shows
    told = ("Progress so far: ", "Summary of the planning stage: ")
    [shown] = [line for line in stage[1:] if line.startswith(told)]
    assert "Q3 sales figures" in shown
    assert block["current_stage"] == "execution"
    asked = context(client, max_tokens=200, query="x", current_stage="reflection", **SCOPE)
    assert asked["current_stage"] == "reflection"


def text_of(block: dict[str, Any], section: str) -> list[str]:
    shown = lines(block["text"])
    return [shown[i["ref"]] for i in block["included"] if i["section"] == section]


def test_layers_choose_the_sources(client: TestClient, world: dict[str, Any]) -> None:
    block = context(client, max_tokens=2000, query="sales figures", layers=["semantic"], **SCOPE)
    names = {s["name"] for s in block["sections"]}
    assert not names & {"working", "procedures"}
    assert {"critical", "errors"} <= names  # the task's, whatever the layers


def test_an_unknown_task_is_an_empty_stage_section(client: TestClient) -> None:
    block = context(client, max_tokens=500, task_id="ctx-no-such-task")
    assert (block["text"], block["sections"], block["included"]) == ("", [], [])


@pytest.mark.parametrize(
    "params",
    [
        {"user_id": USER},  # max_tokens is required
        {"user_id": USER, "max_tokens": 49},
        {"user_id": USER, "max_tokens": 32_001},
        {"user_id": USER, "max_tokens": "500"},
        {"user_id": USER, "max_tokens": 500.5},
        {"user_id": USER, "max_tokens": 500, "query": ""},
        {"user_id": USER, "max_tokens": 500, "query": 7},
        {"user_id": USER, "max_tokens": 500, "layers": []},
        {"user_id": USER, "max_tokens": 500, "layers": ["dreams"]},
        {"user_id": USER, "max_tokens": 500, "current_stage": "napping"},
        {"user_id": USER, "max_tokens": 500, "limit": 5},
        {"user_id": "", "max_tokens": 500},
    ],
)
def test_bad_params_are_invalid_params(client: TestClient, params: dict[str, Any]) -> None:
    reply = rpc(client, "memory.context", **params)
    assert reply["error"]["code"] == -32602, reply
    assert reply["error"]["data"]["code"] == "INVALID_PARAMS"


def test_a_call_without_scope_ids_is_refused(client: TestClient) -> None:
    reply = rpc(client, "memory.context", max_tokens=500, query="anything")
    assert reply["error"]["data"]["code"] == "MISSING_IDENTIFIER"
    long = rpc(client, "memory.context", max_tokens=500, query="x" * 2001, user_id=USER)
    assert long["error"]["data"]["code"] == "QUERY_TOO_LONG"


MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def mcp(client: TestClient, method: str, params: dict[str, Any] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    response = client.post("/mcp", json=body, headers=MCP_HEADERS)
    assert response.status_code == 200
    return response.json()["result"]


def test_the_mcp_tool_is_listed_and_callable(client: TestClient, world: dict[str, Any]) -> None:
    tools = {t["name"]: t for t in mcp(client, "tools/list")["tools"]}
    schema = tools["memory_context"]["inputSchema"]
    assert {"max_tokens", "query", "layers", "current_stage", "task_id"} <= set(
        schema["properties"]
    )
    assert schema["required"] == ["max_tokens"]
    call = {"name": "memory_context", "arguments": {"max_tokens": 500, **SCOPE}}
    called = mcp(client, "tools/call", call)
    assert not called["isError"]
    block = called["structuredContent"]
    direct = context(client, max_tokens=500, **SCOPE)  # the same call over JSON-RPC
    assert block.keys() == direct.keys()
    assert block["included"]
    assert block["tokens_used"] <= 500
    assert block["text"].startswith(f"## {TITLES['critical']}")
    bad = mcp(client, "tools/call", {"name": "memory_context", "arguments": {"user_id": USER}})
    assert bad["isError"]
    assert bad["content"][0]["text"].startswith("INVALID_PARAMS: ")
