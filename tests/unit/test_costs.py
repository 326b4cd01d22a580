"""CostTracker (prices, budget, savings, report) and CompressionMetricsRecorder on fakes."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from types import TracebackType
from typing import Self

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from agentcore.api.handlers.costs import CostReportParams, CostReportResult, cost_methods
from agentcore.domain.compression_metrics import CompressionLevel, CompressionMetric, LevelSummary
from agentcore.domain.errors import BudgetExceeded, ConfigurationError, InvalidParams
from agentcore.domain.pricing import CostQuery, CostRecord, CostTotals, PriceTable, month_bounds
from agentcore.domain.usage import TokenUsage
from agentcore.services.compass.metrics import CompressionMetricsRecorder
from agentcore.services.costs import CostTracker
from agentcore.services.ports import CompressionMetricsRepository, CostRepository

MILLION = 1_000_000
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


class FixedClock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class FakeCostRepository:
    def __init__(self, rows: list[CostRecord]) -> None:
        self.rows = rows
        self.sum_reads = 0

    async def add(self, record: CostRecord) -> None:
        self.rows.append(record)

    async def spent(self, since: datetime, until: datetime) -> float:
        self.sum_reads += 1
        return sum(r.cost_usd for r in self.rows if since <= r.created_at < until)

    async def totals(self, query: CostQuery) -> list[CostTotals]:
        groups: dict[tuple[str, str], list[CostRecord]] = defaultdict(list)
        for r in self.rows:
            if not query.since <= r.created_at < query.until:
                continue
            if query.agent_id is not None and r.agent_id != query.agent_id:
                continue
            if query.task_id is not None and r.task_id != query.task_id:
                continue
            if query.operation is not None and r.operation != query.operation:
                continue
            groups[(r.operation, r.model)].append(r)
        return [
            CostTotals(
                op,
                model,
                len(rs),
                sum(r.tokens_in for r in rs),
                sum(r.tokens_out for r in rs),
                sum(r.cost_usd for r in rs),
            )
            for (op, model), rs in sorted(groups.items())
        ]


class FakeMetricsRepository:
    def __init__(self, rows: list[CompressionMetric]) -> None:
        self.rows = rows

    async def add(self, metric: CompressionMetric) -> None:
        self.rows.append(metric)

    async def summary(self, task_id: str) -> dict[CompressionLevel, LevelSummary]:
        found: dict[CompressionLevel, LevelSummary] = {}
        for level in CompressionLevel:
            rs = [m for m in self.rows if m.task_id == task_id and m.level is level]
            if not rs:
                continue
            measured = [m.retention for m in rs if m.retention is not None]
            found[level] = LevelSummary(
                compressions=len(rs),
                input_tokens=sum(m.input_tokens for m in rs),
                output_tokens=sum(m.output_tokens for m in rs),
                avg_ratio=sum(m.ratio for m in rs) / len(rs),
                avg_retention=sum(measured) / len(measured) if measured else None,
                fallbacks=sum(m.fallback for m in rs),
                cost_usd=sum(m.cost_usd for m in rs),
            )
        return found


class FakeUow:
    """Writes become visible on commit only."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store
        self._costs: list[CostRecord] = []
        self._metrics: list[CompressionMetric] = []
        self._cost_repo = FakeCostRepository([])

    async def __aenter__(self) -> Self:
        self._costs = list(self._store.costs)
        self._metrics = list(self._store.metrics)
        self._cost_repo = FakeCostRepository(self._costs)
        self.costs: CostRepository = self._cost_repo
        self.compression_metrics: CompressionMetricsRepository = FakeMetricsRepository(
            self._metrics
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._store.sum_reads += self._cost_repo.sum_reads

    async def commit(self) -> None:
        self._store.costs = list(self._costs)
        self._store.metrics = list(self._metrics)


class FakeStore:
    def __init__(self) -> None:
        self.costs: list[CostRecord] = []
        self.metrics: list[CompressionMetric] = []
        self.sum_reads = 0

    def __call__(self, *, read_only: bool = False) -> FakeUow:
        return FakeUow(self)


def tracker(
    store: FakeStore,
    clock: FixedClock,
    registry: CollectorRegistry | None = None,
    *,
    budget: float = 100.0,
    prices: PriceTable | None = None,
    cache_seconds: float = 5.0,
) -> CostTracker:
    return CostTracker(
        store,
        prices or PriceTable(),
        clock,
        registry or CollectorRegistry(),
        reasoning_model="gpt-4.1",
        monthly_budget_usd=budget,
        alert_threshold_pct=75.0,
        spend_cache_seconds=cache_seconds,
    )


def mini(tokens_in: int, tokens_out: int = 0) -> TokenUsage:
    return TokenUsage("gpt-4.1-mini", tokens_in, tokens_out)


def dollars_of_mini(usd: float) -> TokenUsage:
    """gpt-4.1-mini input tokens worth ``usd`` dollars (0.40 per 1M)."""
    return mini(round(usd / 0.40 * MILLION))


# --- prices -----------------------------------------------------------------------------------


def test_list_prices_per_million_tokens() -> None:
    prices = PriceTable()
    assert prices.cost("gpt-4.1-mini", MILLION, 0) == pytest.approx(0.40)
    assert prices.cost("gpt-4.1-mini", 0, MILLION) == pytest.approx(1.60)
    assert prices.cost("gpt-4.1", 500_000, 250_000) == pytest.approx(1.00 + 2.00)
    assert prices.cost("text-embedding-3-small", 2 * MILLION, 0) == pytest.approx(0.04)
    # A dated snapshot, as the API reports it, is priced as its base model.
    assert prices.cost("gpt-4.1-mini-2025-04-14", MILLION, 0) == pytest.approx(0.40)


def test_overrides_merge_over_the_defaults() -> None:
    prices = PriceTable({"my-model": [0.3, 1.2], "gpt-4.1-mini": (0.5, 2.0)})
    assert prices.cost("my-model", MILLION, MILLION) == pytest.approx(1.5)
    assert prices.cost("gpt-4.1-mini", MILLION, 0) == pytest.approx(0.5)
    assert prices.cost("gpt-4o", MILLION, 0) == pytest.approx(2.5)


@pytest.mark.parametrize("bad", [[0.3], [0.3, 1.2, 5.0], [-0.1, 1.0]])
def test_malformed_override_is_a_configuration_error(bad: list[float]) -> None:
    with pytest.raises(ConfigurationError, match="MODEL_PRICES"):
        PriceTable({"my-model": bad})


def test_unknown_models_are_refused_by_name() -> None:
    prices = PriceTable()
    with pytest.raises(ConfigurationError, match="'llama-x'"):
        prices.price("llama-x")
    with pytest.raises(ConfigurationError, match="llama-x, mystery"):
        prices.require("gpt-4.1-mini", "mystery", "llama-x")
    prices.require("gpt-4.1-mini", "gpt-4.1", "gpt-5")


def test_tracker_refuses_a_reasoning_model_without_price() -> None:
    with pytest.raises(ConfigurationError, match="o9-preview"):
        CostTracker(
            FakeStore(),
            PriceTable(),
            FixedClock(),
            CollectorRegistry(),
            reasoning_model="o9-preview",
            monthly_budget_usd=10,
        )


# --- records ----------------------------------------------------------------------------------


async def test_record_stores_tokens_and_dollars_per_agent_task_and_operation() -> None:
    store, registry = FakeStore(), CollectorRegistry()
    costs = tracker(store, FixedClock(), registry)
    rec = await costs.record(mini(10_000, 2_000), "compression.stage", "a1", "t1")
    assert (rec.tokens_in, rec.tokens_out) == (10_000, 2_000)
    assert rec.cost_usd == pytest.approx(0.004 + 0.0032)
    assert (rec.agent_id, rec.task_id, rec.operation, rec.created_at) == (
        "a1",
        "t1",
        "compression.stage",
        T0,
    )
    assert store.costs == [rec]
    labels = {"operation": "compression.stage", "model": "gpt-4.1-mini"}
    assert registry.get_sample_value("agentcore_llm_cost_usd_total", labels) == pytest.approx(
        0.0072
    )
    tokens_in = registry.get_sample_value(
        "agentcore_llm_tokens_total", {**labels, "direction": "input"}
    )
    assert tokens_in == 10_000


async def test_record_of_an_unpriced_model_stores_nothing() -> None:
    store = FakeStore()
    costs = tracker(store, FixedClock())
    with pytest.raises(ConfigurationError, match="'local-llm'"):
        await costs.record(TokenUsage("local-llm", 100, 10), "fact_extraction")
    assert store.costs == []


async def test_record_rejects_bad_operation_and_negative_tokens() -> None:
    costs = tracker(FakeStore(), FixedClock())
    with pytest.raises(ValueError, match="operation"):
        await costs.record(mini(1), "")
    with pytest.raises(ValueError, match="operation"):
        await costs.record(mini(1), "x" * 65)
    with pytest.raises(ValueError, match="non-negative"):
        await costs.record(mini(-1), "embedding")


# --- months -----------------------------------------------------------------------------------


def test_month_bounds() -> None:
    assert month_bounds("2026-02") == (
        datetime(2026, 2, 1, tzinfo=UTC),
        datetime(2026, 3, 1, tzinfo=UTC),
    )
    assert month_bounds("2025-12") == (
        datetime(2025, 12, 1, tzinfo=UTC),
        datetime(2026, 1, 1, tzinfo=UTC),
    )
    for bad in ("2026-13", "2026-00", "26-01", "2026-1", "2026-01-01", "0000-01", "9999-12"):
        with pytest.raises(InvalidParams):
            month_bounds(bad)


async def test_records_fall_in_their_utc_calendar_month() -> None:
    store, clock = FakeStore(), FixedClock(datetime(2026, 1, 31, 23, 59, 59, tzinfo=UTC))
    costs = tracker(store, clock)
    await costs.record(mini(1_000), "fact_extraction")
    # 00:30 at UTC+1 on February 1st is still January in UTC.
    clock.now = datetime(2026, 2, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    await costs.record(mini(2_000), "fact_extraction")
    clock.now = datetime(2026, 2, 1, 0, 0, tzinfo=UTC)
    await costs.record(mini(4_000), "fact_extraction")

    january, february = await costs.report(month="2026-01"), await costs.report()
    assert (january.month, january.totals.tokens_in, january.totals.calls) == ("2026-01", 3_000, 2)
    assert (february.month, february.totals.tokens_in) == ("2026-02", 4_000)
    assert february.budget.spent_usd == pytest.approx(4_000 * 0.40 / MILLION)


# --- budget -----------------------------------------------------------------------------------


async def test_alert_at_75_percent_once_per_month(caplog: pytest.LogCaptureFixture) -> None:
    store, clock, registry = FakeStore(), FixedClock(), CollectorRegistry()
    costs = tracker(store, clock, registry, budget=100.0)

    def alerts() -> float | None:
        return registry.get_sample_value("agentcore_budget_alerts_total")

    await costs.record(dollars_of_mini(74.0), "compression.stage")
    status = await costs.check_budget()
    assert not status.alert
    assert status.used_pct == pytest.approx(74.0)
    assert alerts() == 0
    assert registry.get_sample_value("agentcore_budget_used_ratio") == pytest.approx(0.74)
    assert registry.get_sample_value("agentcore_budget_spent_usd") == pytest.approx(74.0)
    assert registry.get_sample_value("agentcore_budget_usd") == 100.0

    with caplog.at_level(logging.WARNING, logger="agentcore.services.costs"):
        await costs.record(dollars_of_mini(1.0), "compression.stage")  # exactly 75%
        assert (await costs.check_budget()).alert
        await costs.record(dollars_of_mini(5.0), "compression.stage")
        await costs.check_budget(estimated_usd=1.0)
    assert alerts() == 1
    warnings = [r for r in caplog.records if "monthly budget" in r.getMessage()]
    assert len(warnings) == 1
    assert "2026-03" in warnings[0].getMessage()
    report = await costs.report()
    assert report.budget.alert
    assert report.budget.used_pct == pytest.approx(80.0)

    clock.now = datetime(2026, 4, 2, tzinfo=UTC)  # a new month starts below the threshold
    assert not (await costs.check_budget()).alert
    await costs.record(dollars_of_mini(90.0), "compression.stage")
    assert alerts() == 2


async def test_refusal_once_the_budget_is_spent() -> None:
    store, registry = FakeStore(), CollectorRegistry()
    costs = tracker(store, FixedClock(), registry, budget=10.0)
    await costs.record(dollars_of_mini(10.0), "compression.task")
    with pytest.raises(BudgetExceeded) as caught:
        await costs.check_budget()
    err = caught.value
    assert err.code == "BUDGET_EXCEEDED"
    assert "$10.00 of $10.00" in err.message
    assert "2026-03" in err.message
    assert err.details["month"] == "2026-03"
    assert err.details["budget_usd"] == 10.0
    assert registry.get_sample_value("agentcore_budget_refusals_total") == 1


async def test_refusal_when_the_estimate_would_pass_the_budget() -> None:
    costs = tracker(FakeStore(), FixedClock(), budget=10.0)
    await costs.record(dollars_of_mini(9.0), "compression.stage")
    estimate = costs.estimate("gpt-4.1-mini", 2 * MILLION, 0)  # $0.80 fits
    assert (await costs.check_budget(estimate)).spent_usd == pytest.approx(9.0)
    with pytest.raises(BudgetExceeded, match=r"estimated \$1\.2000.*\$9\.00 of \$10\.00"):
        await costs.check_budget(costs.estimate("gpt-4.1-mini", 3 * MILLION, 0))


async def test_zero_budget_allows_no_paid_call() -> None:
    costs = tracker(FakeStore(), FixedClock(), budget=0.0)
    with pytest.raises(BudgetExceeded):
        await costs.check_budget()


async def test_spend_cache_is_bypassed_near_the_threshold() -> None:
    store, clock = FakeStore(), FixedClock()
    costs = tracker(store, clock, budget=100.0, cache_seconds=5.0)
    await costs.check_budget()
    reads = store.sum_reads
    # Another process spends $50: a cached read below the threshold does not see it yet...
    other = CostRecord("x1", "fact_extraction", "gpt-4.1-mini", 0, 0, 50.0, T0)
    store.costs.append(other)
    assert (await costs.check_budget()).spent_usd == 0.0
    assert store.sum_reads == reads
    clock.now += timedelta(seconds=5)  # ...until the cache expires
    assert (await costs.check_budget()).spent_usd == 50.0
    # At or above the threshold every check reads afresh.
    store.costs.append(replace(other, id="x2", cost_usd=30.0))
    assert (await costs.check_budget()).spent_usd == 50.0
    clock.now += timedelta(seconds=5)
    assert (await costs.check_budget()).used_pct == pytest.approx(80.0)
    store.costs.append(replace(other, id="x3", cost_usd=19.0))
    assert (await costs.check_budget()).spent_usd == pytest.approx(99.0)
    store.costs.append(replace(other, id="x4", cost_usd=1.0))
    with pytest.raises(BudgetExceeded):
        await costs.check_budget()


# --- savings and report -----------------------------------------------------------------------


async def test_savings_against_the_reasoning_model_at_list_prices() -> None:
    costs = tracker(FakeStore(), FixedClock(), budget=1_000.0)
    await costs.record(mini(800_000, 120_000), "compression.stage", "a1", "t1")
    await costs.record(mini(50_000, 10_000), "compression.task", "a1", "t1")
    report = await costs.report()
    # gpt-4.1-mini is a fifth of gpt-4.1's price for input and output alike.
    assert report.reasoning_model == "gpt-4.1"
    assert report.totals.cost_usd == pytest.approx((850_000 * 0.40 + 130_000 * 1.60) / MILLION)
    assert report.reasoning_model_cost_usd == pytest.approx(
        (850_000 * 2.00 + 130_000 * 8.00) / MILLION
    )
    assert report.savings_pct == pytest.approx(80.0)
    assert report.savings_usd == pytest.approx(
        report.reasoning_model_cost_usd - report.totals.cost_usd
    )


async def test_embeddings_cost_the_same_on_both_sides_of_the_savings() -> None:
    costs = tracker(FakeStore(), FixedClock(), budget=1_000.0)
    await costs.record(mini(1_000_000), "fact_extraction")  # $0.40 vs $2.00
    await costs.record(TokenUsage("text-embedding-3-small", 10_000_000), "embedding")  # $0.20
    report = await costs.report()
    assert report.reasoning_model_cost_usd == pytest.approx(2.20)
    assert report.savings_usd == pytest.approx(1.60)
    assert report.savings_pct == pytest.approx(100 * 1.60 / 2.20)


async def test_report_filters_and_budget_of_the_whole_month() -> None:
    store, clock = FakeStore(), FixedClock()
    costs = tracker(store, clock, budget=10.0)
    await costs.record(dollars_of_mini(1.0), "compression.stage", "a1", "t1")
    await costs.record(dollars_of_mini(2.0), "compression.task", "a1", "t2")
    await costs.record(dollars_of_mini(4.0), "compression.stage", "a2", "t3")
    await costs.record(TokenUsage("gpt-4.1", 0, 125_000), "fact_extraction", "a2", "t3")  # $1

    by_agent = await costs.report(agent_id="a1")
    assert by_agent.totals.cost_usd == pytest.approx(3.0)
    assert set(by_agent.by_operation) == {"compression.stage", "compression.task"}
    assert by_agent.budget.spent_usd == pytest.approx(8.0)  # not filtered
    assert by_agent.budget.used_pct == pytest.approx(80.0)
    assert by_agent.budget.alert

    by_task = await costs.report(task_id="t3")
    assert by_task.by_model["gpt-4.1"].cost_usd == pytest.approx(1.0)
    assert by_task.by_model["gpt-4.1-mini"].calls == 1
    assert by_task.totals.calls == 2

    stage = await costs.report(operation="compression.stage")
    assert stage.totals.cost_usd == pytest.approx(5.0)
    assert stage.by_operation["compression.stage"].calls == 2

    both = await costs.report(agent_id="a2", operation="fact_extraction")
    assert both.totals.tokens_out == 125_000
    assert both.savings_usd == 0.0
    assert (await costs.report(month="2026-02")).totals.calls == 0


async def test_cost_report_method() -> None:
    costs = tracker(FakeStore(), FixedClock(), budget=10.0)
    await costs.record(mini(1_000_000, 100_000), "compression.stage", "a1", "t1")
    (method,) = cost_methods(costs)
    assert method.name == "memory.cost.report"
    out = await method.handler(CostReportParams(agent_id="a1"))
    assert isinstance(out, CostReportResult)
    body = out.model_dump()
    assert body["month"] == "2026-03"
    assert body["cost_usd"] == pytest.approx(0.56)
    assert body["by_operation"]["compression.stage"]["tokens_out"] == 100_000
    assert body["budget_used_pct"] == pytest.approx(5.6)
    assert body["savings_pct"] == pytest.approx(80.0)
    assert not body["alert"]
    for bad in ({"month": "2026-13"}, {"month": 202603}, {"operation": ""}, {"user_id": "u"}):
        with pytest.raises(ValidationError):
            CostReportParams.model_validate(bad)


# --- compression metrics ----------------------------------------------------------------------


async def test_compression_metrics_are_stored_exported_and_summarized() -> None:
    store, registry = FakeStore(), CollectorRegistry()
    recorder = CompressionMetricsRecorder(store, FixedClock(), registry)
    await recorder.record(
        level="stage",
        task_id="t1",
        stage_id="s1",
        input_tokens=1000,
        output_tokens=100,
        ratio=10.0,
        retention=1.0,
        engine="extractive",
        fallback=False,
    )
    await recorder.record(
        level=CompressionLevel.STAGE,
        task_id="t1",
        stage_id="s2",
        input_tokens=1200,
        output_tokens=150,
        ratio=8.0,
        retention=0.9,
        engine="extractive",
        fallback=True,
    )
    await recorder.record(
        level="task",
        task_id="t1",
        stage_id=None,
        input_tokens=250,
        output_tokens=50,
        ratio=5.0,
        retention=None,
        engine="llm",
        fallback=False,
        cost_usd=0.0004,
    )
    assert [m.level for m in store.metrics] == ["stage", "stage", "task"]

    summary = await recorder.summary("t1")
    assert summary.stage is not None
    assert summary.task is not None
    assert (summary.stage.compressions, summary.stage.avg_ratio) == (2, 9.0)
    assert summary.stage.avg_retention == pytest.approx(0.95)
    assert (summary.task.avg_ratio, summary.task.avg_retention) == (5.0, None)
    figures = summary.as_metrics()
    assert figures["compression_fallbacks"] == 1
    assert figures["compression_cost_usd"] == pytest.approx(0.0004)
    assert figures["compression_tokens_in"] == 2450
    assert (await recorder.summary("other")).as_metrics()["stage_compressions"] == 0

    stage_extractive = {"level": "stage", "engine": "extractive"}
    assert registry.get_sample_value("agentcore_compression_factor_count", stage_extractive) == 2
    assert registry.get_sample_value("agentcore_compression_factor_sum", stage_extractive) == 18
    fallbacks = registry.get_sample_value(
        "agentcore_compressions_total", {**stage_extractive, "fallback": "true"}
    )
    assert fallbacks == 1
    task_llm = {"level": "task", "engine": "llm"}
    retention = registry.get_sample_value("agentcore_compression_retention_ratio_count", task_llm)
    assert retention is None
    cost = registry.get_sample_value("agentcore_compression_cost_usd_total", task_llm)
    assert cost == pytest.approx(0.0004)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"stage_id": None}, "stage_id"),
        ({"level": "episode"}, "episode"),
        ({"ratio": float("inf")}, "ratio"),
        ({"retention": 1.5}, "retention"),
        ({"input_tokens": -1}, "non-negative"),
        ({"engine": ""}, "engine"),
        ({"cost_usd": -0.01}, "cost_usd"),
    ],
)
async def test_compression_metrics_reject_bad_values(
    change: dict[str, object], message: str
) -> None:
    store = FakeStore()
    recorder = CompressionMetricsRecorder(store, FixedClock(), CollectorRegistry())
    values: dict[str, object] = {
        "level": "stage",
        "task_id": "t1",
        "stage_id": "s1",
        "input_tokens": 100,
        "output_tokens": 10,
        "ratio": 10.0,
        "retention": 1.0,
        "engine": "extractive",
        "fallback": False,
    }
    with pytest.raises(ValueError, match=message):
        await recorder.record(**{**values, **change})  # type: ignore[arg-type]
    assert store.metrics == []
