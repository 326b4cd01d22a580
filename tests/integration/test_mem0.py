"""mem0 integration: the fact extractor against a local OpenAI-compatible server (Starlette on
uvicorn, loopback) with scripted replies in mem0's format, the real local embedder; and mem0 as
the vector store behind the whole embedded stack. The vector-store contract itself runs in
test_vector_store_contract.py."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.mem0 import (
    EmbedderBridge,
    Mem0Client,
    Mem0FactExtractor,
    Mem0LLMOptions,
    Mem0VectorStore,
)
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.clock import utcnow
from agentcore.domain.errors import (
    AgentCoreError,
    ConfigurationError,
    ProviderError,
    RateLimited,
    Unauthorized,
)
from agentcore.domain.models import Layer, ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.domain.usage import TokenUsage
from agentcore.services.retrieval import SearchQuery
from agentcore.services.semantic import (
    ExtractedFact,
    Extraction,
    FactCategory,
    SemanticMemoryService,
    SourceText,
)
from tests.conftest import migrate
from tests.openai_chat_stub import API_KEY, FakeOpenAI, Reply, chat_server

MODEL = "gpt-4.1-mini"
TABLES = ("history", "messages")
TEXTS = [
    SourceText("mem-a", "I really love hiking in the mountains", "Caroline", "user",
               datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    SourceText("mem-b", "I'm allergic to peanuts, so no satay for me", "Caroline", "user"),
]  # fmt: skip
HIKING = {
    "id": "0",
    "text": "Caroline loves hiking in the mountains",
    "attributed_to": "user",
    "source_ids": ["m1"],
    "category": "preference",
    "critical": False,
    "importance": 0.6,
}
PEANUTS = {
    "id": "1",
    "text": "Caroline is allergic to peanuts",
    "attributed_to": "user",
    "source_ids": ["m2", "m2"],
    "category": "constraint",
    "critical": True,
    "importance": 0.9,
}
GOOD = json.dumps({"memory": [HIKING, PEANUTS]})
EXPECTED = [
    ExtractedFact(
        "Caroline loves hiking in the mountains", FactCategory.PREFERENCE, 0.6, False, ("mem-a",)
    ),
    ExtractedFact(
        "Caroline is allergic to peanuts", FactCategory.CONSTRAINT, 0.9, True, ("mem-b",)
    ),
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with chat_server(FakeOpenAI(default=GOOD)) as state:
        yield state


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    return server.reset()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Mem0Client]:
    mem0 = Mem0Client(tmp_path)
    yield mem0
    mem0.close()


def _options(url: str) -> Mem0LLMOptions:
    return Mem0LLMOptions(MODEL, API_KEY, url, timeout=10, max_retries=0)


@pytest.fixture
async def extractor(
    client: Mem0Client, embedder: LocalMiniLMEmbedder, fake: FakeOpenAI
) -> AsyncIterator[Mem0FactExtractor]:
    extractor = Mem0FactExtractor(client, embedder, _options(fake.url))
    yield extractor
    await extractor.close()


def _user_prompt(request: dict[str, Any]) -> str:
    content: str = request["messages"][1]["content"]
    return content


def _rows(client: Mem0Client) -> int:
    """Rows in mem0's history database (its history and messages tables)."""
    with closing(sqlite3.connect(client.history_db_path)) as db:
        counts = [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES]
    return sum(counts)


async def test_facts_keep_their_sources_categories_and_usage(
    extractor: Mem0FactExtractor, fake: FakeOpenAI
) -> None:
    result = await extractor.extract(TEXTS)

    assert isinstance(result, Extraction)
    assert list(result) == EXPECTED
    assert result.usage == TokenUsage(MODEL, prompt_tokens=100, completion_tokens=20)
    [request] = fake.requests
    assert request["model"] == MODEL
    assert request["response_format"] == {"type": "json_object"}
    assert "Memory Extractor" in request["messages"][0]["content"]  # mem0's own prompt
    prompt = _user_prompt(request)
    assert "[m1 | Caroline | 2023-05-08] I really love hiking in the mountains" in prompt
    assert "[m2 | Caroline | unknown] I'm allergic to peanuts" in prompt
    assert '"source_ids"' in prompt.split("## Custom Instructions")[1]


