"""The LLM error pattern extractor against a local OpenAI-compatible server (Starlette on
uvicorn, loopback) that answers /v1/chat/completions with scripted replies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import openai
import pytest

from agentcore.adapters.extractors.error_patterns import LLMPatternExtractor
from agentcore.domain.error_patterns import pattern_severity
from agentcore.domain.error_records import ErrorRecord, ErrorType, PatternSource, PatternType
from agentcore.domain.errors import AgentCoreError, ProviderError, RateLimited, Unauthorized
from agentcore.domain.models import StageType
from agentcore.domain.usage import TokenUsage
from agentcore.services.errors import ExtractedPatterns, PatternExtractor
from tests.openai_chat_stub import API_KEY, FakeOpenAI, Reply, chat_server

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RECORDS = [
    ErrorRecord("err-a", "t1", ErrorType.HALLUCINATION, "Invented an order number", 0.8, T0,
                context={"tool": "orders"}, stage_type=StageType.EXECUTION),
    ErrorRecord("err-b", "t1", ErrorType.MISSING_INFO, "Did not know the customer id", 0.4,
                T0 + timedelta(minutes=1), recovery_action="Asked the user"),
    ErrorRecord("err-c", "t1", ErrorType.HALLUCINATION, "Made up a tracking code", 0.6,
                T0 + timedelta(minutes=2), context={"tool": "orders"}),
]  # fmt: skip
GOOD: dict[str, Any] = {
    "patterns": [
        {
            "pattern_type": "context",
            "error_ids": ["e3", "e1", "e1"],
            "description": "Identifiers are invented when the orders tool returns nothing",
            "recommendation": "Quote identifiers only from the orders tool's output.",
        }
    ]
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with chat_server(FakeOpenAI(default=json.dumps(GOOD), usage=(300, 50))) as state:
        yield state


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    return server.reset()


async def _extract(fake: FakeOpenAI, min_errors: int = 2) -> ExtractedPatterns:
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=fake.url, max_retries=0)
    extractor: PatternExtractor = LLMPatternExtractor(client, "gpt-4.1-mini")
    try:
        return await extractor.extract(RECORDS, min_errors)
    finally:
        await client.close()


async def test_patterns_are_extracted_and_measured_on_the_cited_records(fake: FakeOpenAI) -> None:
    result = await _extract(fake)

    [pattern] = result.patterns
    assert pattern.pattern_type is PatternType.CONTEXT
    assert pattern.source is PatternSource.LLM
    assert pattern.error_ids == ("err-c", "err-a")  # newest first, duplicates dropped
    assert (pattern.error_types, pattern.occurrences) == ((ErrorType.HALLUCINATION,), 2)
    assert pattern.severity == pattern_severity([RECORDS[0], RECORDS[2]], 2)
    assert pattern.recommendation == "Quote identifiers only from the orders tool's output."
    assert result.usage == TokenUsage("gpt-4.1-mini", 300, 50)
    [request] = fake.requests
    assert request["response_format"] == {"type": "json_object"}
    assert request["temperature"] == 0
    system, user = request["messages"]
    assert "at least 2" in system["content"]
    sent = json.loads(user["content"])
    assert [row["id"] for row in sent] == ["e1", "e2", "e3"]
    assert sent[0] == {
        "id": "e1",
        "type": "hallucination",
        "task": "t1",
        "stage": "execution",
        "severity": 0.8,
        "description": "Invented an order number",
        "context": '{"tool": "orders"}',
        "recovery": None,
    }


def _changed(**changes: Any) -> Reply:
    return Reply(content=json.dumps({"patterns": [{**GOOD["patterns"][0], **changes}]}))


@pytest.mark.parametrize(
    "bad",
    [
        _changed(error_ids=["e1", "e9"]),
        _changed(error_ids=["e1", "e1"]),
        _changed(pattern_type="vibes"),
        _changed(recommendation=" "),
        Reply(content="not json"),
        Reply(finish_reason="length"),
    ],
    ids=["made-up-id", "too-few-errors", "pattern-type", "blank", "not-json", "truncated"],
)
async def test_invalid_output_is_sent_back_and_retried(fake: FakeOpenAI, bad: Reply) -> None:
    fake.script.append(bad)
    result = await _extract(fake)
    assert len(result.patterns) == 1
    assert len(fake.requests) == 2
    assert fake.requests[1]["messages"][3]["content"].startswith("Invalid reply:")
    assert result.usage == TokenUsage("gpt-4.1-mini", 600, 100)


async def test_three_invalid_replies_raise_a_provider_error(fake: FakeOpenAI) -> None:
    fake.script.extend([Reply(content="{")] * 3)
    with pytest.raises(ProviderError, match="invalid output 3 times"):
        await _extract(fake)


async def test_no_patterns_is_a_valid_answer_and_too_few_records_ask_nothing(
    fake: FakeOpenAI,
) -> None:
    fake.script.append(Reply(content='{"patterns": []}'))
    assert (await _extract(fake)).patterns == []
    assert (await _extract(fake, min_errors=4)).patterns == []
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("status", "error"), [(429, RateLimited), (401, Unauthorized), (500, ProviderError)]
)
async def test_http_errors_map_to_safe_domain_errors(
    fake: FakeOpenAI, status: int, error: type[AgentCoreError]
) -> None:
    fake.script.append(Reply(status=status))
    with pytest.raises(error) as raised:
        await _extract(fake)
    assert API_KEY not in str(raised.value)
    assert len(fake.requests) == 1
