"""Filling templates: one trace's state (``Ctx``), one memory's slot values (``Fill``), and
``draw`` for value specs. Every random draw goes through the trace's seeded ``rng``, in a fixed
order, so a seed always gives the same text."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta

from .catalog import Catalog, Domain, Metric

_DIGITS = "0123456789"
_ALT = re.compile(r"\[\[(.*?)\]\]")
_SLOT = re.compile(r"\{([A-Za-z][A-Za-z_]*?)(\d?)\}")
_PARAM = re.compile(r"\{p_(\w+)\}")
_DRAW = re.compile(r"<(\w+)([^<>]*)>")

# Slots filled from the trace's pools of domain phrases, rarely used values first.
_POOLS = frozenset(
    (
        *("component", "file", "py_file", "test_file", "test", "func", "table", "host"),
        *("symptom", "finding", "other_wrong", "alt_fix", "error", "req", "risk", "question"),
        "remark",
    )
)
# Slots drawn together with their linked slots: slot -> group.
_GROUPS: dict[str, str] = {
    "person": "person",
    "role": "person",
    "obs_file": "obs",
    "obs": "obs",
    "edit_file": "edit",
    "edit": "edit",
    "tool": "cmd",
    "cmd": "cmd",
    "outcome": "cmd",
    "m_name": "metric",
    "m_before": "metric",
    "m_mid": "metric",
    "m_after": "metric",
    "m_unit": "metric",
}
_SINGLES = frozenset(
    ("cause", "fix", "wrong", "reviewer", "estimate", "suite", "passed", "date", "time", "answer")
)

Lookup = Callable[[str, list[str]], str]


def hex_digits(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(4 * digits):0{digits}x}"


def draw(spec: str, rng: random.Random, lookup: Lookup | None = None) -> str:
    """Render a value spec: literal text with draws ``<int lo hi [format]>``,
    ``<float lo hi decimals>``, ``<hex digits>`` and ``<choice a|b|c>``; any other
    ``<kind args>`` goes to ``lookup``."""

    def one(match: re.Match[str]) -> str:
        kind: str = match.group(1)
        args: list[str] = match.group(2).split()
        if kind == "int":
            return format(rng.randint(int(args[0]), int(args[1])), "".join(args[2:]))
        if kind == "float":
            return f"{rng.uniform(float(args[0]), float(args[1])):.{int(args[2])}f}"
        if kind == "hex":
            return hex_digits(rng, int(args[0]))
        if kind == "choice":
            return rng.choice(args[0].split("|"))
        if lookup is None:
            raise KeyError(f"unknown draw <{kind}> in {spec!r}")
        return lookup(kind, args)

    return _DRAW.sub(one, spec)


@dataclass(slots=True)
class Ctx:
    """One trace's state: its domain, parameter values and the story picked for it."""

    catalog: Catalog
    rng: random.Random
    domain: Domain
    params: dict[str, str]
    pools: dict[str, tuple[str, ...]]
    metrics: tuple[tuple[Metric, float, float], ...]  # (metric, before, after)
    cause: str
    fix: str
    wrong: str
    reviewer: str
    estimate: str
    suite: int  # tests in the full suite
    base_date: date
    zone: str
    used_soft: set[str] = field(default_factory=set)
    memo: dict[str, str] = field(default_factory=dict)  # command lines and fixed outcomes

    def sub(self, text: str) -> str:
        return _PARAM.sub(lambda m: self.params[m.group(1)], text)


def fmt_value(value: float, decimals: int) -> str:
    if decimals:
        return f"{value:.{decimals}f}"
    number = round(value)
    return f"{number:,}" if number >= 10_000 else str(number)


