"""The MCP tools through the official SDK's own client: streamable HTTP at /mcp of the real
server process (with API keys), and stdio (`agentcore mcp`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from tests.server_process import Server

REQUIRED_TOOLS = {
    "memory_add",
    "memory_search",
    "memory_get",
    "memory_list",
    "memory_delete",
    "stage_start",
    "stage_complete",
    "task_progress",
    "error_record",
    "strategic_context",
}


def create_key(keys_file: Path, key_id: str, access: str, *scopes: str) -> str:
    argv = [sys.executable, "-m", "agentcore.cli", "keys", "create", "--id", key_id]
    argv += ["--access", access, "--file", str(keys_file), *scopes]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("keys") / "keys.json"


@pytest.fixture(scope="module")
def keys(keys_file: Path) -> dict[str, str]:
    return {
        "writer": create_key(
            keys_file, "mia-rw", "write", "--user-id", "mia", "--task-id", "mia-*"
        ),
        "reader": create_key(keys_file, "mia-r", "read", "--user-id", "mia"),
    }


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, keys_file: Path, keys: dict[str, str]
) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("data"), env={"AGENTCORE_API_KEYS_FILE": str(keys_file)})
    s.start()
    yield s
    s.stop()


@asynccontextmanager
async def connect(server: Server, key: str) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {key}"})
    async with http, Client(streamable_http_client(f"{server.base}/mcp", http_client=http)) as c:
        yield c


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == content
    return content


def error_of(result: CallToolResult) -> str:
    assert result.is_error
    code: str = result.structured_content["error"]["data"]["code"]
    assert result.content[0].text.startswith(f"{code}: ")
    return code


async def test_tools_are_listed_with_the_json_rpc_params_as_schema(
    server: Server, keys: dict[str, str]
) -> None:
    async with connect(server, keys["reader"]) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= REQUIRED_TOOLS
    add = tools["memory_add"].input_schema
    assert add["type"] == "object"
    assert {"content", "messages"} <= set(add["properties"])  # one of the two
    assert {"user_id", "agent_id", "session_id", "task_id", "tags"} <= set(add["properties"])
    assert add["additionalProperties"] is False
    assert all(tool.description for tool in tools.values())


async def test_add_then_search_finds_it(server: Server, keys: dict[str, str]) -> None:
    async with connect(server, keys["writer"]) as client:
        added = structured(
            await client.call_tool(
                "memory_add", {"content": "Mia's flight to Lisbon leaves at 7:40", "user_id": "mia"}
            )
        )
        found = structured(
            await client.call_tool(
                "memory_search", {"query": "when does mia fly to lisbon", "user_id": "mia"}
            )
        )
        got = structured(
            await client.call_tool(
                "memory_get", {"memory_id": added["memory_id"], "user_id": "mia"}
            )
        )
        listed = structured(await client.call_tool("memory_list", {"user_id": "mia"}))
    assert found["results"][0]["memory"]["id"] == added["memory_id"]
    assert got["content"] == "Mia's flight to Lisbon leaves at 7:40"
    assert listed["total_count"] == 1


async def test_bad_arguments_are_error_results_with_the_stable_code(
    server: Server, keys: dict[str, str]
) -> None:
    async with connect(server, keys["writer"]) as client:
        wrong_type = await client.call_tool("memory_add", {"content": 42, "user_id": "mia"})
        unknown_field = await client.call_tool(
            "memory_search", {"query": "q", "user_id": "mia", "k": 3}
        )
        no_scope = await client.call_tool("memory_add", {"content": "whose is this"})
        missing = await client.call_tool("memory_get", {"memory_id": "nope", "user_id": "mia"})
        with pytest.raises(MCPError, match="unknown tool"):
            await client.call_tool("memory_teleport", {})
        listed = structured(await client.call_tool("memory_list", {"user_id": "mia"}))
    assert error_of(wrong_type) == "INVALID_PARAMS"
    assert "content: Input should be a valid string" in wrong_type.content[0].text
    assert wrong_type.structured_content["error"]["code"] == -32602
    assert error_of(unknown_field) == "INVALID_PARAMS"
    assert error_of(no_scope) in {"MISSING_IDENTIFIER", "FORBIDDEN"}
    assert error_of(missing) == "MEMORY_NOT_FOUND"
    for result in (wrong_type, unknown_field, no_scope, missing):
        assert "Traceback" not in result.content[0].text
    assert listed["total_count"] <= 1  # nothing refused was stored


async def test_the_same_api_keys_apply(server: Server, keys: dict[str, str]) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        refused = await http.post(
            f"{server.base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream"},
        )
    assert refused.status_code == 401
    assert refused.json()["error"]["data"]["code"] == "UNAUTHORIZED"
    async with connect(server, keys["reader"]) as client:
        write = await client.call_tool("memory_add", {"content": "x", "user_id": "mia"})
        other_user = await client.call_tool("memory_search", {"query": "x", "user_id": "noah"})
    assert error_of(write) == "FORBIDDEN"
    assert error_of(other_user) == "FORBIDDEN"


async def test_a_task_runs_through_its_stages(server: Server, keys: dict[str, str]) -> None:
    scope = {"task_id": "mia-report", "user_id": "mia"}
    notes = [
        "Plan: gather the Q3 sales figures, then write the tests for the report generator.",
        "The report must stay under two pages; the CFO asked for that explicitly.",
        "Next I will check which regions are missing from the export before drafting.",
    ]
    async with connect(server, keys["writer"]) as client:
        planning = structured(
            await client.call_tool("stage_start", {**scope, "stage_type": "planning"})
        )
        for note in notes:
            structured(await client.call_tool("memory_add", {**scope, "content": note}))
        recorded = structured(
            await client.call_tool(
                "error_record",
                {
                    **scope,
                    "error_type": "missing_info",
                    "description": "The EMEA export was empty, so the totals were wrong",
                    "severity": 0.6,
                },
            )
        )
        done = structured(
            await client.call_tool("stage_complete", {**scope, "stage_id": planning["stage_id"]})
        )
        progress = structured(await client.call_tool("task_progress", scope))
        strategic = structured(await client.call_tool("strategic_context", scope))
    assert planning["stage"]["stage_type"] == "planning"
    assert recorded["error"]["stage_id"] == planning["stage_id"]
    assert any("two pages" in fact for fact in done["stage_memory"]["critical_facts"])
    assert progress["completed_stages"] == [planning["stage_id"]]
    assert strategic["task_id"] == "mia-report"


async def test_stdio_serves_the_tools_in_its_own_process(tmp_path: Path) -> None:
    env = Server(tmp_path / "data").env
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentcore.cli", "mcp"], env=env
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        added = structured(
            await client.call_tool(
                "memory_add", {"content": "Leo is allergic to cats", "user_id": "leo"}
            )
        )
        found = structured(
            await client.call_tool(
                "memory_search", {"query": "what is leo allergic to", "user_id": "leo"}
            )
        )
        bad = await client.call_tool("memory_search", {"query": "", "user_id": "leo"})
    assert names >= REQUIRED_TOOLS
    assert found["results"][0]["memory"]["id"] == added["memory_id"]
    assert error_of(bad) == "INVALID_PARAMS"


async def test_stdio_acts_as_its_configured_key(
    tmp_path: Path, keys_file: Path, keys: dict[str, str]
) -> None:
    env = {
        **Server(tmp_path / "data").env,
        "AGENTCORE_API_KEYS_FILE": str(keys_file),
        "AGENTCORE_API_KEY": keys["reader"],
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agentcore.cli", "mcp"], env=env
    )
    async with Client(params) as client:
        write = await client.call_tool("memory_add", {"content": "x", "user_id": "mia"})
        read = await client.call_tool("memory_list", {"user_id": "mia"})
    assert error_of(write) == "FORBIDDEN"
    assert not read.is_error
