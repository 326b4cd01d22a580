"""The generator's data: sentence templates, phrases and the ten task domains, read from data/.

``common.json`` holds what every domain shares (numbers, tool calls, follow-ups, planning steps,
soft constraints, generic details), ``stage_templates.json`` the sentence templates per stage as
``[phase, text]`` pairs, and ``domains/<key>.json`` one task domain each. The order of every list
is part of the output: a seeded ``rng.choice`` over a list picks by position.

Text uses two slot syntaxes. Templates (sentences, commands, log lines) take ``{slot}``,
``{p_param}`` and ``[[a|b]]`` alternatives, filled by ``fill.Fill``. Value specs (domain
``params``, ``numbers`` and detail ``answer``s) are literal text with ``<kind args>`` draws,
rendered by ``fill.draw``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("data")


@dataclass(frozen=True, slots=True)
class Metric:
    name: str  # without article: "peak RSS of the export worker"
    unit: str  # appended as is: " MB", "%", ""
    before: tuple[float, float]
    after: tuple[float, float]
    decimals: int


@dataclass(frozen=True, slots=True)
class Detail:
    stage: str
    text: str  # holds {answer}
    question: str
    answer: str  # a value spec


@dataclass(frozen=True, slots=True)
class Sql:
    host: str
    query: str
    columns: tuple[tuple[str, str], ...]  # (column, cell kind)


@dataclass(frozen=True, slots=True)
class Domain:
    key: str
    slug: str
    prefix: str  # ticket prefix
    goal: str
    params: Mapping[str, str]  # name -> value spec, drawn once per trace
    components: tuple[str, ...]  # noun phrases with article
    files: tuple[str, ...]
    test_files: tuple[str, ...]
    tests: tuple[str, ...]
    funcs: tuple[str, ...]
    tables: tuple[str, ...]
    hosts: tuple[str, ...]
    people: tuple[tuple[str, str], ...]  # (name, verb phrase: "owns the export service")
    symptoms: tuple[str, ...]  # noun phrases
    causes: tuple[tuple[str, str], ...]  # (clause, infinitive fix without "to")
    wrongs: tuple[str, ...]  # clauses
    alt_fixes: tuple[str, ...]  # infinitive verb phrases
    obs: tuple[tuple[str, str], ...]  # (file, clause)
    errors: tuple[str, ...]
    edits: tuple[tuple[str, str], ...]  # (file, infinitive verb phrase)
    reqs: tuple[str, ...]  # "that ..." clauses
    risks: tuple[str, ...]  # noun phrases
    questions: tuple[str, ...]  # "whether ..." / "how ..." clauses
    commands: tuple[tuple[str, str, tuple[str, ...]], ...]  # (tool, command, outcomes)
    metrics: tuple[Metric, ...]
    sql: Sql
    trace: tuple[tuple[str, str, str], ...]  # (path, function, code line)
    trace_error: str
    diffs: tuple[tuple[str, str, tuple[str, ...]], ...]  # (path, hunk header, lines)
    log_cmd: str
    log_lines: tuple[str, ...]
    outputs: tuple[tuple[str, str], ...]  # (tool, multi-line template)
    critical: tuple[str, ...]  # planning constraints the agent flags, one sentence each
    exec_critical: tuple[str, ...]
    soft: tuple[str, ...]  # unflagged constraint sentences
    details: tuple[Detail, ...]


@dataclass(frozen=True, slots=True)
class Catalog:
    domains: tuple[Domain, ...]
    numbers: Mapping[str, str]  # slot -> value spec, drawn per memory
    templates: Mapping[str, tuple[tuple[int, str], ...]]  # stage -> (phase, template)
    tool_calls: tuple[str, ...]
    follow: Mapping[str, tuple[str, ...]]  # stage -> sentences appended to a memory
    reactions: tuple[str, ...]  # appended only to memories reporting an observation
    step_groups: tuple[tuple[str, ...], ...]  # planning steps, one per group, in this order
    step_first: tuple[str, ...]
    step_middle: tuple[str, ...]
    step_last: tuple[str, ...]
    soft_generic: tuple[str, ...]
    soft_leads: Mapping[str, tuple[str, ...]]
    soft_tails: tuple[str, ...]
    remarks: tuple[str, ...]
    git_messages: tuple[str, ...]
    lists: Mapping[str, tuple[str, ...]]  # for <pick name> in value specs
    details: tuple[Detail, ...]


def _freeze(value: Any) -> Any:
    """JSON lists as tuples, all the way down."""
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, dict):
        return {key: _freeze(item) for key, item in value.items()}
    return value


def _read(name: str) -> Any:
    return _freeze(json.loads((_DATA / name).read_text(encoding="utf-8")))


def _domain(raw: dict[str, Any]) -> Domain:
    return Domain(
        **{
            **raw,
            "metrics": tuple(Metric(**metric) for metric in raw["metrics"]),
            "sql": Sql(**raw["sql"]),
            "details": tuple(Detail(**detail) for detail in raw["details"]),
        }
    )


@cache
def load_catalog() -> Catalog:
    common = _read("common.json")
    steps, soft = common["steps"], common["soft"]
    return Catalog(
        domains=tuple(_domain(_read(f"domains/{key}.json")) for key in common["domains"]),
        numbers=common["numbers"],
        templates=_read("stage_templates.json"),
        tool_calls=common["tool_calls"],
        follow=common["follow"],
        reactions=common["reactions"],
        step_groups=steps["groups"],
        step_first=steps["first"],
        step_middle=steps["middle"],
        step_last=steps["last"],
        soft_generic=soft["generic"],
        soft_leads=soft["leads"],
        soft_tails=soft["tails"],
        remarks=common["remarks"],
        git_messages=common["git_messages"],
        lists=common["lists"],
        details=tuple(Detail(**detail) for detail in common["details"]),
    )
