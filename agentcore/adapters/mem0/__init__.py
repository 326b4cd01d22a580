"""mem0ai as an alternative memory provider (``Mem0VectorStore``) and as the LLM fact
extractor (``Mem0FactExtractor``); ``Mem0Client`` configures mem0 from our settings."""

from __future__ import annotations

from agentcore.adapters.mem0.client import EmbedderBridge, Mem0Client, Mem0LLMOptions
from agentcore.adapters.mem0.extractor import Mem0FactExtractor
from agentcore.adapters.mem0.vector_store import Mem0VectorStore

__all__ = [
    "EmbedderBridge",
    "Mem0Client",
    "Mem0FactExtractor",
    "Mem0LLMOptions",
    "Mem0VectorStore",
]
