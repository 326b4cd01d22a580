"""OpenAI (and OpenAI-compatible) failures as our errors, for every adapter that calls the API."""

from __future__ import annotations

import openai

from agentcore.domain.errors import AgentCoreError, RateLimited, Unauthorized


def map_openai_error(
    exc: openai.OpenAIError, provider: str, failure: type[AgentCoreError]
) -> AgentCoreError:
    """A short, safe error naming ``provider`` (e.g. "the embedding provider"); ``failure`` is
    the retryable error class for outages. The provider's own text can echo input or keys, so
    it is never copied."""
    if isinstance(exc, openai.RateLimitError):
        retry_after = exc.response.headers.get("retry-after")
        details = {"retry_after": retry_after} if retry_after else {}
        return RateLimited(f"{provider} is rate limiting requests", **details)
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return Unauthorized(f"{provider} rejected the API key")
    if isinstance(exc, openai.APITimeoutError):
        return failure(f"{provider} timed out")
    if isinstance(exc, openai.APIConnectionError):
        return failure(f"cannot reach {provider}")
    if isinstance(exc, openai.APIStatusError):
        return failure(f"{provider} failed (HTTP {exc.status_code})", status=exc.status_code)
    return failure(f"{provider} failed")
