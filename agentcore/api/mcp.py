"""MCP (Model Context Protocol): the memory tools for agent hosts, on the official SDK.

Each tool is a JSON-RPC method under another name: its input schema is the method's params
model, and a call goes through the same endpoint (the same validation, the same API key checks
and rate limits, the same metrics). A refused or failed call is a tool result with ``isError``
and the stable error code, never a protocol error or a traceback; only an unknown tool name is
a protocol error. Served three ways: streamable HTTP at ``/mcp`` in the service's own app
(stateless, JSON responses: any replica answers any request); stdio in a process of its own
(``agentcore mcp``, the tools on its data directory); and stdio for a service running
elsewhere (``agentcore mcp --url``: ``McpProxy`` sends each call to that service's JSON-RPC
endpoint). Both stdio servers exit soon after stdin closes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import mcp.types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from starlette.types import Receive, Scope, Send

from agentcore import __version__
from agentcore.api import errors
from agentcore.api import params as p
from agentcore.api.auth import Gate, refusal
from agentcore.api.handlers.ace import StrategicContextParams
from agentcore.api.handlers.compass import CompleteStageParams, TaskContextParams
from agentcore.api.handlers.context import ContextParams
from agentcore.api.handlers.error_memory import ErrorPatternsParams, RecordErrorParams
from agentcore.api.handlers.stages import StartStageParams, TaskIdParams
from agentcore.api.rpc import Guard
from agentcore.client import AsyncMemoryClient, RpcError
from agentcore.config import Settings
from agentcore.domain.access import ApiKey
from agentcore.domain.errors import ConfigurationError, Forbidden, ProviderError, Unauthorized

if TYPE_CHECKING:
    from agentcore.api.runtime import Runtime

log = logging.getLogger(__name__)

KEY_SCOPE_ENTRY = "agentcore.api_key"  # where the HTTP edge leaves the caller's key
STDIN_CLOSED_GRACE_SECONDS = 1.5  # how long stdio may take to close down once stdin closed


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    method: str
    params: type[BaseModel]  # the method's params model (a test checks it is the method's)
    description: str


TOOLS = (
    ToolSpec(
        "memory_add",
        "memory.add",
        p.AddParams,
        "Store something worth remembering (a fact, a preference, an event, an instruction) "
        "in the scope of the ids given (user_id, agent_id, session_id, task_id, ...).",
    ),
    ToolSpec(
        "memory_search",
        "memory.search",
        p.SearchParams,
        "Find the memories most relevant to a question in the given scope, best first.",
    ),
    ToolSpec("memory_get", "memory.get", p.MemoryIdParams, "Read one memory by its id."),
    ToolSpec(
        "memory_list",
        "memory.list",
        p.ListParams,
        "List the memories of a scope, newest first, a page at a time.",
    ),
    ToolSpec(
        "memory_update",
        "memory.update",
        p.UpdateParams,
        "Change a memory's content, tags or metadata (the history keeps the old version).",
    ),
    ToolSpec("memory_delete", "memory.delete", p.MemoryIdParams, "Delete one memory by its id."),
    ToolSpec(
        "memory_context",
        "memory.context",
        ContextParams,
        "Everything worth knowing right now, as one prompt-ready block within max_tokens: "
        "critical facts and constraints, the task's current stage, the session's working "
        "memory, memories relevant to the query, procedures and error lessons, each line "
        "numbered and its memory id listed in `included`.",
    ),
    ToolSpec(
        "stage_start",
        "memory.stage.start",
        StartStageParams,
        "Declare the reasoning stage a task enters: planning, execution, reflection or "
        "verification. The previous stage completes and is compressed.",
    ),
    ToolSpec(
        "stage_complete",
        "memory.stage.complete",
        CompleteStageParams,
        "Complete the task's current stage; its memories are compressed into a summary.",
    ),
    ToolSpec(
        "task_progress",
        "memory.task.progress",
        TaskIdParams,
        "The stages of a task so far, their state and the compression achieved.",
    ),
    ToolSpec(
        "task_context",
        "memory.task.context",
        TaskContextParams,
        "A compact context of a task for a token budget: its brief, stage summaries and the "
        "memories that matter now.",
    ),
    ToolSpec(
        "error_record",
        "memory.error.record",
        RecordErrorParams,
        "Record an error the agent made or met, so its pattern can be learned and avoided.",
    ),
    ToolSpec(
        "error_patterns",
        "memory.error.patterns",
        ErrorPatternsParams,
        "The recurring error patterns learned for a scope, with what to do about them.",
    ),
    ToolSpec(
        "strategic_context",
        "memory.ace.strategic_context",
        StrategicContextParams,
        "For a meta-thinker: the task's progress, signals of trouble and recommendations.",
    ),
)
_SPECS = {spec.name: spec for spec in TOOLS}


def tool_list(params: Mapping[str, type[BaseModel]]) -> list[mt.Tool]:
    """The tools whose method is in ``params`` (method → params model), that model's schema
    as their input schema."""
    return [
        mt.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=params[spec.method].model_json_schema(mode="validation"),
        )
        for spec in TOOLS
        if spec.method in params
    ]


def _server(
    tools: list[mt.Tool],
    call_tool: Callable[[Any, mt.CallToolRequestParams], Awaitable[mt.CallToolResult]],
) -> Server[Any]:
    """The MCP server listing ``tools`` and answering their calls with ``call_tool``."""

    async def list_tools(ctx: Any, params: mt.PaginatedRequestParams | None) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=tools)

    return Server(
        "agentcore-memory",
        version=__version__,
        instructions="Long-term memory for agents: store with memory_add, recall with "
        "memory_search, and declare task stages with stage_start/stage_complete.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _unknown_tool(name: str) -> MCPError:
    return MCPError(code=mt.INVALID_PARAMS, message=f"unknown tool {name[:100]!r}")


class McpTools:
    """The MCP server of one runtime: list the tools, call one through the JSON-RPC endpoint."""

    def __init__(self, runtime: Runtime, stdio_key: ApiKey | None = None) -> None:
        self._runtime = runtime
        self._stdio_key = stdio_key
        tools = tool_list({name: m.params for name, m in runtime.methods.items()})
        self.server: Server[Any] = _server(tools, self._call_tool)

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        spec = _SPECS.get(params.name)
        if spec is None or spec.method not in self._runtime.methods:
            raise _unknown_tool(params.name)
        key = self._caller(ctx)
        gate = self._runtime.gate
        guard: Guard = lambda m, p: gate.check(key, m, p)  # noqa: E731
        reply = await self._runtime.rpc.call(spec.method, params.arguments or {}, guard)
        if "error" in reply:
            return _error_result(reply["error"])
        return _tool_result(reply["result"])

    def _caller(self, ctx: Any) -> ApiKey | None:
        request = getattr(ctx, "request", None)
        if request is None:
            return self._stdio_key
        key: ApiKey | None = request.scope.get(KEY_SCOPE_ENTRY)
        return key


class McpProxy:
    """The same tools served for a service running elsewhere (``agentcore mcp --url``): each
    call is that service's JSON-RPC method, sent with the async client, so the service
    validates it, checks the key and answers; nothing here opens a data directory. The
    service's errors become tool errors as in process; a service out of reach is a
    ``PROVIDER_ERROR`` naming its address."""

    def __init__(self, client: AsyncMemoryClient) -> None:
        self._client = client
        tools = tool_list({spec.method: spec.params for spec in TOOLS})
        self.server: Server[Any] = _server(tools, self._call_tool)

    async def _call_tool(self, ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        spec = _SPECS.get(params.name)
        if spec is None:
            raise _unknown_tool(params.name)
        try:
            result = await self._client.call(spec.method, **(params.arguments or {}))
        except RpcError as exc:
            return _error_result({"code": exc.number, "message": exc.message, "data": exc.data})
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return _error_result(errors.from_exception(_unreachable(self._client.url, exc)))
        except Exception:  # the edge: a tool error, never a traceback on the host's screen
            log.exception("tool %s failed in the proxy", spec.name)
            return _error_result(errors.internal_error())
        return _tool_result(result)


def _unreachable(url: str, exc: Exception) -> ProviderError:
    if isinstance(exc, httpx.HTTPStatusError):  # a proxy's 502, or not an AgentCore service
        message = f"the AgentCore service at {url} answered HTTP {exc.response.status_code}"
    else:
        reason = "no answer in time" if isinstance(exc, httpx.TimeoutException) else str(exc)
        message = f"cannot reach the AgentCore service at {url}: {reason or type(exc).__name__}"
    return ProviderError(message, url=url)


def _tool_result(result: Any) -> mt.CallToolResult:
    text = json.dumps(result, ensure_ascii=False)
    return mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content=result)


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


async def serve_local(settings: Settings) -> None:
    """``agentcore mcp``: the tools over stdin/stdout in this process, on the data directory
    or servers of ``settings``. With API keys configured it acts as the key in
    ``AGENTCORE_API_KEY`` (its access and scopes)."""
    from agentcore.api.runtime import running  # builds everything: not for the proxy

    async with running(settings) as runtime:
        key = _stdio_key(runtime.gate, settings)
        await serve_stdio(McpTools(runtime, stdio_key=key).server)


async def serve_proxy(url: str, api_key: str | None, call_timeout: float) -> None:
    """``agentcore mcp --url``: the tools over stdin/stdout, each call sent to the service at
    ``url`` with ``api_key``, ``call_timeout`` seconds per attempt (the client's retries)."""
    async with AsyncMemoryClient(url, api_key=api_key, timeout=call_timeout) as client:
        await serve_stdio(McpProxy(client).server)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over stdin/stdout until stdin closes. From then on the process has
    ``STDIN_CLOSED_GRACE_SECONDS`` to close down (background loops stopped, stores closed);
    past that it exits anyway, as a host that stopped reading expects of it. What was
    acknowledged is already stored (commits and the vector outbox survive a kill -9)."""
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        _exit_after(STDIN_CLOSED_GRACE_SECONDS)


def _exit_after(seconds: float) -> None:
    def exit_now() -> None:
        os.write(2, b"agentcore mcp: stdin closed; exiting before the shutdown finished\n")
        os._exit(0)

    timer = threading.Timer(seconds, exit_now)
    timer.daemon = True  # a process that finished in time does not wait for it
    timer.start()


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