async def test_mem0_keeps_no_copy_and_a_repeated_fact_is_extracted_again(
    extractor: Mem0FactExtractor, client: Mem0Client, fake: FakeOpenAI
) -> None:
    import mem0.memory.telemetry

    first = await extractor.extract(TEXTS)
    assert _rows(client) == 0  # no messages, no history: the facts live in our store
    second = await extractor.extract(TEXTS)

    assert list(first) == list(second) == EXPECTED  # mem0 would skip a fact it holds
    again = _user_prompt(fake.requests[1])
    assert "## Existing Memories\n[]" in again
    assert "## Last k Messages\n\n" in again  # no earlier call's messages leak in
    assert mem0.memory.telemetry.MEM0_TELEMETRY is False


async def test_a_single_source_may_go_unnamed(
    extractor: Mem0FactExtractor, fake: FakeOpenAI
) -> None:
    bare = {"id": "0", "text": "Caroline loves hiking", "category": "preference"}
    fake.script.append(Reply(json.dumps({"memory": [bare]})))

    result = await extractor.extract(TEXTS[:1])

    fact = ExtractedFact("Caroline loves hiking", FactCategory.PREFERENCE, 0.6, False, ("mem-a",))
    assert list(result) == [fact]


async def test_a_fenced_reply_is_read_as_mem0_reads_it(
    extractor: Mem0FactExtractor, fake: FakeOpenAI
) -> None:
    fake.script.append(Reply(f"```json\n{GOOD}\n```"))
    assert list(await extractor.extract(TEXTS)) == EXPECTED
    assert len(fake.requests) == 1


async def test_malformed_json_is_retried_and_the_retry_succeeds(
    extractor: Mem0FactExtractor, fake: FakeOpenAI
) -> None:
    fake.script.append(Reply('{"memory": [{"text": "Caroline loves hik'))

    result = await extractor.extract(TEXTS)

    assert list(result) == EXPECTED
    assert result.usage == TokenUsage(MODEL, prompt_tokens=200, completion_tokens=40)
    retry = fake.requests[1]["messages"]
    assert retry[:2] == fake.requests[0]["messages"]
    assert retry[2] == {"role": "assistant", "content": '{"memory": [{"text": "Caroline loves hik'}
    assert retry[3]["role"] == "user"
    assert retry[3]["content"].startswith("Invalid reply:")


def _changed(**changes: Any) -> Reply:
    return Reply(json.dumps({"memory": [{**HIKING, **changes}, PEANUTS]}))


@pytest.mark.parametrize(
    "bad",
    [
        _changed(source_ids=["m9"]),
        _changed(source_ids=[]),
        _changed(category="gossip"),
        _changed(importance=2),
        _changed(text="  "),
        Reply(json.dumps({"facts": []})),
    ],
    ids=["made-up-source", "no-source", "category", "importance", "blank", "no-memory-key"],
)
async def test_schema_invalid_output_is_retried(
    extractor: Mem0FactExtractor, fake: FakeOpenAI, bad: Reply
) -> None:
    fake.script.append(bad)
    assert list(await extractor.extract(TEXTS)) == EXPECTED
    assert len(fake.requests) == 2


async def test_three_invalid_replies_raise_a_provider_error(
    extractor: Mem0FactExtractor, client: Mem0Client, fake: FakeOpenAI
) -> None:
    fake.script.extend([Reply("not json"), Reply("{"), Reply("[]")])

    with pytest.raises(ProviderError, match="invalid output") as raised:
        await extractor.extract(TEXTS)

    assert len(fake.requests) == 3
    assert raised.value.details["attempts"] == 3
    assert raised.value.details["prompt_tokens"] == 300
    assert _rows(client) == 0


async def test_no_facts_is_a_valid_answer(extractor: Mem0FactExtractor, fake: FakeOpenAI) -> None:
    fake.script.append(Reply('{"memory": []}'))
    assert list(await extractor.extract(TEXTS)) == []
    assert len(fake.requests) == 1


async def test_no_texts_sends_nothing(extractor: Mem0FactExtractor, fake: FakeOpenAI) -> None:
    assert list(await extractor.extract([])) == []
    assert fake.requests == []


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, RateLimited), (401, Unauthorized), (403, Unauthorized), (500, ProviderError)],
)
async def test_http_errors_map_to_safe_domain_errors(
    extractor: Mem0FactExtractor, fake: FakeOpenAI, status: int, error: type[AgentCoreError]
) -> None:
    fake.script.append(Reply(status=status))
    with pytest.raises(error) as raised:
        await extractor.extract(TEXTS)
    assert type(raised.value) is error
    assert API_KEY not in str(raised.value)
    assert "Incorrect" not in str(raised.value)
    assert len(fake.requests) == 1  # an HTTP failure is not an invalid answer: no re-ask
    if status == 429:
        assert raised.value.details == {"retry_after": "3"}


