"""The LLM fact extractor against a local OpenAI-compatible server (Starlette on uvicorn,
loopback) that answers /v1/chat/completions with scripted replies."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai
import pytest

from agentcore.adapters.db.migrate import upgrade
from agentcore.adapters.extractors.llm import LLMFactExtractor
from agentcore.bootstrap import build_container
from agentcore.config import Settings
from agentcore.domain.errors import AgentCoreError, ProviderError, RateLimited, Unauthorized
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.domain.usage import TokenUsage
from agentcore.services.retrieval import SearchQuery
from agentcore.services.semantic import (
    ExtractedFact,
    Extraction,
    FactCategory,
    FactExtractor,
    SourceText,
)
from tests.fakes import FakeEmbedder, FakeVectorStore
from tests.openai_chat_stub import API_KEY, FakeOpenAI, Reply, chat_server

TEXTS = [
    SourceText("mem-a", "I really love hiking in the mountains", "Caroline", "user",
               datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    SourceText("mem-b", "I'm allergic to peanuts, so no satay for me", "Caroline", "user"),
]  # fmt: skip
GOOD: dict[str, Any] = {
    "facts": [
        {
            "content": "Caroline loves hiking in the mountains",
            "category": "preference",
            "importance": 0.6,
            "critical": False,
            "source_ids": ["m1"],
        },
        {
            "content": "Caroline is allergic to peanuts",
            "category": "constraint",
            "importance": 0.9,
            "critical": True,
            "source_ids": ["m2", "m2"],
        },
    ]
}


def _changed(**changes: Any) -> Reply:
    """A reply whose first fact breaks the schema."""
    return Reply(content=json.dumps({"facts": [{**GOOD["facts"][0], **changes}]}))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with chat_server(FakeOpenAI(default=json.dumps(GOOD))) as state:
        yield state


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    return server.reset()


async def _extract(fake: FakeOpenAI, texts: list[SourceText] = TEXTS) -> Extraction:
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=fake.url, max_retries=0)
    extractor: FactExtractor = LLMFactExtractor(client, "gpt-4.1-mini")
    try:
        result = await extractor.extract(texts)
    finally:
        await client.close()
    assert isinstance(result, Extraction)
    return result


EXPECTED = [
    ExtractedFact(
        "Caroline loves hiking in the mountains", FactCategory.PREFERENCE, 0.6, False, ("mem-a",)
    ),
    ExtractedFact(
        "Caroline is allergic to peanuts", FactCategory.CONSTRAINT, 0.9, True, ("mem-b",)
    ),
]


async def test_facts_are_extracted_with_their_sources_and_usage(fake: FakeOpenAI) -> None:
    result = await _extract(fake)

    assert list(result) == EXPECTED
    assert result.usage == TokenUsage("gpt-4.1-mini", prompt_tokens=100, completion_tokens=20)
    [request] = fake.requests
    assert request["model"] == "gpt-4.1-mini"
    assert request["response_format"] == {"type": "json_object"}
    assert request["temperature"] == 0
    system, user = request["messages"]
    assert system["role"] == "system"
    assert "third person" in system["content"]
    sent = json.loads(user["content"])
    assert [m["id"] for m in sent] == ["m1", "m2"]
    assert sent[0] == {
        "id": "m1",
        "speaker": "Caroline",
        "role": "user",
        "at": "2023-05-08T13:56:00+00:00",
        "content": "I really love hiking in the mountains",
    }


async def test_malformed_json_is_retried_and_the_retry_succeeds(fake: FakeOpenAI) -> None:
    fake.script.append(Reply(content='{"facts": [{"content": "Caroline loves hik'))
    result = await _extract(fake)

    assert list(result) == EXPECTED
    assert len(fake.requests) == 2
    assert result.usage == TokenUsage("gpt-4.1-mini", prompt_tokens=200, completion_tokens=40)
    retry = fake.requests[1]["messages"]
    assert retry[:2] == fake.requests[0]["messages"]
    assert retry[2] == {
        "role": "assistant",
        "content": '{"facts": [{"content": "Caroline loves hik',
    }
    assert retry[3]["role"] == "user"
    assert retry[3]["content"].startswith("Invalid reply:")


@pytest.mark.parametrize(
    "bad",
    [
        _changed(importance=2),
        _changed(category="gossip"),
        _changed(source_ids=["m9"]),
        Reply(content=json.dumps({"items": []})),
        Reply(finish_reason="length"),
    ],
    ids=["importance", "category", "made-up-source", "no-facts-key", "truncated"],
)
async def test_schema_invalid_output_is_retried(fake: FakeOpenAI, bad: Reply) -> None:
    fake.script.append(bad)
    result = await _extract(fake)
    assert list(result) == EXPECTED
    assert len(fake.requests) == 2


async def test_three_invalid_replies_raise_a_provider_error(fake: FakeOpenAI) -> None:
    fake.script.extend([Reply(content="not json"), Reply(content="{"), Reply(content="[]")])
    with pytest.raises(ProviderError, match="fact extraction returned invalid output") as raised:
        await _extract(fake)
    assert len(fake.requests) == 3
    assert raised.value.details["attempts"] == 3
    assert raised.value.details["prompt_tokens"] == 300


async def test_no_facts_is_a_valid_answer(fake: FakeOpenAI) -> None:
    fake.script.append(Reply(content='{"facts": []}'))
    result = await _extract(fake)
    assert list(result) == []
    assert len(fake.requests) == 1


async def test_no_texts_sends_nothing(fake: FakeOpenAI) -> None:
    result = await _extract(fake, [])
    assert list(result) == []
    assert fake.requests == []


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, RateLimited), (401, Unauthorized), (403, Unauthorized), (500, ProviderError)],
)
async def test_http_errors_map_to_safe_domain_errors(
    fake: FakeOpenAI, status: int, error: type[AgentCoreError]
) -> None:
    fake.script.append(Reply(status=status))
    with pytest.raises(error) as raised:
        await _extract(fake)
    assert API_KEY not in str(raised.value)
    assert "Incorrect" not in str(raised.value)
    assert len(fake.requests) == 1  # an HTTP failure is not an invalid answer: no re-ask
    if status == 429:
        assert raised.value.details == {"retry_after": "3"}


async def test_an_unreachable_server_is_a_provider_error() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=url, max_retries=0)
    with pytest.raises(ProviderError, match="reach"):
        await LLMFactExtractor(client).extract(TEXTS)
    await client.close()


def _slotted(content: str, value: str) -> Reply:
    fact = {
        "content": content,
        "category": "fact",
        "importance": 0.6,
        "critical": False,
        "source_ids": ["m1"],
        "slot": {"subject": "Caroline", "attribute": "Home", "value": value},
    }
    return Reply(content=json.dumps({"facts": [fact]}))


async def test_a_slot_the_model_names_makes_its_facts_update(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    """The raw turns fill no slot the offline reader knows; the model's slots alone make the
    newer fact supersede the older one."""
    fake.script += [
        _slotted("Caroline lives in Paris", "Paris"),
        _slotted("Caroline lives in Rome", "Rome"),
    ]
    settings = Settings(
        agentcore_data_dir=tmp_path,
        fact_extractor="llm",
        openai_api_key=API_KEY,
        openai_base_url=fake.url,
    )
    await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
    api = await build_container(settings, embedder=FakeEmbedder(), vectors=FakeVectorStore())
    scope = ScopeIds(user_id="caroline")
    try:
        facts = []
        for turn in ("Caroline: Paris has been home for years.", "Caroline: Rome is home now!"):
            raw = await api.memory.add(NewMemory(turn, scope))
            assert raw.fact_slot is None
            (fact,) = await api.semantic.extract_from([raw])
            facts.append(fact)
        paris, rome = facts
        assert (rome.fact_slot, rome.fact_value) == ("caroline|home", "rome")
        assert (await api.memory.get(paris.id, scope)).superseded_by == rome.id
        found = await api.memory.search(SearchQuery("Where does Caroline live?", scope))
        assert found.results[0].memory.id == rome.id
    finally:
        await api.aclose()
