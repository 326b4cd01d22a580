"""The REST face's errors: the JSON-RPC error table (``agentcore.api.errors``) as HTTP statuses.

Every error answers ``{"error": {"code": <stable code>, "message": ..., "retryable": ...,
"details": {...}}}``: the code and message are those a JSON-RPC call gets, ``details`` the rest
of its ``data`` (``errors`` lists the failing fields of invalid params). No exception text
reaches a caller.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from agentcore.api import errors
from agentcore.domain.errors import AgentCoreError

STATUS = {
    "PARSE_ERROR": 400,
    "INVALID_REQUEST": 400,
    "INVALID_PARAMS": 400,
    "INVALID_LAYER": 400,
    "INVALID_SCOPE": 400,
    "MISSING_IDENTIFIER": 400,
    "QUERY_TOO_LONG": 400,
    "INVALID_PROMOTION": 400,
    "UNAUTHORIZED": 401,
    "BUDGET_EXCEEDED": 402,
    "FORBIDDEN": 403,
    "MEMORY_NOT_FOUND": 404,
    "STAGE_NOT_FOUND": 404,
    "TASK_NOT_FOUND": 404,
    "METHOD_NOT_FOUND": 404,
    "CONFLICT": 409,
    "INVALID_STATE": 409,
    "CONTENT_TOO_LONG": 413,
    "RATE_LIMITED": 429,
    "INTERNAL_ERROR": 500,
    "CONFIGURATION_ERROR": 500,
    "EMBEDDING_FAILED": 502,
    "PROVIDER_ERROR": 503,
}


class RestError(Exception):
    """An error answer, raised anywhere in a handler and turned into its response once."""

    def __init__(self, rpc_error: dict[str, Any]) -> None:
        super().__init__(rpc_error["data"]["code"])
        self.rpc_error = rpc_error

    @classmethod
    def of(cls, exc: AgentCoreError) -> RestError:
        return cls(errors.from_exception(exc))

    @property
    def status(self) -> int:
        return status_of(self.rpc_error)

    def body(self) -> dict[str, Any]:
        return error_body(self.rpc_error)


def status_of(rpc_error: dict[str, Any]) -> int:
    return STATUS.get(rpc_error["data"]["code"], 500)


def error_body(rpc_error: dict[str, Any]) -> dict[str, Any]:
    data = dict(rpc_error["data"])
    code, retryable = data.pop("code"), data.pop("retryable")
    body: dict[str, Any] = {"code": code, "message": rpc_error["message"], "retryable": retryable}
    if data:
        body["details"] = data
    return {"error": body}


def error_response(error: RestError, headers: dict[str, str] | None = None) -> Response:
    extra = dict(headers or {})
    retry_after = error.rpc_error["data"].get("retry_after")
    if isinstance(retry_after, int | float):
        extra["retry-after"] = str(max(1, round(retry_after + 0.5)))
    return json_response(error.body(), error.status, extra)


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return Response(body, status, headers, media_type="application/json")
