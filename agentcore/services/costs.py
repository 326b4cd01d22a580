"""Cost control (NFR-CE): tokens and dollars of every model call, the monthly budget, and the
savings against running the same calls on the reasoning model.

- **Prices** come from ``PriceTable``: dollars per million input and output tokens per model,
  OpenAI's list prices by default, merged under ``MODEL_PRICES`` from settings. A model without
  a price is refused (``ConfigurationError``) rather than recorded at a silently wrong $0: the
  composition root checks the configured models at start-up, ``record`` checks any other.
- **Records** (``record``) store tokens and dollars per agent, task and operation, each in its
  own transaction: the money is spent once the call returned, whatever happens to the work
  that made it.
- **Budget** (``check_budget``, before each paid call): the spend of the calendar month (UTC)
  is an indexed SUM over ``cost_records.created_at``. It is cached for ``spend_cache_seconds``
  while the spend is below the alert threshold, and read afresh at or above it and after every
  ``record`` (which sums in its own transaction), so the cache never hides spend near the limit.
  Calls already in flight when the limit is reached may still finish: the bound is as tight as
  the calls' estimates. Crossing ``ALERT_THRESHOLD_PCT`` logs a warning and counts
  ``agentcore_budget_alerts_total`` once per month in each process.
- **Savings** (NFR-CE1): what ``REASONING_MODEL`` would have cost for the same tokens. A
  reasoning model does not embed, so embedding operations count at their own cost on both sides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry, Counter, Gauge

from agentcore.domain.clock import Clock
from agentcore.domain.errors import BudgetExceeded
from agentcore.domain.models import new_id
from agentcore.domain.pricing import (
    CostQuery,
    CostRecord,
    CostTotals,
    PriceTable,
    month_bounds,
    month_of,
)
from agentcore.domain.usage import TokenUsage
from agentcore.services.ports import UnitOfWorkFactory

log = logging.getLogger(__name__)

# Operation names used by the services (any name up to 64 characters is accepted).
COMPRESSION_STAGE = "compression.stage"
COMPRESSION_TASK = "compression.task"
FACT_EXTRACTION = "fact_extraction"
EMBEDDING = "embedding"
MAX_OPERATION_LENGTH = 64


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    month: str
    spent_usd: float
    budget_usd: float
    used_pct: float
    alert: bool


@dataclass(slots=True)
class Breakdown:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0

    def add(self, row: CostTotals) -> None:
        self.calls += row.calls
        self.tokens_in += row.tokens_in
        self.tokens_out += row.tokens_out
        self.cost_usd += row.cost_usd


@dataclass(frozen=True, slots=True)
class CostReport:
    """Spend of the records matching a filter in one month; the budget figures are for the
    whole month, whatever the filter."""

    month: str
    totals: Breakdown
    by_operation: dict[str, Breakdown]
    by_model: dict[str, Breakdown]
    budget: BudgetStatus
    reasoning_model: str
    reasoning_model_cost_usd: float
    savings_usd: float
    savings_pct: float


class _CostMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.dollars = Counter(
            "agentcore_llm_cost_usd_total",
            "Dollars spent on model calls, by operation and model",
            ["operation", "model"],
            registry=registry,
        )
        self.tokens = Counter(
            "agentcore_llm_tokens_total",
            "Tokens of model calls, by operation, model and direction (input or output)",
            ["operation", "model", "direction"],
            registry=registry,
        )
        self.alerts = Counter(
            "agentcore_budget_alerts_total",
            "Months whose spend crossed ALERT_THRESHOLD_PCT of MONTHLY_TOKEN_BUDGET_USD",
            registry=registry,
        )
        self.refusals = Counter(
            "agentcore_budget_refusals_total",
            "Model calls refused because they would pass the monthly budget",
            registry=registry,
        )
        self.used = Gauge(
            "agentcore_budget_used_ratio",
            "Share of this month's budget spent (1: spent), as last read by this process",
            # Several processes: the latest read of any (the spend is the whole service's).
            multiprocess_mode="mostrecent",
            registry=registry,
        )
        self.spent = Gauge(
            "agentcore_budget_spent_usd",
            "Dollars spent this month by every process, as last read by this process",
            multiprocess_mode="mostrecent",
            registry=registry,
        )
        self.budget = Gauge(
            "agentcore_budget_usd",
            "The monthly budget of model calls (MONTHLY_TOKEN_BUDGET_USD)",
            multiprocess_mode="mostrecent",
            registry=registry,
        )

    def month_read(self, status: BudgetStatus) -> None:
        self.used.set(status.used_pct / 100)
        self.spent.set(status.spent_usd)


def is_embedding(operation: str) -> bool:
    return operation == EMBEDDING or operation.startswith(EMBEDDING + ".")


class CostTracker:
    """Records model spend, enforces the monthly budget and reports costs and savings."""

    def __init__(
        self,
        uows: UnitOfWorkFactory,
        prices: PriceTable,
        clock: Clock,
        registry: CollectorRegistry,
        *,
        reasoning_model: str,
        monthly_budget_usd: float,
        alert_threshold_pct: float = 75.0,
        spend_cache_seconds: float = 5.0,
    ) -> None:
        prices.require(reasoning_model)
        self._uows = uows
        self._prices = prices
        self._clock = clock
        self._metrics = _CostMetrics(registry)
        self._metrics.budget.set(monthly_budget_usd)
        self._reasoning_model = reasoning_model
        self._budget = monthly_budget_usd
        self._alert_pct = alert_threshold_pct
        self._cache_ttl = timedelta(seconds=spend_cache_seconds)
        self._cached: tuple[str, float, datetime] | None = None  # month, spent, read at
        self._alerted: set[str] = set()

    def estimate(self, model: str, tokens_in: int, tokens_out: int) -> float:
        """Dollars a call of ``model`` would cost; for ``check_budget(estimated_usd=...)``."""
        return self._prices.cost(model, tokens_in, tokens_out)

    async def record(
        self,
        usage: TokenUsage,
        operation: str,
        agent_id: str | None = None,
        task_id: str | None = None,
    ) -> CostRecord:
        """Store the tokens and dollars of one operation's model calls.

        Raises ``ConfigurationError`` when ``usage.model`` has no price (nothing is stored).
        """
        if not 0 < len(operation) <= MAX_OPERATION_LENGTH:
            raise ValueError(f"operation must be 1-{MAX_OPERATION_LENGTH} characters")
        if usage.prompt_tokens < 0 or usage.completion_tokens < 0:
            raise ValueError("token counts must be non-negative")
        cost = self._prices.cost(usage.model, usage.prompt_tokens, usage.completion_tokens)
        now = self._clock()
        record = CostRecord(
            id=new_id(),
            operation=operation,
            model=usage.model,
            tokens_in=usage.prompt_tokens,
            tokens_out=usage.completion_tokens,
            cost_usd=cost,
            created_at=now,
            agent_id=agent_id,
            task_id=task_id,
        )
        month = month_of(now)
        since, until = month_bounds(month)
        async with self._uows() as uow:
            await uow.costs.add(record)
            spent = await uow.costs.spent(since, until)
            await uow.commit()
        self._cached = (month, spent, now)
        self._metrics.dollars.labels(operation, usage.model).inc(cost)
        self._metrics.tokens.labels(operation, usage.model, "input").inc(usage.prompt_tokens)
        self._metrics.tokens.labels(operation, usage.model, "output").inc(usage.completion_tokens)
        self._observe(month, spent)
        return record

    async def check_budget(self, estimated_usd: float = 0.0) -> BudgetStatus:
        """Call before a paid model call. Raises ``BudgetExceeded`` when this month's budget is
        spent or the call's estimate would pass it; returns the month's status otherwise."""
        if estimated_usd < 0:
            raise ValueError("estimated_usd must be non-negative")
        month = month_of(self._clock())
        spent = await self._month_spent(month)
        status = self._observe(month, spent)
        if spent >= self._budget or spent + estimated_usd > self._budget:
            self._metrics.refusals.inc()
            if spent >= self._budget:
                what = "the monthly model budget is spent"
            else:
                what = f"this call (estimated ${estimated_usd:.4f}) would pass the monthly budget"
            raise BudgetExceeded(
                f"{what}: ${spent:.2f} of ${self._budget:.2f} spent in {month} (UTC); "
                "raise MONTHLY_TOKEN_BUDGET_USD or wait for the next month",
                month=month,
                spent_usd=round(spent, 6),
                budget_usd=self._budget,
                estimated_usd=round(estimated_usd, 6),
            )
        return status

    async def budget_status(self, month: str | None = None) -> BudgetStatus:
        """The budget figures of ``month`` (default: the current one), read afresh."""
        month = month or month_of(self._clock())
        since, until = month_bounds(month)
        async with self._uows(read_only=True) as uow:
            spent = await uow.costs.spent(since, until)
        status = self._status(month, spent)
        if month == month_of(self._clock()):
            self._metrics.month_read(status)
        return status

    async def report(
        self,
        *,
        month: str | None = None,
        agent_id: str | None = None,
        task_id: str | None = None,
        operation: str | None = None,
    ) -> CostReport:
        """Tokens, dollars and savings of the matching records of ``month`` (default: now)."""
        month = month or month_of(self._clock())
        since, until = month_bounds(month)
        query = CostQuery(since, until, agent_id=agent_id, task_id=task_id, operation=operation)
        async with self._uows(read_only=True) as uow:
            rows = await uow.costs.totals(query)
            spent = await uow.costs.spent(since, until)
        totals = Breakdown()
        by_operation: dict[str, Breakdown] = {}
        by_model: dict[str, Breakdown] = {}
        reasoning_cost = 0.0
        reasoning = self._prices.price(self._reasoning_model)
        for row in rows:
            totals.add(row)
            by_operation.setdefault(row.operation, Breakdown()).add(row)
            by_model.setdefault(row.model, Breakdown()).add(row)
            if is_embedding(row.operation):
                reasoning_cost += row.cost_usd
            else:
                reasoning_cost += reasoning.cost(row.tokens_in, row.tokens_out)
        savings = reasoning_cost - totals.cost_usd
        return CostReport(
            month=month,
            totals=totals,
            by_operation=by_operation,
            by_model=by_model,
            budget=self._status(month, spent),
            reasoning_model=self._reasoning_model,
            reasoning_model_cost_usd=reasoning_cost,
            savings_usd=savings,
            savings_pct=100.0 * savings / reasoning_cost if reasoning_cost > 0 else 0.0,
        )

    async def _month_spent(self, month: str) -> float:
        now = self._clock()
        if self._cached is not None:
            cached_month, spent, read_at = self._cached
            fresh = now - read_at < self._cache_ttl
            if cached_month == month and fresh and self._used_pct(spent) < self._alert_pct:
                return spent
        since, until = month_bounds(month)
        async with self._uows(read_only=True) as uow:
            spent = await uow.costs.spent(since, until)
        self._cached = (month, spent, now)
        return spent

    def _used_pct(self, spent: float) -> float:
        if self._budget <= 0:  # a zero budget allows no paid call: it is always used up
            return 100.0
        return 100.0 * spent / self._budget

    def _status(self, month: str, spent: float) -> BudgetStatus:
        used = self._used_pct(spent)
        alert = used >= self._alert_pct
        return BudgetStatus(month, spent, self._budget, used, alert)

    def _observe(self, month: str, spent: float) -> BudgetStatus:
        """Export the month's spend; alert once per month when it crosses the threshold."""
        status = self._status(month, spent)
        if month == month_of(self._clock()):
            self._metrics.month_read(status)
        if status.alert and month not in self._alerted:
            self._alerted.add(month)
            self._metrics.alerts.inc()
            log.warning(
                "model spend reached %.1f%% of the monthly budget: $%.2f of $%.2f in %s "
                "(alert threshold %.0f%%)",
                status.used_pct,
                spent,
                self._budget,
                month,
                self._alert_pct,
            )
        return status
