"""CostTracker and CompressionMetricsRecorder on the real schema: SQLite and PostgreSQL, both
migrated by Alembic (revision 0001 creates ``cost_records`` and ``compression_metrics``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import delete

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.tables import CompressionMetricRow, CostRecordRow
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.domain.errors import BudgetExceeded
from agentcore.domain.pricing import PriceTable
from agentcore.domain.usage import TokenUsage
from agentcore.services.compass.metrics import CompressionMetricsRecorder
from agentcore.services.costs import CostTracker
from tests.conftest import migrate

MILLION = 1_000_000


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def uows(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SqlUnitOfWorkFactory]:
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
    else:
        url = f"sqlite+aiosqlite:///{tmp_path / 'agentcore.db'}"
        migrate(url)
    engine = create_engine(url)
    async with engine.begin() as conn:  # the Postgres database is shared by the module
        await conn.execute(delete(CostRecordRow))
        await conn.execute(delete(CompressionMetricRow))
    yield SqlUnitOfWorkFactory(engine)
    await engine.dispose()


def tracker(uows: SqlUnitOfWorkFactory, clock: Clock, budget: float) -> CostTracker:
    return CostTracker(
        uows,
        PriceTable(),
        clock,
        CollectorRegistry(),
        reasoning_model="gpt-4.1",
        monthly_budget_usd=budget,
        alert_threshold_pct=75.0,
    )


async def test_record_report_and_budget(uows: SqlUnitOfWorkFactory) -> None:
    clock = Clock(datetime(2026, 1, 31, 23, 59, 59, 999_999, tzinfo=UTC))
    costs = tracker(uows, clock, budget=2.0)
    await costs.record(TokenUsage("gpt-4.1-mini", MILLION, 0), "compression.stage", "a1", "t1")
    clock.now += timedelta(microseconds=1)  # February 1st, 00:00 UTC
    await costs.record(TokenUsage("gpt-4.1-mini", 2 * MILLION, 250_000), "compression.stage")
    await costs.record(TokenUsage("gpt-4.1-mini", MILLION, 0), "compression.task", "a1", "t2")
    await costs.record(TokenUsage("text-embedding-3-small", 5 * MILLION), "embedding", "a1")

    january = await costs.report(month="2026-01")
    assert (january.totals.calls, january.totals.tokens_in) == (1, MILLION)
    assert january.budget.spent_usd == pytest.approx(0.40)

    february = await costs.report()
    assert february.month == "2026-02"
    assert february.totals.cost_usd == pytest.approx(0.80 + 0.40 + 0.40 + 0.10)
    assert february.by_operation["compression.stage"].tokens_out == 250_000
    assert february.by_model["text-embedding-3-small"].cost_usd == pytest.approx(0.10)
    assert february.reasoning_model_cost_usd == pytest.approx(4.00 + 2.00 + 2.00 + 0.10)
    assert february.budget.used_pct == pytest.approx(85.0)
    assert february.budget.alert

    agent = await costs.report(agent_id="a1", operation="compression.task")
    assert agent.totals.calls == 1
    assert agent.savings_pct == pytest.approx(80.0)
    assert agent.budget.spent_usd == pytest.approx(1.70)  # the whole month

    assert (await costs.check_budget(0.25)).alert
    with pytest.raises(BudgetExceeded, match=r"\$1\.70 of \$2\.00 spent in 2026-02"):
        await costs.check_budget(0.35)


async def test_compression_metrics_stored_summarized_and_exposed(
    uows: SqlUnitOfWorkFactory,
) -> None:
    registry = CollectorRegistry()
    recorder = CompressionMetricsRecorder(uows, Clock(datetime(2026, 2, 1, tzinfo=UTC)), registry)
    await recorder.record(
        level="stage",
        task_id="t1",
        stage_id="2c1b6a9e-0000-4000-8000-000000000001",
        input_tokens=2000,
        output_tokens=200,
        ratio=10.0,
        retention=1.0,
        engine="extractive",
        fallback=False,
    )
    await recorder.record(
        level="stage",
        task_id="t1",
        stage_id="2c1b6a9e-0000-4000-8000-000000000002",
        input_tokens=1600,
        output_tokens=200,
        ratio=8.0,
        retention=None,
        engine="llm",
        fallback=True,
        cost_usd=0.00112,
    )
    await recorder.record(
        level="task",
        task_id="t1",
        stage_id=None,
        input_tokens=400,
        output_tokens=80,
        ratio=5.0,
        retention=0.96,
        engine="extractive",
        fallback=False,
    )
    await recorder.record(
        level="task",
        task_id="t2",
        stage_id=None,
        input_tokens=100,
        output_tokens=50,
        ratio=2.0,
        retention=None,
        engine="extractive",
        fallback=False,
    )

    summary = await recorder.summary("t1")
    assert summary.stage is not None
    assert summary.task is not None
    assert (summary.stage.compressions, summary.stage.fallbacks) == (2, 1)
    assert summary.stage.avg_ratio == pytest.approx(9.0)
    assert summary.stage.avg_retention == pytest.approx(1.0)  # the measured one only
    assert summary.stage.cost_usd == pytest.approx(0.00112)
    assert (summary.task.compressions, summary.task.input_tokens) == (1, 400)
    assert summary.task.avg_retention == pytest.approx(0.96)
    empty = await recorder.summary("t-none")
    assert (empty.stage, empty.task) == (None, None)

    exposed = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for sample in family.samples
    }

    def value(name: str, **labels: str) -> float | None:
        return exposed.get((name, tuple(sorted(labels.items()))))

    stage_extractive = {"level": "stage", "engine": "extractive"}
    assert value("agentcore_compression_factor_bucket", le="10.0", **stage_extractive) == 1
    assert value("agentcore_compression_factor_bucket", le="8.0", **stage_extractive) == 0
    retention = value(
        "agentcore_compression_retention_ratio_count", level="task", engine="extractive"
    )
    assert retention == 1
    assert value("agentcore_compressions_total", level="stage", engine="llm", fallback="true") == 1
    assert value("agentcore_compression_cost_usd_total", level="stage", engine="llm") == (
        pytest.approx(0.00112)
    )
    assert value("agentcore_compression_tokens_total", level="stage", direction="input") == 3600
