"""Clients of the JSON-RPC API: ``AsyncMemoryClient`` and the sync ``MemoryClient``, one Python
method for every RPC method (``agentcore.client.methods``), retries on retryable errors
(``agentcore.client.protocol``) and API keys."""

from agentcore.client.clients import AsyncMemoryClient, MemoryClient
from agentcore.client.methods import method_name
from agentcore.client.protocol import DEFAULT_URL, SAFE_TO_REPEAT, RetryPolicy, RpcError, rpc_url

__all__ = [
    "DEFAULT_URL",
    "SAFE_TO_REPEAT",
    "AsyncMemoryClient",
    "MemoryClient",
    "RetryPolicy",
    "RpcError",
    "method_name",
    "rpc_url",
]
