"""MCP (Model Context Protocol): the memory tools for agent hosts, on the official SDK.

Each tool is a JSON-RPC method under another name: its input schema is the method's params
model, and a call goes through the same endpoint (the same validation, the same API key checks
and rate limits, the same metrics). A refused or failed call is a tool result with ``isError``
and the stable error code, never a protocol error or a traceback; only an unknown tool name is
a protocol error. Served two ways: streamable HTTP at ``/mcp`` in the service's own app
(stateless, JSON responses: any replica answers any request), and stdio (``agentcore mcp``)
for desktop agent hosts that start the server themselves.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from starlette.types import Receive, Scope, Send

from agentcore import __version__
from agentcore.api import errors
from agentcore.api.auth import Gate, refusal
from agentcore.api.rpc import Guard, RpcMethod
from agentcore.api.runtime import Runtime, running
from agentcore.config import Settings
from agentcore.domain.access import ApiKey
from agentcore.domain.errors import ConfigurationError, Forbidden, Unauthorized

log = logging.getLogger(__name__)

KEY_SCOPE_ENTRY = "agentcore.api_key"  # where the HTTP edge leaves the caller's key


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    method: str
    description: str


TOOLS = (
    ToolSpec(
        "memory_add",
        "memory.add",
        "Store something worth remembering (a fact, a preference, an event, an instruction) "
        "in the scope of the ids given (user_id, agent_id, session_id, task_id, ...).",
    ),
    ToolSpec(
        "memory_search",
        "memory.search",
        "Find the memories most relevant to a question in the given scope, best first.",
    ),
    ToolSpec("memory_get", "memory.get", "Read one memory by its id."),
    ToolSpec(
        "memory_list",
        "memory.list",
        "List the memories of a scope, newest first, a page at a time.",
    ),
    ToolSpec(
        "memory_update",
        "memory.update",
        "Change a memory's content, tags or metadata (the history keeps the old version).",
    ),
    ToolSpec("memory_delete", "memory.delete", "Delete one memory by its id."),
    ToolSpec(
        "memory_context",
        "memory.context",
        "Everything worth knowing right now, as one prompt-ready block within max_tokens: "
        "critical facts and constraints, the task's current stage, the session's working "
        "memory, memories relevant to the query, procedures and error lessons, each line "
        "numbered and its memory id listed in `included`.",
    ),
    ToolSpec(
        "stage_start",
        "memory.stage.start",
        "Declare the reasoning stage a task enters: planning, execution, reflection or "
        "verification. The previous stage completes and is compressed.",
    ),
    ToolSpec(
        "stage_complete",
        "memory.stage.complete",
        "Complete the task's current stage; its memories are compressed into a summary.",
    ),
    ToolSpec(
        "task_progress",
        "memory.task.progress",
        "The stages of a task so far, their state and the compression achieved.",
    ),
    ToolSpec(
        "task_context",
        "memory.task.context",
        "A compact context of a task for a token budget: its brief, stage summaries and the "
        "memories that matter now.",
    ),
    ToolSpec(
        "error_record",
        "memory.error.record",
        "Record an error the agent made or met, so its pattern can be learned and avoided.",
    ),
    ToolSpec(
        "error_patterns",
        "memory.error.patterns",
        "The recurring error patterns learned for a scope, with what to do about them.",
    ),
    ToolSpec(
        "strategic_context",
        "memory.ace.strategic_context",
        "For a meta-thinker: the task's progress, signals of trouble and recommendations.",
    ),
)


def tool_list(methods: dict[str, RpcMethod]) -> list[mt.Tool]:
    """The tools whose method is in ``methods``, with the params model as input schema."""
    return [
        mt.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=methods[spec.method].params.model_json_schema(mode="validation"),
        )
        for spec in TOOLS
        if spec.method in methods
    ]


class McpTools:
    """The MCP server of one runtime: list the tools, call one through the JSON-RPC endpoint."""

    def __init__(self, runtime: Runtime, stdio_key: ApiKey | None = None) -> None:
        self._runtime = runtime
        self._stdio_key = stdio_key
        self._tools = tool_list(runtime.methods)
        self._methods = {spec.name: spec.method for spec in TOOLS}
        self.server: Server[Any] = Server(
            "agentcore-memory",
            version=__version__,
            instructions="Long-term memory for agents: store with memory_add, recall with "
            "memory_search, and declare task stages with stage_start/stage_complete.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: Any, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=self._tools)

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        method = self._methods.get(params.name)
        if method is None or method not in self._runtime.methods:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"unknown tool {params.name[:100]!r}")
        key = self._caller(ctx)
        gate = self._runtime.gate
        guard: Guard = lambda m, p: gate.check(key, m, p)  # noqa: E731
        reply = await self._runtime.rpc.call(method, params.arguments or {}, guard)
        if "error" in reply:
            return _error_result(reply["error"])
        result = reply["result"]
        text = json.dumps(result, ensure_ascii=False)
        return mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content=result)

    def _caller(self, ctx: Any) -> ApiKey | None:
        request = getattr(ctx, "request", None)
        if request is None:
            return self._stdio_key
        key: ApiKey | None = request.scope.get(KEY_SCOPE_ENTRY)
        return key


def _error_result(error: dict[str, Any]) -> mt.CallToolResult:
    data = error.get("data") or {}
    code = data.get("code", "INTERNAL_ERROR")
    text = f"{code}: {error.get('message', '')}"
    for problem in data.get("errors", []):
        text += f"\n- {problem['field']}: {problem['message']}"
    return mt.CallToolResult(
        content=[mt.TextContent(text=text)],
        structured_content={"error": error},
        is_error=True,
    )


class McpHttp:
    """``/mcp``: admits the request like ``/rpc`` (401 without a valid key, 403 from a web page
    not allowed), then hands it to the SDK's streamable HTTP transport."""

    def __init__(self, tools: McpTools, gate: Gate) -> None:
        self._gate = gate
        self._sessions = StreamableHTTPSessionManager(
            app=tools.server, stateless=True, json_response=True
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self._sessions.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        origin = headers.get(b"origin")
        try:
            key = self._gate.admit(
                authorization, None if origin is None else origin.decode("latin-1")
            )
        except (Unauthorized, Forbidden) as exc:
            status, extra = refusal(exc)
            body = {"jsonrpc": "2.0", "error": errors.from_exception(exc), "id": None}
            await _send_json(send, status, body, extra)
            return
        scope[KEY_SCOPE_ENTRY] = key
        await self._sessions.handle_request(scope, receive, send)


async def _send_json(send: Send, status: int, payload: Any, extra: dict[str, str]) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json")]
    headers += [(name.encode(), value.encode()) for name, value in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_stdio(settings: Settings) -> None:
    """``agentcore mcp``: the tools over stdin/stdout in this process. With API keys configured
    it acts as the key in ``AGENTCORE_API_KEY`` (its access and scopes)."""
    async with running(settings) as runtime:
        key = _stdio_key(runtime.gate, settings)
        tools = McpTools(runtime, stdio_key=key)
        async with stdio_server() as (read, write):
            await tools.server.run(read, write, tools.server.create_initialization_options())


def _stdio_key(gate: Gate, settings: Settings) -> ApiKey | None:
    if gate.open:
        return None
    presented = settings.agentcore_api_key
    try:
        return gate.authenticate(
            None if presented is None else f"Bearer {presented.get_secret_value()}"
        )
    except Unauthorized:
        raise ConfigurationError(
            "with AGENTCORE_API_KEYS_FILE set, `agentcore mcp` needs one of its keys in "
            "AGENTCORE_API_KEY"
        ) from None
