"""Vector store adapters: embedded Qdrant (qdrant-edge) and Qdrant server (qdrant-client)."""

from __future__ import annotations

from agentcore.adapters.vectors.edge import EdgeVectorStore
from agentcore.adapters.vectors.qdrant_server import QdrantServerVectorStore

__all__ = ["EdgeVectorStore", "QdrantServerVectorStore"]
