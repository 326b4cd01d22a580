"""The two clients: ``AsyncMemoryClient`` (httpx.AsyncClient) and ``MemoryClient`` (httpx.Client).

Both take the service's address (``http://host:port``, with or without ``/rpc``), an API key
(sent as ``Authorization: Bearer``), a timeout in seconds per attempt, and the retry settings of
``RetryPolicy``. Every method of ``Methods`` returns the call's result (a dict) or raises
``RpcError``; ``call(method, **params)`` reaches any method by its RPC name.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from types import TracebackType
from typing import Any, Self

import httpx

from agentcore.client.methods import Json, Methods
from agentcore.client.protocol import (
    DEFAULT_URL,
    Requests,
    RetryPolicy,
    RpcError,
    auth_headers,
    result_of,
    rpc_url,
)

_FAILURES = (RpcError, httpx.TransportError, httpx.HTTPStatusError)


class AsyncMemoryClient(Methods[Awaitable[dict[str, Any]]]):
    """The async client: ``async with AsyncMemoryClient(url) as memory: await memory.add(...)``."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.25,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = rpc_url(url)
        self.retry = RetryPolicy(retries, backoff)
        self._requests = Requests()
        self._http = httpx.AsyncClient(
            timeout=timeout, transport=transport, headers=auth_headers(api_key)
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, /, **params: Any) -> Any:
        """Call any method by its RPC name with named params; its result or ``RpcError``."""
        return await self._call(method, params)

    async def _call(self, method: str, params: Json) -> Any:
        attempt = 0
        while True:
            try:
                body = self._requests.body(method, params)
                return result_of(await self._http.post(self.url, json=body))
            except _FAILURES as exc:
                wait = self.retry.delay(attempt, method, exc)
                if wait is None:
                    raise
            await asyncio.sleep(wait)
            attempt += 1


class MemoryClient(Methods[dict[str, Any]]):
    """The sync client: ``with MemoryClient(url) as memory: memory.add(...)``."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.25,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = rpc_url(url)
        self.retry = RetryPolicy(retries, backoff)
        self._requests = Requests()
        self._http = httpx.Client(
            timeout=timeout, transport=transport, headers=auth_headers(api_key)
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def call(self, method: str, /, **params: Any) -> Any:
        """Call any method by its RPC name with named params; its result or ``RpcError``."""
        return self._call(method, params)

    def _call(self, method: str, params: Json) -> Any:
        attempt = 0
        while True:
            try:
                body = self._requests.body(method, params)
                return result_of(self._http.post(self.url, json=body))
            except _FAILURES as exc:
                wait = self.retry.delay(attempt, method, exc)
                if wait is None:
                    raise
            time.sleep(wait)
            attempt += 1
