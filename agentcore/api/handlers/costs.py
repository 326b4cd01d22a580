"""JSON-RPC method of cost control: ``memory.cost.report``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from agentcore.api.params import Identifier, Params
from agentcore.api.rpc import RpcMethod
from agentcore.services.costs import MAX_OPERATION_LENGTH, Breakdown, CostReport, CostTracker

Month = Annotated[str, StringConstraints(pattern=r"^\d{4}-(0[1-9]|1[0-2])$")]
Operation = Annotated[str, StringConstraints(min_length=1, max_length=MAX_OPERATION_LENGTH)]


class CostReportParams(Params):
    agent_id: Identifier | None = None
    task_id: Identifier | None = None
    operation: Operation | None = Field(
        None, description="e.g. compression.stage, compression.task, fact_extraction, embedding"
    )
    month: Month | None = Field(None, description="YYYY-MM (UTC); default: the current month")


class CostBreakdown(BaseModel):
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float

    @classmethod
    def of(cls, b: Breakdown) -> CostBreakdown:
        return cls(
            calls=b.calls,
            tokens_in=b.tokens_in,
            tokens_out=b.tokens_out,
            cost_usd=round(b.cost_usd, 6),
        )


class CostReportResult(BaseModel):
    month: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float = Field(description="dollars of the records matching the filter")
    by_operation: dict[str, CostBreakdown]
    by_model: dict[str, CostBreakdown]
    budget_usd: float = Field(description="MONTHLY_TOKEN_BUDGET_USD")
    budget_spent_usd: float = Field(description="the whole month's spend, whatever the filter")
    budget_used_pct: float = Field(description="the whole month's spend, whatever the filter")
    alert: bool = Field(description="budget_used_pct is at or above ALERT_THRESHOLD_PCT")
    reasoning_model: str
    reasoning_model_cost_usd: float = Field(
        description="what the same tokens would have cost on the reasoning model"
    )
    savings_usd: float
    savings_pct: float

    @classmethod
    def of(cls, r: CostReport) -> CostReportResult:
        return cls(
            month=r.month,
            calls=r.totals.calls,
            tokens_in=r.totals.tokens_in,
            tokens_out=r.totals.tokens_out,
            cost_usd=round(r.totals.cost_usd, 6),
            by_operation={k: CostBreakdown.of(v) for k, v in r.by_operation.items()},
            by_model={k: CostBreakdown.of(v) for k, v in r.by_model.items()},
            budget_usd=r.budget.budget_usd,
            budget_spent_usd=round(r.budget.spent_usd, 6),
            budget_used_pct=round(r.budget.used_pct, 2),
            alert=r.budget.alert,
            reasoning_model=r.reasoning_model,
            reasoning_model_cost_usd=round(r.reasoning_model_cost_usd, 6),
            savings_usd=round(r.savings_usd, 6),
            savings_pct=round(r.savings_pct, 2),
        )


def cost_methods(costs: CostTracker) -> list[RpcMethod]:
    async def report(a: CostReportParams) -> CostReportResult:
        out = await costs.report(
            month=a.month, agent_id=a.agent_id, task_id=a.task_id, operation=a.operation
        )
        return CostReportResult.of(out)

    return [
        RpcMethod(
            "memory.cost.report",
            CostReportParams,
            CostReportResult,
            report,
            "Tokens and dollars of model calls in a month (UTC) by operation and model, "
            "optionally for one agent, task or operation; the month's budget use and the "
            "savings against the reasoning model.",
        ),
    ]
