"""JSON-RPC 2.0 over one HTTP body, on top of jsonrpcserver.

jsonrpcserver does the dispatch of a single well-formed request. Around it this module does
what it does not (DESIGN §6): it parses the body and splits batches itself so that one bad
member gets its own error while the others are answered, it validates params with pydantic
(field-level messages), and it turns every exception into a sanitized error object: no stack
trace or exception text ever reaches the caller.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from jsonrpcserver import Error, Result, Success, async_dispatch_to_response
from jsonrpcserver.response import ErrorResponse, SuccessResponse
from oslash.either import Left
from pydantic import BaseModel, ValidationError

from agentcore.api import errors
from agentcore.api.metrics import UNKNOWN_METHOD, RpcMetrics
from agentcore.domain.access import Access, required_access
from agentcore.domain.errors import AgentCoreError
from agentcore.services.admission import Admission, Kind

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[BaseModel]]  # takes an instance of the params model
Guard = Callable[[str, Any], None]  # raises an AgentCoreError for a call it refuses
MAX_DEPTH = 64  # JSON nesting a request may have (params hold a few levels of metadata)


def _too_deep(payload: Any) -> bool:
    """Whether ``payload`` nests lists and objects deeper than ``MAX_DEPTH`` (iteratively: a
    deep body must not exhaust the stack of whatever reads it next)."""
    stack = [(payload, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                return True
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs: these are lone


def _lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in ``value`` (keys included) holds a lone surrogate: JSON can
    escape one, but it is no Unicode character and no UTF-8 encoder takes it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class RpcMethod:
    """A method: its params model, its result model and the handler that calls one service."""

    def __init__(
        self,
        name: str,
        params: type[BaseModel],
        result: type[BaseModel],
        handler: Handler,
        summary: str,
    ) -> None:
        self.name = name
        self.params = params
        self.result = result
        self.handler = handler
        self.summary = summary


def field_errors(exc: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(part) for part in err["loc"]) or "params", "message": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]


class JsonRpcEndpoint:
    def __init__(
        self,
        methods: Mapping[str, RpcMethod],
        metrics: RpcMetrics,
        outage: Callable[[Exception], AgentCoreError | None] = lambda _: None,
        admission: Admission | None = None,
    ) -> None:
        """``outage`` names a failure that means a store is out of reach (the composition
        root's, from the adapters): it is answered as that retryable error, logged on one
        line, where any other unexpected failure is ``INTERNAL_ERROR`` with its traceback.
        ``admission`` decides when a valid call's handler runs (reads before writes under
        load); without it every call runs at once."""
        self._methods = methods
        self._metrics = metrics
        self._outage = outage
        self._admission = admission
        self._jsonrpc_methods = {name: self._bind(method) for name, method in methods.items()}

    async def handle(self, body: bytes, guard: Guard | None = None) -> Any:
        """The JSON-able reply to one HTTP body, or None when nothing is to be answered.
        ``guard`` checks each call (method, params) before it runs: an ``AgentCoreError`` it
        raises (forbidden, rate limited) is that call's error."""
        try:
            payload = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # deep nesting included
            return self._invalid(None, errors.parse_error())
        if _too_deep(payload):
            return self._invalid(None, errors.invalid_request(f"nested deeper than {MAX_DEPTH}"))
        if isinstance(payload, list):
            if not payload:
                return self._invalid(None, errors.invalid_request("empty batch"))
            replies = await asyncio.gather(*(self._one(member, guard) for member in payload))
            answered = [reply for reply in replies if reply is not None]
            return answered or None
        return await self._one(payload, guard)

    async def call(self, method: str, params: Any, guard: Guard | None = None) -> dict[str, Any]:
        """One call made in-process (the MCP tools): its response object."""
        reply = await self._one(
            {"jsonrpc": "2.0", "id": 0, "method": method, "params": params}, guard
        )
        assert reply is not None, "a call with an id is always answered"
        return reply

    async def _one(self, member: Any, guard: Guard | None) -> dict[str, Any] | None:
        problem = _envelope_problem(member)
        if problem is not None:
            request_id = member.get("id") if isinstance(member, dict) else None
            valid_id = (
                request_id is None
                or isinstance(request_id, int)
                or (isinstance(request_id, str) and not _lone_surrogate(request_id))
            )
            return self._invalid(request_id if valid_id else None, errors.invalid_request(problem))
        is_notification = "id" not in member
        request = {**member, "id": None} if is_notification else member
        if "params" not in request:
            request = {**request, "params": {}}
        if request["method"] not in self._jsonrpc_methods:
            reply = _response(request["id"], error=errors.method_not_found(request["method"]))
            self._metrics.observe(UNKNOWN_METHOD, "METHOD_NOT_FOUND", None)
            return None if is_notification else reply
        if guard is not None:
            try:
                guard(request["method"], request["params"])
            except AgentCoreError as exc:
                self._metrics.observe(request["method"], exc.code, None)
                return (
                    None
                    if is_notification
                    else _response(request["id"], error=errors.from_exception(exc))
                )
        response = await async_dispatch_to_response(
            request,  # type: ignore[arg-type]
            self._jsonrpc_methods,
            deserializer=_already_parsed,
            validator=_already_parsed,
        )
        if is_notification:
            return None
        return _from_jsonrpcserver(response, request["id"])

    def _bind(self, method: RpcMethod) -> Callable[..., Awaitable[Result]]:
        async def call(**params: Any) -> Result:
            started = time.perf_counter()
            outcome = "ok"
            try:
                parsed = method.params.model_validate(params)
                if self._admission is None:
                    result = await method.handler(parsed)
                else:
                    async with self._admission.turn(_kind(method.name, params)):
                        result = await method.handler(parsed)
                return Success(result.model_dump(mode="json"))
            except ValidationError as exc:
                outcome = "INVALID_PARAMS"
                return _error(errors.invalid_params(field_errors(exc)))
            except Exception as exc:
                known = exc if isinstance(exc, AgentCoreError) else self._outage(exc)
                if known is None:
                    outcome = "INTERNAL_ERROR"
                    log.exception("%s failed unexpectedly", method.name)
                    return _error(errors.internal_error())
                outcome = known.code
                if known.code == "INTERNAL_ERROR":
                    log.error("%s failed: %s", method.name, known.message)
                elif known.code == "PROVIDER_ERROR":
                    log.warning("%s: %s", method.name, _cause(known))
                return _error(errors.from_exception(known))
            finally:
                seconds = time.perf_counter() - started
                self._metrics.observe(method.name, outcome, seconds)
                log.debug("%s %s in %.1f ms", method.name, outcome, seconds * 1000)

        return call

    def _invalid(self, request_id: Any, error: dict[str, Any]) -> dict[str, Any]:
        """The reply to a body or member that is no valid request, counted."""
        self._metrics.observe(UNKNOWN_METHOD, error["data"]["code"], None)
        return _response(request_id, error=error)


