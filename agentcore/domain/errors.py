"""One error hierarchy. Each error carries a stable string code and whether a retry can help.

The mapping to JSON-RPC error numbers lives in ``agentcore.api.errors``; nothing else in the
project chooses a wire code.
"""

from __future__ import annotations

from typing import Any


class AgentCoreError(Exception):
    """Base of every error a caller may see. ``message`` is safe to show to a caller."""

    code = "INTERNAL_ERROR"
    retryable = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidParams(AgentCoreError):
    """Well-typed params that break a rule (JSON-RPC -32602). ``details['errors']`` names fields."""

    code = "INVALID_PARAMS"


class InvalidLayer(AgentCoreError):
    code = "INVALID_LAYER"


class InvalidScope(AgentCoreError):
    code = "INVALID_SCOPE"


class MissingIdentifier(AgentCoreError):
    code = "MISSING_IDENTIFIER"


class MemoryNotFound(AgentCoreError):
    code = "MEMORY_NOT_FOUND"


class StageNotFound(AgentCoreError):
    code = "STAGE_NOT_FOUND"


class TaskNotFound(AgentCoreError):
    code = "TASK_NOT_FOUND"


class ContentTooLong(AgentCoreError):
    code = "CONTENT_TOO_LONG"


class QueryTooLong(AgentCoreError):
    code = "QUERY_TOO_LONG"


class EmbeddingFailed(AgentCoreError):
    code = "EMBEDDING_FAILED"
    retryable = True


class ProviderError(AgentCoreError):
    code = "PROVIDER_ERROR"
    retryable = True


class RateLimited(AgentCoreError):
    code = "RATE_LIMITED"
    retryable = True


class Unauthorized(AgentCoreError):
    code = "UNAUTHORIZED"


class Forbidden(AgentCoreError):
    code = "FORBIDDEN"


class ConfigurationError(AgentCoreError):
    code = "CONFIGURATION_ERROR"


class InvalidPromotion(AgentCoreError):
    code = "INVALID_PROMOTION"


class InvalidState(AgentCoreError):
    code = "INVALID_STATE"


class BudgetExceeded(AgentCoreError):
    code = "BUDGET_EXCEEDED"


class Conflict(AgentCoreError):
    code = "CONFLICT"


def error_from_code(code: str, message: str) -> AgentCoreError:
    """The error of that stable code (e.g. carried in a background job's status)."""
    pending: list[type[AgentCoreError]] = [AgentCoreError]
    while pending:
        cls = pending.pop()
        if cls.code == code:
            return cls(message)
        pending.extend(cls.__subclasses__())
    return AgentCoreError(message)
