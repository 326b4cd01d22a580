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

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

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

    model_config = ConfigDict(arbitrary_types_allowed=True)

    url: str = DEFAULT_URL
    api_key: str | None = None
    scope: dict[str, str]
    k: int = Field(default=5, ge=1, le=100)
    layers: list[Layer] | None = None
    filter: dict[str, Any] | None = None
    threshold: float | None = None
    current_stage: str | None = None
    timeout: float = 30.0
    _sync: MemoryClient | None = PrivateAttr(default=None)
    _async: AsyncMemoryClient | None = PrivateAttr(default=None)

    def _params(self) -> Json:
        params: Json = {**self.scope, "limit": self.k}
        for name in ("layers", "filter", "threshold", "current_stage"):
            if (value := getattr(self, name)) is not None:
                params[name] = value
        return params

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self._sync is None:
            self._sync = MemoryClient(self.url, api_key=self.api_key, timeout=self.timeout)
        found = self._sync.search(query, **self._params())
        return [_document(hit) for hit in found["results"]]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self._async is None:
            self._async = AsyncMemoryClient(self.url, api_key=self.api_key, timeout=self.timeout)
        found = await self._async.search(query, **self._params())
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
    sync = MemoryClient(url, api_key=api_key, timeout=timeout)
    clients: dict[str, AsyncMemoryClient] = {}

    def aclient() -> AsyncMemoryClient:
        if "client" not in clients:
            clients["client"] = AsyncMemoryClient(url, api_key=api_key, timeout=timeout)
        return clients["client"]

    def add(
        content: str, layer: str = "semantic", tags: Sequence[str] = (), critical: bool = False
    ) -> tuple[str, Json]:
        found = sync.add(content, layer=layer, tags=list(tags), critical=critical, **ids)
        return f"Stored memory {found['memory_id']}.", found

    async def aadd(
        content: str, layer: str = "semantic", tags: Sequence[str] = (), critical: bool = False
    ) -> tuple[str, Json]:
        found = await aclient().add(content, layer=layer, tags=list(tags), critical=critical, **ids)
        return f"Stored memory {found['memory_id']}.", found

    def search(query: str, limit: int = 5, layers: list[str] | None = None) -> tuple[str, Json]:
        extra = {} if layers is None else {"layers": layers}
        found = sync.search(query, limit=limit, **extra, **ids)
        return _lines(found), found

    async def asearch(
        query: str, limit: int = 5, layers: list[str] | None = None
    ) -> tuple[str, Json]:
        extra = {} if layers is None else {"layers": layers}
        found = await aclient().search(query, limit=limit, **extra, **ids)
        return _lines(found), found

    def context(query: str, max_tokens: int = 1000) -> tuple[str, Json]:
        found = sync.context(max_tokens, query=query, **ids)
        return found["text"] or "Nothing remembered yet.", found

    async def acontext(query: str, max_tokens: int = 1000) -> tuple[str, Json]:
        found = await aclient().context(max_tokens, query=query, **ids)
        return found["text"] or "Nothing remembered yet.", found

    made = {
        "add": StructuredTool.from_function(
            add,
            aadd,
            name="add_memory",
            description="Remember a fact, event or procedure for later conversations.",
            args_schema=AddMemory,
            response_format="content_and_artifact",
        ),
        "search": StructuredTool.from_function(
            search,
            asearch,
            name="search_memory",
            description="Search long-term memory: the memories most relevant to a query, "
            "best first, with their ids.",
            args_schema=SearchMemory,
            response_format="content_and_artifact",
        ),
        "context": StructuredTool.from_function(
            context,
            acontext,
            name="memory_context",
            description="Everything remembered that matters for a task, as one block: "
            "critical facts, relevant memories, procedures and lessons from errors.",
            args_schema=MemoryContext,
            response_format="content_and_artifact",
        ),
    }
    return [made[name] for name in include]
