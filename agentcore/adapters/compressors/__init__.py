"""Compression engines behind ``agentcore.services.compression.CompressionEngine``: extractive
(no model, the embedded default) and LLM (``compressors.llm.LLMEngine``: COMPRESSION_MODEL over
an OpenAI-compatible API, imported from its module so the offline path never loads openai)."""

from __future__ import annotations

from agentcore.adapters.compressors.extractive import ExtractiveEngine

__all__ = ["ExtractiveEngine"]
