"""Fact extractor adapters: rule-based (offline, the embedded default) and LLM (OpenAI API)."""

from __future__ import annotations

from agentcore.adapters.extractors.offline import RuleBasedFactExtractor

__all__ = ["RuleBasedFactExtractor"]
