"""What both clients share: the request body, reading a reply, and when a failed call is retried.

Retries. A call is retried (at most ``retries`` times, waiting ``backoff`` seconds, doubled
each time, with jitter, up to ``max_backoff``; longer when the service says ``retry_after``)
when a retry cannot repeat what already happened:

- the connection could not be opened (nothing was sent): every method;
- the service answered an error with ``data.retryable: true`` (an outage of a store, a rate
  limit): it changed nothing, so every method, except ``INTERNAL_ERROR`` (it does not say how
  far the call got) and an error naming the ``memory_id`` it stored (``memory.add`` with
  ``infer``: the memory is kept, the fact extraction failed; retry ``memory.facts.extract``);
- the connection broke or timed out after the request was sent, or a proxy answered 502/503/504,
  or ``INTERNAL_ERROR``: only methods that are safe to repeat (reads, and writes whose repeat
  leaves the same state: ``put``, ``update``, ``delete``, ``import`` ...). ``memory.add`` has
  no idempotency key, so it is not repeated then: the error is raised, and the caller can look
  for the memory before adding it again.

An error that is not retryable (bad params, not found, forbidden) is raised at once.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import httpx

DEFAULT_URL = "http://127.0.0.1:8080"

# Methods whose second run leaves what the first left: repeated after an unclear failure.
SAFE_TO_REPEAT = frozenset(
    {
        "rpc.discover",
        "memory.health",
        "memory.get",
        "memory.list",
        "memory.search",
        "memory.history",
        "memory.update",
        "memory.delete",
        "memory.clear",
        "memory.put",
        "memory.store.batch",  # gets, searches and puts that replace: the same again
        "memory.get_value",
        "memory.list_keys",
        "memory.search_keys",
        "memory.delete_key",
        "memory.working.get",
        "memory.working.clear",
        "memory.working.flush",
        "memory.episodes.list",
        "memory.episodes.get",
        "memory.episodes.search",
        "memory.procedure.search",
        "memory.stage.current",
        "memory.stage.get",
        "memory.task.progress",
        "memory.task.context",
        "memory.job.get",
        "memory.error.history",
        "memory.error.patterns",
        "memory.ace.strategic_context",
        "memory.ace.interventions",
        "memory.cost.report",
        "memory.route_context",
        "memory.artifact.list",
        "memory.export",
        "memory.import",
    }
)

_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_GATEWAY_STATUSES = frozenset({502, 503, 504})


class RpcError(Exception):
    """An error object returned by the service: ``number`` is the JSON-RPC code, ``code`` the
    stable string (``MEMORY_NOT_FOUND``, ...), ``data`` everything the service added. The
    exception's text is the message and number, then the first ``SHOWN_FIELD_ERRORS`` failing
    fields of ``data.errors`` (``Invalid params (-32602): content: String should have at
    least 1 character``); ``field_errors`` has them all."""

    SHOWN_FIELD_ERRORS = 3

    def __init__(self, number: int, message: str, data: dict[str, Any] | None) -> None:
        self.number = number
        self.message = message
        self.data = data or {}
        text = f"{message} ({number})"
        problems = self.field_errors
        if problems:
            shown = problems[: self.SHOWN_FIELD_ERRORS]
            more = len(problems) - len(shown)
            text += ": " + "; ".join(shown) + (f"; and {more} more" if more else "")
        super().__init__(text)

    @property
    def field_errors(self) -> list[str]:
        """``field: message`` for each entry of ``data.errors`` (invalid params)."""
        entries = self.data.get("errors")
        if not isinstance(entries, list):
            return []
        return [
            f"{e.get('field')}: {e.get('message')}" if isinstance(e, dict) else str(e)
            for e in entries
        ]

    @property
    def code(self) -> str:
        return str(self.data.get("code", "UNKNOWN"))

    @property
    def retryable(self) -> bool:
        return self.data.get("retryable") is True


def rpc_url(url: str) -> str:
    """``http://host:port`` or ``http://host:port/rpc`` (a trailing slash is fine) → the latter."""
    base = url.rstrip("/")
    return base if base.endswith("/rpc") else base + "/rpc"


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {} if api_key is None else {"authorization": f"Bearer {api_key}"}


class Requests:
    """Numbers the requests of one client."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def body(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": method, "params": params, "id": next(self._ids)}


def result_of(response: httpx.Response) -> Any:
    """The result of a JSON-RPC reply; raises ``RpcError`` for its error object (whatever the
    HTTP status: a refused key is answered 401 with one), ``httpx.HTTPStatusError`` for an HTTP
    error without one (a proxy's 502)."""
    try:
        reply = response.json()
    except ValueError:
        reply = None
    if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
        error = reply["error"]
        raise RpcError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data"))
    response.raise_for_status()
    if not isinstance(reply, dict) or "result" not in reply:
        raise RpcError(-32603, "the service's reply is not JSON-RPC", {"code": "INVALID_REPLY"})
    return reply["result"]


class RetryPolicy:
    def __init__(self, retries: int = 3, backoff: float = 0.25, max_backoff: float = 8.0) -> None:
        if retries < 0 or backoff < 0:
            raise ValueError("retries and backoff cannot be negative")
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff

    def delay(self, attempt: int, method: str, error: Exception) -> float | None:
        """Seconds to wait before retrying after ``attempt`` (0 for the first call) failed
        with ``error``, or None: raise it."""
        if attempt >= self.retries or not _retryable(method, error):
            return None
        wait = min(self.max_backoff, self.backoff * 2.0**attempt) * random.uniform(0.5, 1.0)
        if isinstance(error, RpcError):
            retry_after = error.data.get("retry_after")
            if isinstance(retry_after, int | float):
                wait = max(wait, float(retry_after))
        return wait


def _retryable(method: str, error: Exception) -> bool:
    if isinstance(error, _NOT_SENT):
        return True
    repeatable = method in SAFE_TO_REPEAT
    if isinstance(error, RpcError):
        if not error.retryable:
            return False
        # Not safe to repeat: only when the error says the call changed nothing.
        return repeatable or (error.code != "INTERNAL_ERROR" and "memory_id" not in error.data)
    if isinstance(error, httpx.HTTPStatusError):
        return repeatable and error.response.status_code in _GATEWAY_STATUSES
    return repeatable and isinstance(error, httpx.TransportError)