async def test_an_unreachable_server_is_a_provider_error(
    client: Mem0Client, embedder: LocalMiniLMEmbedder
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    extractor = Mem0FactExtractor(client, embedder, _options(url))
    with pytest.raises(ProviderError, match="reach"):
        await extractor.extract(TEXTS)
    await extractor.close()


async def test_the_bridge_refuses_to_block_its_own_loop(embedder: LocalMiniLMEmbedder) -> None:
    import asyncio

    bridge = EmbedderBridge(embedder)
    bridge.loop = asyncio.get_running_loop()
    with pytest.raises(RuntimeError, match="worker thread"):
        bridge.embed("hello")
    vectors = await asyncio.to_thread(bridge.embed_batch, ["hello", "world"])
    assert len(vectors) == 2
    assert len(vectors[0]) == embedder.dimension


async def test_the_local_store_serves_one_client_at_a_time(tmp_path: Path) -> None:
    first = Mem0VectorStore.open(tmp_path)
    await first.ensure_collection(4, "test-embedder")
    second = Mem0VectorStore.open(tmp_path)
    try:
        with pytest.raises(ConfigurationError, match="QDRANT_URL"):
            await second.ensure_collection(4, "test-embedder")
    finally:
        await second.close()
        await first.close()


@pytest.fixture
async def mem0_stack(tmp_path: Path, embedder: LocalMiniLMEmbedder) -> AsyncIterator[Container]:
    """The stack as VECTOR_PROVIDER=mem0 builds it (mem0's Qdrant layer in local mode)."""
    config = Settings(agentcore_data_dir=tmp_path, vector_provider="mem0")
    migrate(config.sqlalchemy_url)
    container = await build_container(config, embedder=embedder)
    try:
        yield container
    finally:
        await container.aclose()


async def test_the_stack_runs_on_mem0_and_two_sessions_merge_into_one_fact(
    mem0_stack: Container,
    client: Mem0Client,
    embedder: LocalMiniLMEmbedder,
    fake: FakeOpenAI,
) -> None:
    memory, user = mem0_stack.memory, "u-42"
    said = [
        await memory.add(
            NewMemory("I love hiking in the mountains", ScopeIds(user_id=user, session_id=s))
        )
        for s in ("s1", "s2")
    ]
    found = await memory.search(SearchQuery("mountain hiking", ScopeIds(user_id=user), limit=3))
    assert {hit.memory.id for hit in found.results} == {m.id for m in said}

    bare = {"id": "0", "text": "Caroline loves hiking in the mountains", "category": "preference"}
    fake.script.extend([Reply(json.dumps({"memory": [bare]}))] * 2)
    extractor = Mem0FactExtractor(client, embedder, _options(fake.url))
    semantic = SemanticMemoryService(memory, mem0_stack.uow_factory, extractor, utcnow, 1000)
    try:
        first = await semantic.extract_from(said[:1])
        second = await semantic.extract_from(said[1:])
    finally:
        await extractor.close()

    assert [f.id for f in first] == [f.id for f in second]
    facts = await memory.search(
        SearchQuery("hiking", ScopeIds(user_id=user), layers=[Layer.SEMANTIC.value], limit=5)
    )
    [fact] = [hit.memory for hit in facts.results]
    assert fact.metadata["source_ids"] == [m.id for m in said]


async def test_auto_extraction_uses_mem0_once_an_api_key_is_configured(
    tmp_path: Path, embedder: LocalMiniLMEmbedder
) -> None:
    from agentcore.adapters.extractors.offline import RuleBasedFactExtractor
    from agentcore.bootstrap import build_fact_extractor
    from agentcore.services.health import Probe

    closers: list[Probe] = []
    offline = build_fact_extractor(Settings(agentcore_data_dir=tmp_path), closers, embedder)
    keyed = Settings(agentcore_data_dir=tmp_path, openai_api_key="sk-test")  # type: ignore[arg-type]
    with_key = build_fact_extractor(keyed, closers, embedder)
    try:
        assert isinstance(offline, RuleBasedFactExtractor)
        assert isinstance(with_key, Mem0FactExtractor)
    finally:
        for close in reversed(closers):
            await close()
