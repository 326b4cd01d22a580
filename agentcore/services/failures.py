"""How a background step reports a failure: an outage on one line, a defect with its traceback."""

from __future__ import annotations

import logging

from agentcore.domain.errors import AgentCoreError


def log_failure(log: logging.Logger, what: str, exc: BaseException) -> None:
    """A retryable ``AgentCoreError`` (a store out of reach, a provider down) is a condition the
    step outlives: one warning line. Anything else is a defect: logged with its traceback."""
    if isinstance(exc, AgentCoreError) and exc.retryable:
        log.warning("%s: %s", what, exc.message)
    else:
        log.error("%s", what, exc_info=exc)
