"""A small async client for the JSON-RPC API, used by the CLI and the end-to-end tests."""

from __future__ import annotations

import itertools
from types import TracebackType
from typing import Any, Self

import httpx


class RpcError(Exception):
    """An error object returned by the service."""

    def __init__(self, number: int, message: str, data: dict[str, Any] | None) -> None:
        super().__init__(f"{message} ({number})")
        self.number = number
        self.message = message
        self.data = data or {}

    @property
    def code(self) -> str:
        return str(self.data.get("code", "UNKNOWN"))


class MemoryClient:
    def __init__(
        self,
        url: str = "http://127.0.0.1:8080/rpc",
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        api_key: str | None = None,
    ) -> None:
        headers = {} if api_key is None else {"authorization": f"Bearer {api_key}"}
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport, headers=headers)
        self._url = url
        self._ids = itertools.count(1)

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

    async def call(self, method: str, **params: Any) -> Any:
        """Call one method with named params; returns its result or raises RpcError."""
        body = {"jsonrpc": "2.0", "method": method, "params": params, "id": next(self._ids)}
        response = await self._http.post(self._url, json=body)
        if response.status_code != 401:  # an unknown key is answered with its error object
            response.raise_for_status()
        reply = response.json()
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error["code"], error["message"], error.get("data"))
        return reply["result"]

    async def add(self, content: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("memory.add", content=content, **params)
        return result

    async def get(self, memory_id: str, **scope: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("memory.get", memory_id=memory_id, **scope)
        return result

    async def search(self, query: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("memory.search", query=query, **params)
        return result

    async def list_memories(self, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("memory.list", **params)
        return result

    async def delete(self, memory_id: str, **scope: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("memory.delete", memory_id=memory_id, **scope)
        return result