def _kind(method: str, params: Mapping[str, Any]) -> Kind:
    return Kind.READ if required_access(method, params) is Access.READ else Kind.WRITE


def _cause(exc: AgentCoreError) -> str:
    """One line for the log: the message, and the type of the driver error behind it."""
    cause = exc.__cause__
    return exc.message if cause is None else f"{exc.message} ({type(cause).__name__})"


def _already_parsed(request: Any) -> Any:
    """The body is parsed and the envelope checked before jsonrpcserver sees a request."""
    return request


def _error(obj: dict[str, Any]) -> Result:
    return Error(obj["code"], obj["message"], obj["data"])


def _envelope_problem(member: Any) -> str | None:
    if not isinstance(member, dict):
        return "a request must be a JSON object"
    if member.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(member.get("method"), str):
        return "method must be a string"
    if "id" in member and not (member["id"] is None or isinstance(member["id"], str | int)):
        return "id must be a string, a number or null"
    if isinstance(member.get("id"), bool):
        return "id must be a string, a number or null"
    if "params" in member and not isinstance(member["params"], dict):
        return "params must be an object of named params"
    extra = set(member) - {"jsonrpc", "method", "params", "id"}
    if extra:
        return "unexpected member " + ", ".join(sorted(extra))
    if _lone_surrogate(member):
        return "text with a lone surrogate (\\ud800-\\udfff) is not valid Unicode"
    return None


def _from_jsonrpcserver(wrapped: Any, request_id: Any) -> dict[str, Any]:
    # jsonrpcserver 5 wraps each response in an oslash Either (Right = success, Left = error).
    response = wrapped._error if isinstance(wrapped, Left) else getattr(wrapped, "_value", wrapped)
    if isinstance(response, SuccessResponse):
        return _response(request_id, result=response.result)
    if isinstance(response, ErrorResponse):
        data = response.data if isinstance(response.data, dict) else None
        if data is None or "code" not in data:  # an error jsonrpcserver made itself
            log.error("jsonrpcserver error %s: %s", response.code, response.message)
            return _response(request_id, error=errors.internal_error())
        error = {"code": response.code, "message": response.message, "data": data}
        return _response(request_id, error=error)
    log.error("unexpected dispatch response %r", type(response))
    return _response(request_id, error=errors.internal_error())


def _response(
    request_id: Any, *, result: Any = None, error: dict[str, Any] | None = None
) -> dict[str, Any]:
    if error is not None:
        return {"jsonrpc": "2.0", "error": error, "id": request_id}
    return {"jsonrpc": "2.0", "result": result, "id": request_id}
