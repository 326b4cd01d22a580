"""Embedder adapters: all-MiniLM-L6-v2 run locally on onnxruntime, and OpenAI's embeddings API."""

from __future__ import annotations

from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.embedders.openai_embedder import OpenAIEmbedder

__all__ = ["LocalMiniLMEmbedder", "OpenAIEmbedder"]
