"""Frameworks' interfaces over a running AgentCore Memory service: ``langgraph`` (LangGraph's
``BaseStore``) and ``langchain`` (a retriever and memory tools). Each needs its extra:
``pip install 'agentcore-memory[langgraph]'`` or
``'agentcore-memory[langchain]'`` (the plain install pulls neither)."""

from __future__ import annotations


def missing_extra(extra: str, package: str) -> ImportError:
    """The error an integration raises when its framework is not installed."""
    return ImportError(
        f"agentcore.integrations.{extra} needs {package}: pip install 'agentcore-memory[{extra}]'"
    )
