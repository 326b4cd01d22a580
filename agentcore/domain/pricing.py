"""Model prices (dollars per million tokens) and calendar months, for cost accounting."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from agentcore.domain.errors import ConfigurationError, InvalidParams

# OpenAI's public list prices (standard tier, USD per 1M tokens: input, output) from
# https://openai.com/api/pricing/ . Not negotiated or batch prices; override with MODEL_PRICES.
# (The spec's "$0.15/1M" for gpt-4.1-mini is gpt-4o-mini's input price.)
DEFAULT_PRICES: Mapping[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
}
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # gpt-4.1-mini-2025-04-14 → gpt-4.1-mini
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


@dataclass(frozen=True, slots=True)
class Price:
    """Dollars per one million input (prompt) and output (completion) tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input_per_million + tokens_out * self.output_per_million) / 1e6


class PriceTable:
    """The price of each model: ``DEFAULT_PRICES`` with ``overrides`` merged over them."""

    def __init__(self, overrides: Mapping[str, Sequence[float]] | None = None) -> None:
        merged = {**DEFAULT_PRICES, **(overrides or {})}
        self._prices: dict[str, Price] = {}
        for model, pair in merged.items():
            if len(pair) != 2 or min(pair) < 0:
                raise ConfigurationError(
                    f"MODEL_PRICES[{model!r}] must be [input, output] dollars per 1M tokens, "
                    "both non-negative"
                )
            self._prices[model] = Price(float(pair[0]), float(pair[1]))

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self._lookup(model) is not None

    def price(self, model: str) -> Price:
        """The model's price; a dated snapshot (``-YYYY-MM-DD``) falls back to its base model."""
        found = self._lookup(model)
        if found is None:
            raise ConfigurationError(
                f"no price for model {model!r}: add it to MODEL_PRICES "
                '(JSON, e.g. {"' + model + '": [input, output]} in dollars per 1M tokens)'
            )
        return found

    def cost(self, model: str, tokens_in: int, tokens_out: int) -> float:
        return self.price(model).cost(tokens_in, tokens_out)

    def require(self, *models: str) -> None:
        """Raise ``ConfigurationError`` naming every model without a price."""
        missing = sorted({m for m in models if m not in self})
        if missing:
            raise ConfigurationError(
                f"no price for configured model(s) {', '.join(missing)}: add them to "
                "MODEL_PRICES (JSON object of model → [input, output] dollars per 1M tokens)"
            )

    def _lookup(self, model: str) -> Price | None:
        return self._prices.get(model) or self._prices.get(_SNAPSHOT.sub("", model))


def month_of(at: datetime) -> str:
    """``YYYY-MM`` of the calendar month (UTC) holding ``at``."""
    return at.astimezone(UTC).strftime("%Y-%m")


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """[first instant, first instant of the next month) of ``YYYY-MM``, in UTC."""
    match = _MONTH.match(month)
    if match is None:
        raise InvalidParams(
            "month must be YYYY-MM", errors=[{"field": "month", "message": "expected YYYY-MM"}]
        )
    year, number = int(match.group(1)), int(match.group(2))
    if not 1 <= year < 9999:  # datetime's range, with room for the next month
        raise InvalidParams(
            "month is out of range", errors=[{"field": "month", "message": "year 0001-9998"}]
        )
    start = datetime(year, number, 1, tzinfo=UTC)
    end = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    return start, end


@dataclass(frozen=True, slots=True)
class CostRecord:
    id: str
    operation: str
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    created_at: datetime
    agent_id: str | None = None
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class CostQuery:
    """Records created in [since, until) matching every filter given."""

    since: datetime
    until: datetime
    agent_id: str | None = None
    task_id: str | None = None
    operation: str | None = None


@dataclass(frozen=True, slots=True)
class CostTotals:
    """The sums of one (operation, model) group of records."""

    operation: str
    model: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
