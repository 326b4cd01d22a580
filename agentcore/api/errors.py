"""The one table that maps errors to JSON-RPC 2.0 error objects.

Every error object carries ``data.code`` (a stable string) and ``data.retryable``. Messages come
from ``AgentCoreError.message`` (written for callers) or are fixed here; exception text from
anywhere else never reaches a caller.
"""

from __future__ import annotations

from typing import Any

from agentcore.domain import errors as e

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Application errors: -32000..-32099, one number per code, never reused.
_APPLICATION_CODES: dict[type[e.AgentCoreError], int] = {
    e.InvalidLayer: -32001,
    e.InvalidScope: -32002,
    e.MissingIdentifier: -32003,
    e.MemoryNotFound: -32004,
    e.StageNotFound: -32005,
    e.TaskNotFound: -32006,
    e.ContentTooLong: -32007,
    e.QueryTooLong: -32008,
    e.EmbeddingFailed: -32009,
    e.ProviderError: -32010,
    e.RateLimited: -32011,
    e.Unauthorized: -32012,
    e.Forbidden: -32013,
    e.ConfigurationError: -32014,
    e.InvalidPromotion: -32015,
    e.InvalidState: -32016,
    e.BudgetExceeded: -32017,
    e.Conflict: -32018,
    e.InvalidParams: INVALID_PARAMS,
}

ERROR_CODES: dict[str, int] = {cls.code: number for cls, number in _APPLICATION_CODES.items()}


def error_object(
    number: int, message: str, code: str, retryable: bool, **data: Any
) -> dict[str, Any]:
    return {
        "code": number,
        "message": message,
        "data": {"code": code, "retryable": retryable, **data},
    }


def from_exception(exc: e.AgentCoreError) -> dict[str, Any]:
    number = _APPLICATION_CODES.get(type(exc), INTERNAL_ERROR)
    return error_object(number, exc.message, exc.code, exc.retryable, **exc.details)


def parse_error() -> dict[str, Any]:
    return error_object(PARSE_ERROR, "Parse error", "PARSE_ERROR", False)


def invalid_request(reason: str) -> dict[str, Any]:
    return error_object(INVALID_REQUEST, f"Invalid request: {reason}", "INVALID_REQUEST", False)


def method_not_found(method: str) -> dict[str, Any]:
    return error_object(
        METHOD_NOT_FOUND, f"Method not found: {method[:100]}", "METHOD_NOT_FOUND", False
    )


def invalid_params(errors: list[dict[str, str]]) -> dict[str, Any]:
    return error_object(INVALID_PARAMS, "Invalid params", "INVALID_PARAMS", False, errors=errors)


def internal_error() -> dict[str, Any]:
    return error_object(INTERNAL_ERROR, "Internal error", "INTERNAL_ERROR", True)
