"""LangChain over a running AgentCore Memory service (``langchain-core`` only):

- ``AgentCoreRetriever``: a ``BaseRetriever`` whose documents are the memories
  ``memory.search`` ranks for the query in the scopes it names (``Document.id`` the memory's
  id; ``metadata`` its score, similarity, factors, layer, scope, tags and own metadata);
- ``memory_tools(...)``: the memory operations as tools an agent calls with typed arguments:
  ``add_memory``, ``search_memory`` and ``memory_context``, bound to the scope they are made
  for (the model never chooses whose memory it reads).

    retriever = AgentCoreRetriever(url="http://127.0.0.1:8080", scope={"user_id": "alice"})
    retriever.invoke("where does Alice live?")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcore.client import AsyncMemoryClient, MemoryClient
from agentcore.client.protocol import DEFAULT_URL
from agentcore.integrations import missing_extra

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import BaseTool, StructuredTool
except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
    raise missing_extra("langchain", "langchain-core") from exc

Json = dict[str, Any]
Layer = Literal["episodic", "semantic", "procedural"]


def _document(hit: Json) -> Document:
    memory = hit["memory"]
    return Document(
        id=memory["id"],
        page_content=memory["content"],
        metadata={
            "memory_id": memory["id"],
            "score": hit["score"],
            "similarity": hit["similarity"],
            "factors": hit["factors"],
            "layer": hit["layer"],
            "scope": hit["scope"],
            "tags": memory["tags"],
            "created_at": memory["created_at"],
            "superseded_by": hit["superseded_by"],
            "metadata": memory["metadata"],
        },
    )


class AgentCoreRetriever(BaseRetriever):
    """Memories ranked by the service for a query (module doc). ``scope`` holds the scope ids
    (``user_id``, ``agent_id``, ``session_id``, …); ``layers``, ``filter`` (mem0's grammar, as
    ``memory.search`` takes it), ``threshold`` and ``current_stage`` narrow and steer it."""

    url: str = DEFAULT_URL
    api_key: str | None = None
    scope: dict[str, str]
    k: int = Field(default=5, ge=1, le=100)
    layers: list[Layer] | None = None
    filter: dict[str, Any] | None = None
    threshold: float | None = None
    current_stage: str | None = None
    timeout: float = 30.0

    def _params(self) -> Json:
        params: Json = {**self.scope, "limit": self.k}
        for name in ("layers", "filter", "threshold", "current_stage"):
            if (value := getattr(self, name)) is not None:
                params[name] = value
        return params

    # A client per call: a retriever has no close, and a call is one request.
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        with MemoryClient(self.url, api_key=self.api_key, timeout=self.timeout) as client:
            found = client.search(query, **self._params())
        return [_document(hit) for hit in found["results"]]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        async with AsyncMemoryClient(
            self.url, api_key=self.api_key, timeout=self.timeout
        ) as client:
            found = await client.search(query, **self._params())
        return [_document(hit) for hit in found["results"]]


class AddMemory(BaseModel):
    content: str = Field(description="what to remember, as one self-contained statement")
    layer: Layer = Field(
        "semantic",
        description="semantic: a fact or preference; episodic: something that happened; "
        "procedural: how to do something",
    )
    tags: list[str] = Field(default_factory=list, description="labels to find it by")
    critical: bool = Field(False, description="a constraint that must never be forgotten")


class SearchMemory(BaseModel):
    query: str = Field(description="what you want to know, in words")
    limit: int = Field(5, ge=1, le=50, description="how many memories at most")
    layers: list[Layer] | None = Field(None, description="only these layers")


class MemoryContext(BaseModel):
    query: str = Field(description="the task or question the context is for")
    max_tokens: int = Field(1000, ge=50, le=32_000, description="the context's size")


def _lines(found: Json) -> str:
    hits = found["results"]
    if not hits:
        return "No memories found."
    return "\n".join(
        f"[{h['memory']['id']}] ({h['layer']}, score {h['score']:.2f}) {h['memory']['content']}"
        for h in hits
    )


def memory_tools(
    scope: Mapping[str, str],
    *,
    url: str = DEFAULT_URL,
    api_key: str | None = None,
    timeout: float = 30.0,
    include: Sequence[Literal["add", "search", "context"]] = ("add", "search", "context"),
) -> list[BaseTool]:
    """The memory operations of ``scope`` as LangChain tools (module doc). Each answers the
    model with text and keeps the service's result as the tool message's artifact."""
    ids = dict(scope)

    def tool(
        name: str,
        description: str,
        schema: type[BaseModel],
        method: str,
        reply: Callable[[Json], str],
    ) -> BaseTool:
        # A client per call (a tool has no close); the arguments are the schema's, checked.
        def run(**args: Any) -> tuple[str, Json]:
            with MemoryClient(url, api_key=api_key, timeout=timeout) as client:
                found = client.call(method, **args, **ids)
            return reply(found), found

        async def arun(**args: Any) -> tuple[str, Json]:
            async with AsyncMemoryClient(url, api_key=api_key, timeout=timeout) as client:
                found = await client.call(method, **args, **ids)
            return reply(found), found

        return StructuredTool.from_function(
            run,
            arun,
            name=name,
            description=description,
            args_schema=schema,
            response_format="content_and_artifact",
        )

    made = {
        "add": lambda: tool(
            "add_memory",
            "Remember a fact, event or procedure for later conversations.",
            AddMemory,
            "memory.add",
            lambda found: f"Stored memory {found['memory_id']}.",
        ),
        "search": lambda: tool(
            "search_memory",
            "Search long-term memory: the memories most relevant to a query, best first, "
            "with their ids.",
            SearchMemory,
            "memory.search",
            _lines,
        ),
        "context": lambda: tool(
            "memory_context",
            "Everything remembered that matters for a task, as one block: critical facts, "
            "relevant memories, procedures and lessons from errors.",
            MemoryContext,
            "memory.context",
            lambda found: found["text"] or "Nothing remembered yet.",
        ),
    }
    return [made[name]() for name in include]