class Fill:
    """Fills one memory's template: ``[[a|b]]`` picks an alternative, ``{slot}`` a value.

    Values are drawn once per memory and reused, so ``{file}`` twice names the same file while
    ``{file2}`` names a different one; a capitalized ``{File}`` capitalizes the value. Linked
    slots (a person and their role, a command and its outcome, a metric and its values) are
    drawn together. Unknown names are left untouched, so code such as ``f"{account_id}"`` in a
    diff survives.
    """

    __slots__ = ("ctx", "memo", "picked", "rng", "usage", "values")

    def __init__(self, ctx: Ctx, usage: dict[str, dict[int, int]] | None = None) -> None:
        self.ctx = ctx
        self.rng = ctx.rng
        self.values: dict[str, str] = {}
        self.picked: dict[str, set[int]] = {}
        # How often each value was drawn so far in the stage: rarely used values go first.
        self.usage: dict[str, dict[int, int]] = {} if usage is None else usage
        # Command lines and single outcomes already written in the trace, so that a command run
        # twice reads the same and reports the same fact.
        self.memo = ctx.memo

    def __call__(self, template: str) -> str:
        text = self.ctx.sub(template.removeprefix("^"))
        text = _ALT.sub(lambda m: self.rng.choice(m.group(1).split("|")), text)
        return _SLOT.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        name, suffix = match.group(1), match.group(2)
        low = name[0].lower() + name[1:]
        known = (
            low in _POOLS or low in _GROUPS or low in _SINGLES or low in self.ctx.catalog.numbers
        )
        if not known:
            return match.group(0)
        value = self.get(low + suffix)
        return value[:1].upper() + value[1:] if name[0].isupper() else value

    def get(self, key: str) -> str:
        if key not in self.values:
            self._draw(key)
        return self.values[key]

    def _index(self, group: str, size: int) -> int:
        taken = self.picked.setdefault(group, set())
        counts = self.usage.setdefault(group, {})
        free = [i for i in range(size) if i not in taken] or list(range(size))
        low = min(counts.get(i, 0) for i in free)
        index = self.rng.choice([i for i in free if counts.get(i, 0) == low])
        taken.add(index)
        counts[index] = counts.get(index, 0) + 1
        return index

    def _draw(self, key: str) -> None:
        base = key.rstrip(_DIGITS)
        suffix = key[len(base) :]
        ctx, rng, domain = self.ctx, self.rng, self.ctx.domain
        group = _GROUPS.get(base)
        if base in ctx.pools:
            pool = ctx.pools[base]
            self.values[key] = self(pool[self._index(base, len(pool))])
        elif group == "person":
            name, role = domain.people[self._index(group, len(domain.people))]
            self.values["person" + suffix], self.values["role" + suffix] = name, role
        elif group == "obs":
            path, clause = domain.obs[self._index(group, len(domain.obs))]
            self.values["obs_file" + suffix], self.values["obs" + suffix] = path, self(clause)
        elif group == "edit":
            path, change = domain.edits[self._index(group, len(domain.edits))]
            self.values["edit_file" + suffix], self.values["edit" + suffix] = path, self(change)
        elif group == "cmd":
            self._draw_command(suffix)
        elif group == "metric":
            self._draw_metric(suffix)
        elif base in ("cause", "fix", "wrong", "reviewer", "estimate"):
            self.values[key] = self(getattr(ctx, base))
        elif base == "suite":
            self.values[key] = str(ctx.suite)
        elif base == "passed":  # a test folder: part of the suite
            self.values[key] = str(rng.randint(ctx.suite // 6, ctx.suite // 2))
        elif base == "date":
            self.values[key] = (ctx.base_date - timedelta(days=rng.randint(0, 25))).isoformat()
        elif base == "time":
            hh, mm, ss = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
            self.values[key] = f"{hh:02d}:{mm:02d}:{ss:02d}"
        elif base in ctx.catalog.numbers:
            self.values[key] = self._draw_number(base)
        else:
            raise KeyError(key)

    def _draw_command(self, suffix: str) -> None:
        index = self._index("cmd", len(self.ctx.domain.commands))
        tool, command, outcomes = self.ctx.domain.commands[index]
        self.values["tool" + suffix] = tool
        self.values["cmd" + suffix] = self._memo(f"cmd{index}", command)
        if len(outcomes) == 1:
            self.values["outcome" + suffix] = self._memo(f"outcome{index}", outcomes[0])
        else:
            self.values["outcome" + suffix] = self(self.rng.choice(outcomes))

    def _draw_metric(self, suffix: str) -> None:
        index = self._index("metric", len(self.ctx.metrics))
        metric, before, after = self.ctx.metrics[index]
        mid = before + (after - before) * self.rng.uniform(0.35, 0.7)
        self.values["_metric" + suffix] = str(index)
        self.values["m_name" + suffix] = metric.name
        self.values["m_unit" + suffix] = metric.unit
        self.values["m_before" + suffix] = fmt_value(before, metric.decimals)
        self.values["m_mid" + suffix] = fmt_value(mid, metric.decimals)
        self.values["m_after" + suffix] = fmt_value(after, metric.decimals)

    def _draw_number(self, base: str) -> str:
        """A number for the slot, different from the memory's other values of the same slot."""
        spec = self.ctx.catalog.numbers[base]
        others = {v for k, v in self.values.items() if k.rstrip(_DIGITS) == base}
        value = draw(spec, self.rng)
        for _ in range(12):
            if value not in others:
                break
            value = draw(spec, self.rng)
        return value

    def _memo(self, key: str, template: str) -> str:
        if key not in self.memo:
            self.memo[key] = self(template)
        return self.memo[key]

    def metric_answer(self) -> str:
        """A fresh measurement of this memory's metric near its after-change value."""
        self.get("m_name")
        metric, _, after = self.ctx.metrics[int(self.values["_metric"])]
        return fmt_value(after * self.rng.uniform(0.96, 1.04), metric.decimals)

    def answer(self, spec: str) -> str:
        """A planted detail's answer: ``draw`` plus the trace's own values."""
        return draw(spec, self.rng, self._lookup)

    def _lookup(self, kind: str, args: list[str]) -> str:
        ctx = self.ctx
        if kind == "pick":
            return self.rng.choice(ctx.catalog.lists[args[0]])
        if kind == "days_ago":
            days = self.rng.randint(int(args[0]), int(args[1]))
            return (ctx.base_date - timedelta(days=days)).isoformat()
        if kind == "metric":
            return self.metric_answer()
        fixed = {
            "slug": ctx.domain.slug,
            "stem": ctx.domain.slug.replace("-", "_"),
            "prefix": ctx.domain.prefix,
            "zone": ctx.zone,
        }
        return fixed[kind]
