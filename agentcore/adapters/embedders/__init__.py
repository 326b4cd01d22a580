"""Embedder adapters: multilingual-e5-small and all-MiniLM-L6-v2 run locally on onnxruntime,
and OpenAI's embeddings API."""

from __future__ import annotations

from agentcore.adapters.embedders.local_e5 import LocalE5Embedder
from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.embedders.openai_embedder import OpenAIEmbedder

__all__ = ["LocalE5Embedder", "LocalMiniLMEmbedder", "OpenAIEmbedder"]
