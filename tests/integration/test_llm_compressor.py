"""The LLM compression engine, alone and under the ContextCompressor, against a local
OpenAI-compatible server (Starlette on uvicorn, loopback) answering /v1/chat/completions with
scripted replies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import openai
import pytest

from agentcore.adapters.compressors import ExtractiveEngine
from agentcore.adapters.compressors.llm import LLMEngine
from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.critical_facts import Passage, extract_critical_facts
from agentcore.domain.errors import BudgetExceeded, ConfigurationError, ProviderError, Unauthorized
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.domain.usage import TokenUsage
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.compass.drafts import (
    CompressionItem,
    CompressionRequest,
    CompressionResult,
    ErrorPattern,
)
from tests.agent_trace import CRITICAL, PLANNING
from tests.conftest import migrate
from tests.openai_chat_stub import API_KEY, FakeOpenAI, Reply, chat_server
from tests.unit.test_compression import AGENT_STAGE

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PATTERN = "TimeoutError pulling the Postgres image"
ITEMS = [
    CompressionItem(
        f"m{i}", text, created_at=T0 + timedelta(minutes=i), metadata={"speaker": "agent"}
    )
    for i, text in enumerate(AGENT_STAGE)
]


@pytest.fixture(scope="module")
def counter() -> BpeTokenCounter:
    return BpeTokenCounter()


@pytest.fixture(scope="module")
def server(counter: BpeTokenCounter) -> Iterator[FakeOpenAI]:
    # The scripted "model" answers with a faithful summary of the stage: the extractive one.
    request = CompressionRequest(
        "stage", ITEMS, extract_critical_facts([Passage(i.memory_id, i.content) for i in ITEMS]),
        10.0, *_bounds(counter),
    )  # fmt: skip
    summary = ExtractiveEngine(counter).compose(request).summary
    good = {
        "summary": summary,
        "insights": ["Load the tax rates lazily so tests can inject their own table."],
        "critical_facts": ["Never commit directly to the release branch."],
        "error_patterns": [{"description": PATTERN, "occurrences": 2}],
    }
    with chat_server(FakeOpenAI(default=json.dumps(good))) as state:
        yield state


def _bounds(counter: BpeTokenCounter) -> tuple[int, int, int]:
    tokens = counter.count("\n".join(i.content for i in ITEMS))
    return round(tokens / 10), int(tokens / 12) + 1, int(tokens / 8)


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    return server.reset()


async def _compress(
    fake: FakeOpenAI, counter: BpeTokenCounter, *, fallback: bool = True
) -> CompressionResult:
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=fake.url, max_retries=0)
    engine = LLMEngine(client, "gpt-4.1-mini")
    extractive = ExtractiveEngine(counter) if fallback else None
    try:
        compressor = ContextCompressor(engine, counter, fallback_engine=extractive)
        return await compressor.compress_stage(ITEMS)
    finally:
        await client.close()


async def test_a_valid_reply_becomes_the_stage_summary(
    fake: FakeOpenAI, counter: BpeTokenCounter
) -> None:
    result = await _compress(fake, counter)

    assert result.engine == "llm:gpt-4.1-mini"
    assert result.passed
    assert not result.fallback
    assert 8 <= result.ratio <= 12
    assert result.retention == 1.0
    assert result.usage == TokenUsage("gpt-4.1-mini", prompt_tokens=100, completion_tokens=20)
    assert result.insights == ("Load the tax rates lazily so tests can inject their own table.",)
    assert result.error_patterns == (ErrorPattern(PATTERN, 2, PATTERN),)
    [request] = fake.requests
    assert request["model"] == "gpt-4.1-mini"
    assert request["response_format"] == {"type": "json_object"}
    assert request["temperature"] == 0
    system, user = request["messages"]
    assert "must_keep" in system["content"]
    sent = json.loads(user["content"])
    budget, _, most = _bounds(counter)
    assert (sent["level"], sent["target_tokens"], sent["max_tokens"]) == ("stage", budget, most)
    assert any("release branch" in fact for fact in sent["must_keep"])
    assert sent["memories"][0] == {
        "id": "m1",
        "speaker": "agent",
        "at": "2026-03-02T09:00:00+00:00",
        "content": AGENT_STAGE[0],
    }


async def test_malformed_json_is_retried_and_the_retry_succeeds(
    fake: FakeOpenAI, counter: BpeTokenCounter
) -> None:
    fake.script.append(Reply('{"summary": "The agent ran'))
    result = await _compress(fake, counter)

    assert result.engine == "llm:gpt-4.1-mini"
    assert result.passed
    assert len(fake.requests) == 2
    assert result.usage == TokenUsage("gpt-4.1-mini", prompt_tokens=200, completion_tokens=40)
    retry = fake.requests[1]["messages"]
    assert retry[:2] == fake.requests[0]["messages"]
    assert retry[2] == {"role": "assistant", "content": '{"summary": "The agent ran'}
    assert retry[3]["content"].startswith("Invalid reply:")


@pytest.mark.parametrize(
    "bad",
    [
        Reply(json.dumps({"summary": "  "})),
        Reply(json.dumps({"insights": []})),
        Reply(json.dumps({"summary": "ok", "error_patterns": [{"description": "x"}]})),
        Reply(finish_reason="length"),
    ],
    ids=["empty-summary", "no-summary", "pattern-without-count", "truncated"],
)
async def test_schema_invalid_output_is_retried(
    fake: FakeOpenAI, counter: BpeTokenCounter, bad: Reply
) -> None:
    fake.script.append(bad)
    result = await _compress(fake, counter)
    assert result.engine == "llm:gpt-4.1-mini"
    assert len(fake.requests) == 2


async def test_three_invalid_replies_raise_a_provider_error(
    fake: FakeOpenAI, counter: BpeTokenCounter
) -> None:
    fake.script.extend([Reply("not json"), Reply("{"), Reply("[]")])
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=fake.url, max_retries=0)
    request = CompressionRequest("stage", ITEMS, (), 10.0, *_bounds(counter))
    with pytest.raises(ProviderError, match="invalid output") as raised:
        await LLMEngine(client).draft(request)
    await client.close()
    assert len(fake.requests) == 3
    details = raised.value.details
    assert (details["attempts"], details["prompt_tokens"], details["model"]) == (
        3, 300, "gpt-4.1-mini",
    )  # fmt: skip


async def test_a_failing_provider_falls_back_to_the_extractive_engine(
    fake: FakeOpenAI, counter: BpeTokenCounter
) -> None:
    fake.script.extend([Reply("not json"), Reply("{"), Reply("[]")])
    result = await _compress(fake, counter)

    assert result.attempts[0].error == "PROVIDER_ERROR"
    assert result.engine == "extractive"
    assert result.passed
    assert result.fallback
    assert result.usage == TokenUsage("gpt-4.1-mini", prompt_tokens=300, completion_tokens=60)
    assert len(fake.requests) == 3


async def test_http_failures_map_to_safe_errors(fake: FakeOpenAI, counter: BpeTokenCounter) -> None:
    fake.script.append(Reply(status=500))
    with pytest.raises(ProviderError) as outage:
        await _compress(fake, counter, fallback=False)
    assert API_KEY not in str(outage.value)
    fake.script.append(Reply(status=401))
    with pytest.raises(Unauthorized):  # a wrong key is not hidden behind the fallback
        await _compress(fake, counter)


@pytest.mark.parametrize(
    "model", ["gpt-4.1", "gpt-4.1-2025-04-14", "gpt-5", "gpt-5-mini", "o1", "o3-mini", "o4-mini"]
)
def test_reasoning_models_are_refused_for_compression(model: str) -> None:
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigurationError, match="reasoning model"):
        LLMEngine(client, model)
    with pytest.raises(ConfigurationError, match="reasoning model"):
        LLMEngine(client, model, approved_models=[model])  # whatever the list says


def test_only_approved_models_compress() -> None:
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url="http://127.0.0.1:9/v1")
    for model in ("gpt-4.1-mini", "gpt-4o-mini", "gpt-4.1-nano", "gpt-4.1-mini-2025-04-14"):
        assert LLMEngine(client, model).name == f"llm:{model}"
    with pytest.raises(ConfigurationError, match="not approved"):
        LLMEngine(client, "llama-3.1-70b")
    assert LLMEngine(client, "llama-3.1-70b", approved_models=["llama-3.1-70b"]).model == (
        "llama-3.1-70b"
    )


async def _stage_with_memories(container: Container, task_id: str) -> str:
    stage = await container.stages.start(task_id, "execution")
    for text in AGENT_STAGE:
        await container.memory.add(NewMemory(text, ScopeIds(task_id=task_id)))
    return stage.id


def _llm_settings(data_dir: Path, fake: FakeOpenAI, budget: float) -> Settings:
    return Settings(
        agentcore_data_dir=data_dir,
        compression_engine="llm",
        fact_extractor="offline",
        stage_auto_transition=False,  # keep every memory of the scripted stage in one stage
        openai_api_key=API_KEY,  # type: ignore[arg-type]
        openai_base_url=fake.url,
        monthly_token_budget_usd=budget,
    )


async def test_a_stage_compressed_by_the_llm_is_paid_for_and_reported(
    fake: FakeOpenAI, tmp_path: Path, embedder: LocalMiniLMEmbedder
) -> None:
    settings = _llm_settings(tmp_path, fake, budget=100.0)
    migrate(settings.sqlalchemy_url)
    container = await build_container(settings, embedder=embedder)
    try:
        stage_id = await _stage_with_memories(container, "llm-task")
        done = await container.compass.complete_stage("llm-task", stage_id)
        report = await container.costs.report(task_id="llm-task")
    finally:
        await container.aclose()
    memory = done.stage_memory
    assert memory is not None
    # The LLM wrote the first drafts (its summary may then lose to the extractive fallback when
    # the scripted reply misses a fact the service marked critical); either way it was paid.
    attempts = memory.quality_metrics["attempts"]
    assert attempts[0]["engine"] == "llm:gpt-4.1-mini"
    assert memory.cost_usd > 0
    assert fake.requests[0]["model"] == "gpt-4.1-mini"
    assert report.totals.cost_usd == pytest.approx(memory.cost_usd)
    assert report.savings_pct == pytest.approx(80.0)


async def test_past_the_budget_a_stage_is_refused_before_any_model_call(
    fake: FakeOpenAI, tmp_path: Path, embedder: LocalMiniLMEmbedder
) -> None:
    settings = _llm_settings(tmp_path, fake, budget=0.0)
    migrate(settings.sqlalchemy_url)
    container = await build_container(settings, embedder=embedder)
    try:
        stage_id = await _stage_with_memories(container, "poor-task")
        with pytest.raises(BudgetExceeded):
            await container.compass.complete_stage("poor-task", stage_id)
    finally:
        await container.aclose()
    assert fake.requests == []


# --- an agent's stage on the LLM path: the same record shape, repaired or replaced ------------

TRACE_ITEMS = [
    CompressionItem(f"p{i}", text, critical=text in CRITICAL, created_at=T0 + timedelta(minutes=i))
    for i, text in enumerate(PLANNING)
]


async def _planning_summary(counter: BpeTokenCounter) -> str:
    extractive = ContextCompressor(ExtractiveEngine(counter), counter)
    return (await extractive.compress_stage(TRACE_ITEMS)).summary


async def _compress_trace(fake: FakeOpenAI, counter: BpeTokenCounter) -> CompressionResult:
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=fake.url, max_retries=0)
    try:
        compressor = ContextCompressor(
            LLMEngine(client, "gpt-4.1-mini"), counter, fallback_engine=ExtractiveEngine(counter)
        )
        return await compressor.compress_stage(TRACE_ITEMS)
    finally:
        await client.close()


async def test_an_llm_summary_that_drops_a_flagged_memory_is_repaired(
    fake: FakeOpenAI, counter: BpeTokenCounter
) -> None:
    summary = await _planning_summary(counter)
    lossy = "\n".join(line for line in summary.splitlines() if "signature" not in line)
    assert lossy != summary
    fake.script.append(Reply(json.dumps({"summary": lossy})))

    result = await _compress_trace(fake, counter)

    assert result.engine == "llm:gpt-4.1-mini"
    assert len(fake.requests) == 1  # repaired without a second call
    metrics = result.quality_metrics()
    assert (metrics["repaired"], metrics["repaired_drafts"], metrics["replaced_by"]) == (
        True,
        1,
        None,
    )
    assert result.retention == 1.0
    assert 8 <= result.ratio <= 12
    assert set(CRITICAL) & set(PLANNING) <= {f.content for f in result.critical_facts}


async def test_an_llm_summary_off_the_ratio_is_replaced_by_the_extractive_one(
    fake: FakeOpenAI, counter: BpeTokenCounter
) -> None:
    everything = json.dumps({"summary": "\n".join(PLANNING)})  # no compression at all
    fake.script += [Reply(everything), Reply(everything)]

    result = await _compress_trace(fake, counter)

    assert result.engine == "extractive"
    assert len(fake.requests) == 2  # two LLM drafts, then the extractive ladder
    metrics = result.quality_metrics()
    assert metrics["replaced_by"] == "extractive"
    assert [a["engine"] for a in metrics["attempts"][:2]] == ["llm:gpt-4.1-mini"] * 2
    assert result.retention == 1.0
    assert 8 <= result.ratio <= 12
    assert result.summary == await _planning_summary(counter)
