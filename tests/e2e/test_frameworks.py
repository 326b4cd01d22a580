"""Agents built with LangGraph, LangMem and LangChain keeping their memory in a real
``agentcore serve`` (embedded, and PostgreSQL + Redis): LangMem's memory tools on
``AgentCoreStore``, a compiled graph whose nodes remember across two threads of one user, and
LangChain's retriever and tools. No model is called: the tools and nodes are what runs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langchain_core.documents import Document
from langchain_core.messages import ToolCall
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langmem import create_manage_memory_tool, create_search_memory_tool
from pydantic import ValidationError

from agentcore.client import MemoryClient
from agentcore.integrations.langchain import AgentCoreRetriever, memory_tools
from agentcore.integrations.langgraph import AgentCoreStore
from tests.e2e.conftest import BOTH, served
from tests.server_process import Server


@pytest.fixture(scope="module", params=BOTH)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with served(request, tmp_path_factory, {"AGENTCORE_ALLOW_OPEN": "true"}) as running:
        yield running


@pytest.fixture
def user() -> str:
    return f"user-{uuid.uuid4().hex[:8]}"


def test_langmem_tools_on_the_store(server: Server, user: str) -> None:
    with AgentCoreStore(server.base, user_label=1) as store:
        namespace = ("memories", "{langgraph_user_id}")
        manage = create_manage_memory_tool(namespace=namespace, store=store)
        search = create_search_memory_tool(namespace=namespace, store=store)
        config: Any = {"configurable": {"langgraph_user_id": user}}
        said = manage.invoke(
            {"content": "Prefers vegetarian restaurants", "action": "create"}, config
        )
        manage.invoke({"content": "Has a dog called Biscuit", "action": "create"}, config)
        manage.invoke(
            {"content": "Is training for the Lisbon half marathon", "action": "create"}, config
        )
        memory_id = said.split()[-1]
        found = json.loads(search.invoke({"query": "what food does the user like?"}, config))
        assert found[0]["value"] == {"content": "Prefers vegetarian restaurants"}
        assert found[0]["key"] == memory_id
        assert found[0]["score"] is not None
        manage.invoke(
            {
                "content": "Eats fish again, no longer vegetarian",
                "action": "update",
                "id": memory_id,
            },
            config,
        )
        item = store.get(("memories", user), memory_id)
        assert item is not None
        assert item.value == {"content": "Eats fish again, no longer vegetarian"}
        manage.invoke({"action": "delete", "id": memory_id}, config)
        assert store.get(("memories", user), memory_id) is None
        # The async forms, through the grouped requests.

        async def pets() -> Any:
            found = await search.ainvoke({"query": "pets"}, config)
            await store.aclose()  # the loop's connections, before the loop ends
            return found

        assert json.loads(asyncio.run(pets()))[0]["value"] == {
            "content": "Has a dog called Biscuit"
        }
    # The user's own memories: what memory.search of the user sees.
    with MemoryClient(server.base) as client:
        hits = client.search("dog's name", user_id=user)["results"]
        assert hits[0]["memory"]["content"] == "Has a dog called Biscuit"


class State(TypedDict, total=False):
    user_id: str
    said: str
    recalled: list[str]


def _graph(store: AgentCoreStore) -> Any:
    def remember(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        if "I " in state["said"]:  # what the user tells about themselves
            key = uuid.uuid5(uuid.NAMESPACE_URL, state["said"]).hex
            runtime.store.put(("memories", state["user_id"]), key, {"content": state["said"]})
        return {}

    def recall(state: State, runtime: Runtime[None]) -> State:
        assert runtime.store is not None
        found = runtime.store.search(("memories", state["user_id"]), query=state["said"], limit=2)
        return {"recalled": [item.value["content"] for item in found]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store, checkpointer=InMemorySaver())


def test_a_graph_remembers_across_threads(server: Server, user: str) -> None:
    with AgentCoreStore(server.base, user_label=1) as store:
        graph = _graph(store)
        first = {"configurable": {"thread_id": "thread-1"}}
        graph.invoke({"user_id": user, "said": "I moved to Porto last month"}, first)
        graph.invoke({"user_id": user, "said": "I work night shifts as a nurse"}, first)
        second = {"configurable": {"thread_id": "thread-2"}}
        answer = graph.invoke({"user_id": user, "said": "Which city do they live in now?"}, second)
        assert answer["recalled"][0] == "I moved to Porto last month"

        async def job() -> Any:
            found = await graph.ainvoke({"user_id": user, "said": "What is their job?"}, second)
            await store.aclose()
            return found

        answer = asyncio.run(job())
        assert answer["recalled"][0] == "I work night shifts as a nurse"
        other = graph.invoke({"user_id": f"{user}-other", "said": "Where do they live?"}, second)
        assert other["recalled"] == []  # another user's namespace holds nothing of this one


def test_retriever_and_tools(server: Server, user: str) -> None:
    with MemoryClient(server.base) as client:
        client.add("Alice's sister Maria lives in Berlin", user_id=user, tags=["family"])
        client.add("Alice is allergic to penicillin", user_id=user, critical=True)
        client.add("Alice booked a table at Casa Lisboa for Friday", user_id=user)
    retriever = AgentCoreRetriever(url=server.base, scope={"user_id": user}, k=2)
    docs = retriever.invoke("Where does her sister live?")
    assert isinstance(docs[0], Document)
    assert docs[0].page_content == "Alice's sister Maria lives in Berlin"
    assert docs[0].id == docs[0].metadata["memory_id"]
    assert docs[0].metadata["scope"] == "user"
    assert docs[0].metadata["layer"] == "episodic"
    assert docs[0].metadata["tags"] == ["family"]
    assert set(docs[0].metadata["factors"]) >= {"similarity", "recency"}
    assert len(docs) == 2
    adocs = asyncio.run(retriever.ainvoke("Is Alice allergic to any medicine?"))
    assert adocs[0].page_content == "Alice is allergic to penicillin"  # not the newer booking
    filtered = AgentCoreRetriever(
        url=server.base, scope={"user_id": user}, filter={"tags": {"any": ["family"]}}
    ).invoke("restaurants")
    assert [d.page_content for d in filtered] == ["Alice's sister Maria lives in Berlin"]

    add, search, context = memory_tools({"user_id": user}, url=server.base)
    assert [t.name for t in (add, search, context)] == [
        "add_memory",
        "search_memory",
        "memory_context",
    ]
    assert set(add.args) == {"content", "layer", "tags", "critical"}
    stored = add.invoke(
        ToolCall(
            name="add_memory",
            args={"content": "Alice prefers window seats", "layer": "semantic"},
            id="call-1",
            type="tool_call",
        )
    )
    assert stored.content.startswith("Stored memory ")
    assert stored.artifact["memory"]["layer"] == "semantic"
    text = search.invoke({"query": "seat preference", "limit": 1})
    assert "Alice prefers window seats" in text
    block = asyncio.run(context.ainvoke({"query": "plan Alice's flight", "max_tokens": 300}))
    assert "Alice is allergic to penicillin" in block  # critical facts always come along
    with pytest.raises(ValidationError):
        search.invoke({"query": "x", "limit": 0})  # typed arguments are checked
