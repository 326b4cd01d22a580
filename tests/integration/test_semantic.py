"""The semantic layer on the real embedded stack (SQLite + qdrant-edge) with the real local
embedder and the offline extractor: facts from two sessions of one user merge into one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.extractors import RuleBasedFactExtractor
from agentcore.api.handlers.semantic import semantic_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.clock import utcnow
from agentcore.domain.models import Layer, Memory, ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.memory_manager import ListRequest
from agentcore.services.retrieval import SearchQuery
from agentcore.services.semantic import SemanticMemoryService
from tests.conftest import migrate

USER = "u-42"


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalMiniLMEmbedder]:
    model = LocalMiniLMEmbedder()
    yield model
    asyncio.run(model.close())


@pytest.fixture
async def stack(tmp_path: Path, embedder: LocalMiniLMEmbedder) -> AsyncIterator[Container]:
    config = Settings(agentcore_data_dir=tmp_path)
    migrate(config.sqlalchemy_url)
    container = await build_container(config, embedder=embedder)
    try:
        yield container
    finally:
        await container.aclose()
        await container.vectors.close()


@pytest.fixture
def semantic(stack: Container) -> SemanticMemoryService:
    return SemanticMemoryService(
        stack.memory,
        stack.uow_factory,
        RuleBasedFactExtractor(),
        utcnow,
        capacity=stack.settings.semantic_memory_capacity,
    )


async def _said(stack: Container, content: str, session: str) -> Memory:
    scope = ScopeIds(user_id=USER, session_id=session)
    return await stack.memory.add(NewMemory(content, scope, scope_level="user"))


async def _facts(stack: Container) -> list[Memory]:
    request = ListRequest(scope=ScopeIds(user_id=USER), layer="semantic", limit=100)
    return (await stack.memory.list_page(request)).memories


async def test_one_preference_in_two_sessions_is_one_fact_with_both_sources(
    stack: Container, semantic: SemanticMemoryService
) -> None:
    first = await _said(stack, "I really love hiking in the mountains", "s1")
    [stored] = await semantic.extract_from([first])
    second = await _said(stack, "Hiking in the mountains is what I love most", "s2")
    [merged] = await semantic.extract_from([second])

    [fact] = await _facts(stack)
    assert fact.id == stored.id == merged.id
    assert fact.content == "The user loves hiking in the mountains"
    assert fact.layer is Layer.SEMANTIC
    assert fact.scope_key == f"user:{USER}"
    assert fact.metadata == {"category": "preference", "source_ids": [first.id, second.id]}
    question = "what outdoor activity does the user like?"
    query = SearchQuery(question, ScopeIds(user_id=USER), layers=["semantic"])
    found = await stack.memory.search(query)
    assert [r.memory.id for r in found.results] == [fact.id]


async def test_a_paraphrase_merges_but_the_opposite_does_not(
    stack: Container, semantic: SemanticMemoryService
) -> None:
    loves = await _said(stack, "I love hiking in the mountains.", "s1")
    enjoys = await _said(stack, "I enjoy hiking in the mountains.", "s2")  # cosine 0.96
    hates = await _said(stack, "I hate hiking in the mountains.", "s3")  # cosine 0.84
    for source in (loves, enjoys, hates):
        await semantic.extract_from([source])

    facts = {f.content: f.metadata["source_ids"] for f in await _facts(stack)}
    assert facts == {
        "The user loves hiking in the mountains": [loves.id, enjoys.id],
        "The user hates hiking in the mountains": [hates.id],
    }


async def test_memory_facts_extract_over_json_rpc(
    stack: Container, semantic: SemanticMemoryService
) -> None:
    endpoint = JsonRpcEndpoint(
        {m.name: m for m in semantic_methods(semantic)}, RpcMetrics(CollectorRegistry())
    )
    source = await _said(stack, "I'm allergic to peanuts. My sister is a nurse.", "s1")
    params = {"user_id": USER, "session_id": "s1", "memory_ids": [source.id]}
    body = {"jsonrpc": "2.0", "id": 7, "method": "memory.facts.extract", "params": params}

    reply = await endpoint.handle(json.dumps(body).encode())

    facts = reply["result"]["facts"]
    assert [(f["content"], f["critical"], f["metadata"]["category"]) for f in facts] == [
        ("The user is allergic to peanuts", True, "constraint"),
        ("The user's sister is a nurse", False, "fact"),
    ]
    assert all(f["scope"] == "user" and f["layer"] == "semantic" for f in facts)
