"""Seeded generator of realistic multi-stage agent memory traces.

Each trace is what an LLM agent writes into its memory service while working through one long
task, split into the four COMPASS stages (planning, execution, reflection, verification): scratch
notes, tool calls and their output, observations, errors and decisions. The traces feed the stage
compression benchmarks and serve as test input, so they are built to look like real agent notes:
ten task domains with their own files, functions, tables, hosts, tools and people, dozens of
sentence templates per stage that share vocabulary across stages, random values per trace, and a
near-duplicate filter inside every stage. Words like "tests", "plan", "error" or "executed" occur
in every stage, so nothing downstream can lean on stage keywords.

Every stage also carries planted facts for measuring what survives compression:

* ``constraints``: hard constraints of the task, verbatim. Some are whole memories the agent flagged
  ``critical=True`` (two or three in planning, one in execution), others are ordinary sentences
  ("must not", "never", "at most N", "by Friday", "is required") inside unflagged memories.
* ``details``: three to five questions whose short exact answer occurs in exactly one memory of
  the stage.

    .venv/bin/python benchmarks/agent_traces.py [seed] [mixed|small]
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

__all__ = [
    "KEYWORDS",
    "STAGES",
    "PlantedDetail",
    "StageTrace",
    "TaskTrace",
    "TraceMemory",
    "generate_traces",
]

STAGES = ("planning", "execution", "reflection", "verification")
# Words that must occur, in natural use, in every stage of every trace.
KEYWORDS = ("tests", "plan", "verify", "check", "error", "failed", "strategy", "executed")


@dataclass(frozen=True, slots=True)
class TraceMemory:
    content: str
    critical: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlantedDetail:
    question: str
    answer: str


@dataclass(frozen=True, slots=True)
class StageTrace:
    stage_type: str
    memories: tuple[TraceMemory, ...]
    constraints: tuple[str, ...]
    details: tuple[PlantedDetail, ...]


@dataclass(frozen=True, slots=True)
class TaskTrace:
    task_id: str
    domain: str
    goal: str
    stages: tuple[StageTrace, ...]


_SIZES: dict[str, dict[str, tuple[int, int]]] = {
    "mixed": {
        "planning": (30, 50),
        "execution": (60, 150),
        "reflection": (30, 60),
        "verification": (30, 70),
    },
    "small": dict.fromkeys(STAGES, (30, 40)),
}

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_DIGITS = "0123456789"
_ALT = re.compile(r"\[\[(.*?)\]\]")
_SLOT = re.compile(r"\{([A-Za-z][A-Za-z_]*?)(\d?)\}")
_PARAM = re.compile(r"\{p_(\w+)\}")
_TOKEN = re.compile(r"[a-z0-9_]+")
_KEYWORD_RE = {
    word: re.compile(rf"(?<![\w/.\-]){word}(?![\w/\-])", re.IGNORECASE) for word in KEYWORDS
}
# Word-set Jaccard similarity at which two memories of a stage count as near-duplicates; new
# memories aim below _SIMILAR_TARGET and are never kept at _NEAR_DUPLICATE or above if avoidable.
_NEAR_DUPLICATE = 0.6
_SIMILAR_TARGET = 0.5

Gen = Callable[[random.Random], str]


def _ri(lo: int, hi: int) -> Gen:
    return lambda r: str(r.randint(lo, hi))


def _rf(lo: float, hi: float, decimals: int = 1) -> Gen:
    return lambda r: f"{r.uniform(lo, hi):.{decimals}f}"


def _rc(*options: str) -> Gen:
    return lambda r: r.choice(options)


def _rh(digits: int) -> Gen:
    return lambda r: f"{r.getrandbits(4 * digits):0{digits}x}"


_NUMBERS: dict[str, Gen] = {
    "n": _ri(2, 6),
    "count": _ri(8, 40),
    "pct": _ri(3, 45),
    "cov": _ri(78, 97),
    "secs": _rf(2.0, 240.0),
    "mins": _ri(4, 55),
    "hours": _ri(2, 9),
    "failed": _ri(2, 6),
    "skipped": _ri(2, 14),
    "big": lambda r: f"{r.randint(12_000, 4_800_000):,}",
    "mb": _ri(120, 4200),
    "ms": _ri(15, 950),
    "slow_ms": _rf(12_000.0, 34_000.0, 3),
    "line": _ri(20, 980),
    "sha": _rh(7),
    "hex": _rh(12),
    "pid": _ri(1000, 60000),
    "id": _ri(100_000, 999_999),
    "money": _rf(100.0, 9000.0, 2),
    "nfiles": _ri(4, 9),
    "added": _ri(3, 140),
    "removed": _ri(2, 90),
    "ops": _ri(8000, 90000),
    "run": _ri(10_000, 99_999),
    "day": _rc(*_WEEKDAYS),
    "uuid": lambda r: f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}",
}
_POOLS = (
    "component",
    "file",
    "py_file",
    "test_file",
    "test",
    "func",
    "table",
    "host",
    "symptom",
    "finding",
    "other_wrong",
    "alt_fix",
    "error",
    "req",
    "risk",
    "question",
    "remark",
)
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
_SINGLES = (
    "cause",
    "fix",
    "wrong",
    "reviewer",
    "estimate",
    "suite",
    "passed",
    "date",
    "time",
    "answer",
)
_KNOWN = frozenset((*_NUMBERS, *_POOLS, *_GROUPS, *_SINGLES))


@dataclass(frozen=True, slots=True)
class _Metric:
    name: str  # without article: "peak RSS of the export worker"
    unit: str  # appended as is: " MB", "%", ""
    before: tuple[float, float]
    after: tuple[float, float]
    decimals: int = 0


@dataclass(frozen=True, slots=True)
class _Detail:
    stage: str
    text: str  # holds {answer}
    question: str
    answer: Answer


@dataclass(frozen=True, slots=True)
class _Domain:
    key: str
    slug: str
    prefix: str  # ticket prefix
    goal: str
    params: Mapping[str, Gen]
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
    metrics: tuple[_Metric, ...]
    sql: tuple[str, str, tuple[tuple[str, str], ...]]  # (host, query, (column, kind))
    trace: tuple[tuple[str, str, str], ...]  # (path, function, code line)
    trace_error: str
    diffs: tuple[tuple[str, str, tuple[str, ...]], ...]  # (path, hunk header, lines)
    log_cmd: str
    log_lines: tuple[str, ...]
    outputs: tuple[tuple[str, str], ...]  # (tool, multi-line template)
    critical: tuple[str, ...]  # planning constraints the agent flags, one sentence each
    exec_critical: tuple[str, ...]
    soft: tuple[str, ...]  # unflagged constraint sentences
    details: tuple[_Detail, ...]


@dataclass(slots=True)
class _Ctx:
    """One trace's state: its domain, parameter values and the story picked for it."""

    rng: random.Random
    domain: _Domain
    params: dict[str, str]
    pools: dict[str, tuple[str, ...]]
    metrics: tuple[tuple[_Metric, float, float], ...]  # (metric, before, after)
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


def _fmt_value(value: float, decimals: int) -> str:
    if decimals:
        return f"{value:.{decimals}f}"
    number = round(value)
    return f"{number:,}" if number >= 10_000 else str(number)


class _Fill:
    """Fills one memory's template: ``[[a|b]]`` picks an alternative, ``{slot}`` a value.

    Values are drawn once per memory and reused, so ``{file}`` twice names the same file while
    ``{file2}`` names a different one; a capitalized ``{File}`` capitalizes the value. Linked
    slots (a person and their role, a command and its outcome, a metric and its values) are
    drawn together. Unknown names are left untouched, so code such as ``f"{account_id}"`` in a
    diff survives.
    """

    __slots__ = ("ctx", "memo", "picked", "rng", "usage", "values")

    def __init__(self, ctx: _Ctx, usage: dict[str, dict[int, int]] | None = None) -> None:
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
        if low not in _KNOWN:
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
        ctx, rng = self.ctx, self.rng
        group = _GROUPS.get(base)
        if base in ctx.pools:
            pool = ctx.pools[base]
            self.values[key] = self(pool[self._index(base, len(pool))])
        elif group == "person":
            name, role = ctx.domain.people[self._index(group, len(ctx.domain.people))]
            self.values["person" + suffix], self.values["role" + suffix] = name, role
        elif group == "obs":
            path, clause = ctx.domain.obs[self._index(group, len(ctx.domain.obs))]
            self.values["obs_file" + suffix], self.values["obs" + suffix] = path, self(clause)
        elif group == "edit":
            path, change = ctx.domain.edits[self._index(group, len(ctx.domain.edits))]
            self.values["edit_file" + suffix], self.values["edit" + suffix] = path, self(change)
        elif group == "cmd":
            index = self._index(group, len(ctx.domain.commands))
            tool, command, outcomes = ctx.domain.commands[index]
            self.values["tool" + suffix] = tool
            self.values["cmd" + suffix] = self._memo(f"cmd{index}", command)
            if len(outcomes) == 1:
                self.values["outcome" + suffix] = self._memo(f"outcome{index}", outcomes[0])
            else:
                self.values["outcome" + suffix] = self(rng.choice(outcomes))
        elif group == "metric":
            index = self._index(group, len(ctx.metrics))
            metric, before, after = ctx.metrics[index]
            mid = before + (after - before) * rng.uniform(0.35, 0.7)
            self.values["_metric" + suffix] = str(index)
            self.values["m_name" + suffix] = metric.name
            self.values["m_unit" + suffix] = metric.unit
            self.values["m_before" + suffix] = _fmt_value(before, metric.decimals)
            self.values["m_mid" + suffix] = _fmt_value(mid, metric.decimals)
            self.values["m_after" + suffix] = _fmt_value(after, metric.decimals)
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
        elif base in _NUMBERS:
            others = {v for k, v in self.values.items() if k.rstrip(_DIGITS) == base}
            value = _NUMBERS[base](rng)
            for _ in range(12):
                if value not in others:
                    break
                value = _NUMBERS[base](rng)
            self.values[key] = value
        else:
            raise KeyError(key)

    def _memo(self, key: str, template: str) -> str:
        if key not in self.memo:
            self.memo[key] = self(template)
        return self.memo[key]

    def metric_answer(self) -> str:
        """A fresh measurement of this memory's metric near its after-change value."""
        self.get("m_name")
        metric, _, after = self.ctx.metrics[int(self.values["_metric"])]
        return _fmt_value(after * self.rng.uniform(0.96, 1.04), metric.decimals)


Answer = Callable[[_Fill], str]


# ---------------------------------------------------------------------------------------------
# Stage templates: (phase, text). Phase 0, 1 and 2 lean towards the first, middle and last third
# of a stage, which gives each stage a rough narrative order without fixing it.
# ---------------------------------------------------------------------------------------------

_TEMPLATES: dict[str, tuple[tuple[int, str], ...]] = {
    "planning": (
        (0, "^Reading the ticket: users report {symptom}. [[It has been reopened twice "
            "already.|Support attached a log excerpt and two screenshots.|No reproduction steps, "
            "just a screenshot and a timestamp.]]"),
        (0, "^Ticket summary in my own words: {symptom}, and nobody has picked it up since the "
            "last release."),
        (0, "What the code does today, as far as I can tell: {obs}."),
        (0, "Skimmed {obs_file}: {obs}. [[That alone could explain the ticket.|Not obviously "
            "wrong, but worth a closer look.|Noting it for later.]]"),
        (0, "The error in the attached log is `{error}`, [[raised somewhere under {func}|and the "
            "stack trace ends in {func}|with no useful context around it]]."),
        (0, "^The last {count} CI runs on main were green, so the existing tests do not exercise "
            "{symptom}."),
        (0, "git blame on {py_file}: the relevant block was last changed {count} weeks ago, in a "
            "refactor by {person}."),
        (0, "{Component} is reached through {func}, and indirectly through {func2} as well."),
        (0, "^Current numbers from the dashboard: the {m_name} sits around {m_before}{m_unit}."),
        (0, "Existing tests for this area live in {test_file}, and they only cover the happy "
            "path."),
        (0, "^Nothing in the runbook for {component} mentions {symptom}, so this looks new rather "
            "than a known issue."),
        (0, "Looked at how {table} is used: {func} reads it, and I could not find another reader "
            "in the repo."),
        (0, "^According to the ticket history, the last run that executed cleanly was before the "
            "latest release of {component}."),
        (0, "^Found an older ticket with the same error, `{error}`; it was closed as "
            "cannot-reproduce {count} weeks ago."),
        (0, "^The ticket links to a dashboard where the {m_name} jumped around the time of the "
            "last release."),
        (0, "^Read through {test_file}: the fixtures are tiny, which would explain why CI did not "
            "catch this."),
        (0, "Looked at the open PRs touching {file}; there is one from {person}, but it is "
            "unrelated."),
        (1, "^Hypothesis A: {cause}. Hypothesis B: {wrong}. [[A fits the log better.|I can't tell "
            "them apart from the ticket alone.|B would be the cheaper fix, which makes me "
            "suspicious of it.]]"),
        (1, "^My first guess is that {wrong}, but I have nothing that supports it yet."),
        (1, "^Strategy: reproduce first, change as little as possible in {py_file}, then rerun "
            "the tests."),
        (1, "^The plan is to {fix}; if that turns out too invasive, the fallback is to {alt_fix}."),
        (1, "^Alternative strategy: {alt_fix}. Cheaper, but it only hides {symptom}."),
        (1, "To check the hypothesis I can run {test} with a bigger fixture and watch the "
            "{m_name}."),
        (1, "If {test} has failed on main before, the flake tracker will have it; check that "
            "before blaming anything new."),
        (1, "^I want a failing test before touching {func}, something close to {test2} but with "
            "the numbers from the ticket."),
        (1, "^For the end of the task: verify {req}, and compare the {m_name} before and after."),
        (1, "^If the error turns out to be `{error}` everywhere, the plan changes: then the more "
            "likely story is that {finding}."),
        (1, "Side note while reading: {finding}. Possibly unrelated, but it could make the "
            "symptoms worse."),
        (1, "^Decision: keep the fix inside {py_file} instead of spreading it across {component}; "
            "easier to review and to revert."),
        (1, "^How I'll judge success: the {m_name}, currently {m_before}{m_unit}, measured the "
            "same way before and after."),
        (1, "Another angle: maybe {other_wrong}. Easy to rule out with one measurement."),
        (1, "^The smallest useful change is probably in {func}; everything else can stay as it "
            "is."),
        (2, "Open question: {question}. [[Ask {person}.|{Person} would know.|Not blocking for "
            "now.]]"),
        (2, "Risk: {risk}. [[Low probability, high impact.|Better to check this early than at the "
            "end.|Worth a paragraph in the PR description.]]"),
        (2, "{Person} {role}; worth a short message before I change anything in {file}."),
        (2, "^Rough estimate: {estimate} hours for the change itself and about the same again for "
            "testing and review."),
        (2, "^Unclear whether the cleanup script mentioned in the ticket was ever executed on "
            "production or only on staging."),
        (2, "^The tests for {component} take about {mins} minutes in CI, so I'll iterate locally "
            "with `-k {test}`."),
        (2, "Requested read access to {host} so I can look at real data instead of guessing."),
        (2, "^Not in scope: rewriting {component}. Only what is needed to stop {symptom}."),
        (2, "^All {n} failed runs listed in the ticket fall into the same hour; could be a "
            "coincidence, could be load on {host}."),
        (2, "Before writing any code I need to find out {question}."),
        (2, "^Blast radius looks small: grep finds {func} only in {py_file} and its tests."),
        (2, "^Who to ask if I get stuck: {person}, who {role}."),
        (2, "^Timeline: reproduction today, fix and tests tomorrow, verification the day after."),
        (2, "Dependencies on other teams: {person} has to look at anything that touches "
            "{component}."),
    ),
    "execution": (
        (0, "Ran `{cmd}`: {outcome}."),
        (0, "Opened {obs_file}; {obs}."),
        (0, "Reading {obs_file} around line {line}: {obs}."),
        (0, "^Reproduced it: {symptom}, with the {m_name} at {m_before}{m_unit}."),
        (0, "Numbers from {host} match the ticket: the {m_name} is {m_before}{m_unit}."),
        (0, "`{test}` failed with `{error}`[[; the stack points at {func}|, same as in the "
            "ticket|, which is not what the ticket shows]]."),
        (0, "Ruled out the idea that {other_wrong}: [[the numbers are identical with that path "
            "switched off|the profile shows nothing there|that code is not even reached on this "
            "path]]."),
        (0, "^Ruled out my first guess, that {wrong}: the measurements look the same either way."),
        (0, "Grepped for {func} across the repo: {n} call sites, none outside {py_file}."),
        (0, "Query against {table} took {secs}s and returned {big} rows."),
        (0, "Checked the log on {host}: the last {count} occurrences of `{error}` all come from "
            "{func}."),
        (0, "^Found a TODO in {file} from two years ago that describes exactly this problem."),
        (0, "Asked {person} {question}. No reply yet, carrying on in the meantime."),
        (0, "Profile says {pct}% of the wall time is spent inside {func}."),
        (0, "^Listed the recent CI failures: {n} of the last {count} runs failed, all with "
            "`{error}`."),
        (0, "The ticket's log excerpt matches what I see on {host}: `{error}` right before each "
            "incident."),
        (0, "Compared {py_file} with its state before the last release; the relevant lines did "
            "not change."),
        (0, "^Local setup done: dependencies installed, the database container is up, seed data "
            "loaded in {secs}s."),
        (1, "^Confirmed: {cause}."),
        (1, "^Found it, I think: {cause}. Checking with a smaller fixture before changing "
            "anything."),
        (1, "Edited {edit_file} to {edit}."),
        (1, "Next edit: {edit} ({edit_file})."),
        (1, "Change made in {edit_file}: {edit}. [[Diff is {added} lines.|Small diff, "
            "+{added}/-{removed}.|Had to touch the imports as well.]]"),
        (1, "The plan is to rerun the tests once {func} is done; right now `{test}` still fails."),
        (1, "^Strategy change: the first attempt made things worse, so I will {fix} instead."),
        (1, "Tried to {alt_fix}; it works, but the {m_name} barely moved, so I dropped it."),
        (1, "^Stashed the experiment and went back to a clean checkout of {file}."),
        (1, "Rebased on main; one conflict in {file2}, resolved by keeping both sides."),
        (1, "Debug print in {func} confirms the branch is executed for every item, not just the "
            "first one."),
        (1, "Note to self: the error handling around {func} swallows the original exception, "
            "which is why the logs were useless."),
        (1, "Reverted the change to {file2}; it was not needed and made the diff harder to read."),
        (1, "mypy complains about {func} after the change (incompatible return type); fixed the "
            "annotation."),
        (1, "{Component} restarted on my dev box with the patched build; rerunning the "
            "reproduction against it."),
        (1, "Added a case to {test2}; it fails on main and passes with the change, which is what "
            "I wanted."),
        (1, "Wrote a throwaway script to verify {req}; holds on the small fixture."),
        (1, "Error while running the migration check: `{error}`. Looks unrelated to my change, "
            "retrying once."),
        (1, "^Wrote the failing test first: a new case in {test2}, using the numbers from the "
            "ticket."),
        (1, "Second attempt: {edit} in {edit_file}, this time with a guard for the empty case."),
        (1, "^Reading the diff back before committing: the change in {edit_file} is small, the "
            "test changes are larger."),
        (1, "Turned on debug logging for {component}; the extra output confirms that {obs}."),
        (2, "Executed `{cmd}` once more to be sure: {outcome}."),
        (2, "`{cmd}` -> {outcome}"),
        (2, "Output of `{cmd}`: {outcome}. [[Saved it for the PR.|Keeping it for the "
            "write-up.|Pasted into the ticket.]]"),
        (2, "Tests after the edit: {passed} passed, {failed} failed, and the failures are all in "
            "{test_file}."),
        (2, "Reran `{test}` {count} times in a loop: it failed {n} times, so this is not fixed "
            "yet."),
        (2, "Measured the {m_name}: {m_mid}{m_unit} now, {m_before}{m_unit} before the change."),
        (2, "The tests pass, but the {m_name} only moved from {m_before}{m_unit} to "
            "{m_mid}{m_unit}; not enough yet."),
        (2, "Local run of the full suite: {suite} passed, {skipped} skipped in {secs}s."),
        (2, "CI run {run} failed at the lint step (unused import in {py_file}); fixed and pushed "
            "again."),
        (2, "^Pushed the branch; CI started, about {mins} minutes until the results are in."),
        (2, "Committed {sha}: \"{Edit}\"."),
        (2, "Quick check that nothing regressed: `{test}` still passes on the big fixture."),
        (2, "^Time check: {hours} hours in; the fix itself is small, most of the time went into "
            "reproducing."),
        (2, "^Dry run executed cleanly; nothing was written to {table}."),
        (2, "^Benchmark on the large fixture: the {m_name} went from {m_before}{m_unit} to "
            "{m_after}{m_unit}."),
        (2, "CI is green on the branch except for a lint warning in {py_file}; fixing it now."),
        (2, "^Ran the failing case from the ticket one last time: `{test}` passes and the "
            "{m_name} is now {m_after}{m_unit}."),
        (2, "^Opened the PR with a description of the cause, the fix and how to verify it."),
        (0, "Skimmed the history of {file}: {n} commits this year, none of them about this."),
        (0, "Set a breakpoint in {func} and stepped through the failing case; the state looks "
            "fine until the very end."),
        (0, "Searched the issue tracker for `{error}`: {n} old tickets, all closed without a "
            "root cause."),
        (0, "{Person} confirmed in chat that nothing around {component} was deployed since last "
            "week."),
        (0, "^Pulled a sample of {big} rows from {table} into a local database to experiment "
            "safely."),
        (1, "Looked at how {func2} uses {func}; it relies on the current behaviour in one place "
            "only."),
        (1, "Renamed a confusing local variable in {py_file} while I was there; no behaviour "
            "change."),
        (1, "^Split the change into two commits: the refactor first, then the actual fix in "
            "{edit_file}."),
        (1, "Added a temporary log line in {func} with the item count and the elapsed time."),
        (1, "Paired with {person} for {mins} minutes on {func}; we agreed the fix belongs there."),
        (1, "The first version of the fix broke `{test}`; it asserted on the old behaviour, so I "
            "updated it."),
        (1, "^Wrote down the exact steps to reproduce in the draft PR description before I "
            "forget them."),
        (1, "Added a type hint to {func} and let mypy point at the callers that pass the wrong "
            "thing."),
        (1, "Read the tests around {func2} to see which behaviour they pin down before changing "
            "anything."),
        (2, "Second run of `{test}` after clearing the caches: same result, so it was not a "
            "stale cache."),
        (2, "Timed the critical path with the change: {secs}s on my machine; the run before the "
            "edit took {secs2}s."),
        (2, "^Squashed the fixup commits; the branch now has {n} commits with sensible messages."),
        (2, "^Asked {reviewer} for an early look at the approach before polishing the tests."),
        (2, "Updated the docstring of {func} to describe the new behaviour and its limits."),
        (2, "Ran the linters on the touched files: two long lines in {py_file}, fixed."),
        (2, "Reproduced the original failure on main once more: `{test}` fails there, so the new "
            "test really catches it."),
    ),
    "reflection": (
        (0, "^Looking back, most of the first {hours} hours went into the theory that {wrong}, "
            "which turned out to be wrong."),
        (0, "^What went wrong first: I trusted the comment in {py_file} instead of reading the "
            "code, and the comment was out of date."),
        (0, "^Re-reading the original error from the ticket, `{error}`, everything I needed was "
            "already in it."),
        (0, "The error message `{error}` was misleading; it points at {func}, but the real "
            "problem sits upstream of it."),
        (0, "^Mistake: I compared measurements from two different machines at first, which made "
            "the {m_name} look noisy."),
        (0, "^{n} CI runs failed during the work, and every one of them was my own typo rather "
            "than the bug."),
        (0, "^Cost of the wrong turn: about {mins} minutes of compute on {host} and a confused "
            "review thread."),
        (0, "^I executed the reproduction on my laptop first; on {host} the numbers were {pct}% "
            "different."),
        (0, "^Why it was not caught earlier: the tests in {test_file} only use tiny fixtures, so "
            "nothing like {symptom} ever happened in CI."),
        (0, "^In hindsight the log on {host} showed the pattern from the start: `{error}` "
            "appeared right before every incident."),
        (0, "^The first reproduction attempt failed because I used the default fixture, which is "
            "far too small to show {symptom}."),
        (0, "I spent too long in {file2} before realising the problem was not there at all."),
        (0, "^The stack trace I pasted early on (`{error}`) came from a different code path; I "
            "had mixed up two incidents."),
        (0, "Reading {obs_file} earlier would have helped: {obs}."),
        (0, "^Checking {host} first would have shown the real numbers right away instead of "
            "guessing from the ticket."),
        (1, "^Root cause, in one sentence: {cause}."),
        (1, "^What worked: reproducing with realistically sized data before touching code. "
            "Changing one thing at a time was the right strategy too."),
        (1, "^What did not work: trying to {alt_fix} first. It hid the symptom on small inputs "
            "and failed on the big ones."),
        (1, "^The fix addresses the root cause rather than the symptom; trying to {alt_fix} would "
            "only have moved the problem."),
        (1, "Surprise along the way: {finding}. Not the cause here, but it deserves its own "
            "ticket."),
        (1, "^The plan held up mostly; only step 2 took about three times longer than estimated."),
        (1, "^Good call: keeping the change inside {py_file} made the diff small enough to review "
            "in one sitting."),
        (1, "^The tests that failed along the way were all legitimate failures; none of them "
            "turned out flaky."),
        (1, "Debt I noticed: {py_file} duplicates half of {func}. Leaving it alone for now, noted "
            "in the ticket."),
        (1, "^Time split, roughly: {pct}% reading code, the rest between running tests and "
            "waiting for CI."),
        (1, "^What I would tell the next person: {cause}, and the fix is to {fix}."),
        (1, "{Person} knew about this kind of problem already; asking on day one would have saved "
            "time."),
        (1, "^The decisive observation was that {cause}; everything else followed from it."),
        (1, "The theory that {other_wrong} did not get a proper test, but nothing points to it "
            "now."),
        (1, "What helped was running `{cmd}` early; its output ({outcome}) narrowed things down "
            "quickly."),
        (1, "^Measuring the {m_name} after each edit kept me honest: {m_before}{m_unit} at the "
            "start, {m_after}{m_unit} at the end."),
        (1, "Had I asked {person} early on {question}, a whole branch of the investigation would "
            "have been settled."),
        (1, "^The diff ended up much smaller than planned, mostly in {edit_file}."),
        (1, "The failed attempt to {alt_fix} still showed me where the limits of {component} are."),
        (2, "^Lesson: measure the {m_name} on real data before forming any hypothesis."),
        (2, "^Next time I would write the failing test first; I executed the fix before having a "
            "test and had to back it out once."),
        (2, "If this regresses, the first check should confirm {req}."),
        (2, "^The verification plan (compare the {m_name} before and after on the same machine) "
            "is still the right one."),
        (2, "Would do differently: verify assumptions about {table} with a query instead of "
            "reading the ORM code."),
        (2, "^I underestimated how long the suite takes; at {mins} minutes per run, every "
            "iteration was expensive."),
        (2, "^The review by {reviewer} caught a naming problem and an unhandled error path; both "
            "fixed before verification."),
        (2, "Open issue after reflecting: {risk}. Less likely now, but not impossible."),
        (2, "^Confidence in the fix is fairly high. The remaining doubt is {question}."),
        (2, "^For the retro: the strategy worked, the estimate did not. {estimate} hours planned "
            "for the change, about twice that spent."),
        (2, "A check I'd add to CI permanently: {test} on a production-sized fixture, nightly."),
        (2, "^Process note: the ticket had no reproduction steps; I'll propose a template section "
            "for them."),
        (2, "For similar tickets: start from {test_file} and a production-sized fixture, not from "
            "the logs."),
        (2, "Documentation gap: nothing explains how {func} and {func2} interact; I wrote a short "
            "paragraph in the module docstring."),
        (2, "^The estimate was off mainly because the reproduction needed access to {host}, which "
            "took a day to get."),
        (2, "^If I had to redo it, I would pair with {person} for the first hour instead of "
            "reading alone."),
        (2, "Outside this task: {risk} deserves its own ticket and an owner."),
    ),
    "verification": (
        (0, "^Reran the full suite on the final commit: {suite} passed, {skipped} skipped, "
            "nothing failed, {secs}s."),
        (0, "Reran `{test}` {count} times in a loop; no failures."),
        (0, "^CI on the PR is green; the one failed job earlier was a runner timeout, not a test."),
        (0, "^Ran the original reproduction from the ticket again, and there is no sign of "
            "{symptom} anymore."),
        (0, "^Static checks: ruff and mypy are clean on every file the change touches."),
        (0, "^No new warnings in the test output; the deprecation warning from {func} was there "
            "before."),
        (0, "Edge case check: {test2} now also runs against the large fixture, and it passes."),
        (0, "Regression check on {component}: the tests for the neighbouring modules all pass as "
            "well."),
        (0, "Line coverage of {py_file} is {cov}% with the new tests."),
        (0, "^Fresh checkout, clean virtualenv, full test run: everything green, {suite} passed."),
        (0, "The CI job for {test_file} ran {count} times overnight without a single failure."),
        (0, "^Walked through the scenario from the ticket with {person}; it behaves as the PR "
            "describes."),
        (0, "^Rebuilt the container image from scratch and ran the smoke tests against it; "
            "nothing failed."),
        (0, "The previously failing `{test}` passes on all three CI runners."),
        (0, "^Checked the diff once more for leftover debug prints around {func}; none left."),
        (1, "Checked {req}; it holds on staging."),
        (1, "Verified {req}, this time against {host}."),
        (1, "^Before and after for the {m_name}: {m_before}{m_unit} versus {m_after}{m_unit}."),
        (1, "Measured the {m_name} on staging three times in a row; every run came out at about "
            "{m_after}{m_unit}."),
        (1, "^Measured again with the large fixture: the {m_name} is {m_after}{m_unit}, which "
            "meets the target from the plan."),
        (1, "The error from the ticket, `{error}`, has not appeared in the logs on {host} since "
            "the deploy."),
        (1, "^The verification strategy: same fixture, same machine, three runs each, median "
            "reported."),
        (1, "Load test executed on staging: the {m_name} held at {m_after}{m_unit} at {n}x normal "
            "traffic."),
        (1, "^Canary at {pct}% of traffic for {mins} minutes: no new errors and no alerts."),
        (1, "One more check: {req}. [[Fine.|Confirmed.|Holds, though only barely on the largest "
            "input.]]"),
        (1, "^The failed nightly run from {day} predates the deploy, so it does not count against "
            "the fix."),
        (1, "Compared the output of {func} before and after on a sample from {table}; identical "
            "apart from the intended change."),
        (1, "^Asked {person} to try it on their side; they confirmed the fix works for their "
            "case."),
        (1, "The numbers from {host} agree: the {m_name} has been {m_after}{m_unit} since the "
            "deploy."),
        (1, "^The requirement list from the ticket, one by one: the last open item was {req}, and "
            "it holds now."),
        (1, "Spot-checked {count} random records in {table} after the rollout; all as expected."),
        (1, "^No alerts fired for {component} since the deploy {hours} hours ago."),
        (2, "^{Reviewer} reviewed the diff and asked to rename a helper in {py_file}; done and "
            "pushed."),
        (2, "Review comment from {reviewer}: \"{remark}\" Addressed in a follow-up commit."),
        (2, "^Went through the plan from the planning stage point by point; everything is done "
            "except finding out {question}."),
        (2, "Remaining risk: {risk}. Documented it in the PR and in the ticket."),
        (2, "^Rollback verified: reverting {sha} restores the old behaviour cleanly."),
        (2, "^Updated the runbook section about {component} with the new behaviour and how to "
            "check it."),
        (2, "^{Person} confirmed on their side that they no longer see {symptom}."),
        (2, "^Left a note for the on-call: if `{error}` shows up again, look at {func} first."),
        (2, "^Final diff: {nfiles} files changed, +{added}/-{removed}."),
        (2, "^Still to verify after the release: the {m_name} during the real weekly peak."),
        (2, "^Sign-off: {reviewer} approved, merging after tonight's scheduled run."),
        (2, "^Closing thought: fixing the root cause instead of the symptom was the right "
            "strategy; nothing failed in the canary."),
        (2, "^Ticket updated with the before and after numbers and a link to the PR; waiting for "
            "{person} to close it."),
        (2, "^Release notes drafted: one paragraph on the fix and one on {risk}."),
        (2, "^Follow-up ticket filed for the side finding: {finding}."),
        (2, "^Handover note for the on-call: what changed in {edit_file}, how to spot a "
            "regression, and how to roll back."),
        (2, "^Verification done against the plan: reproduction, tests, measurements and review "
            "all check out."),
        (2, "^Pinned the monitoring dashboard for {component} in the team channel for the next "
            "week."),
        (2, "^Merged. The first scheduled run after the merge is tonight; I'll look at its log "
            "tomorrow morning."),
    ),
}  # fmt: skip

_TOOL_CALLS = (
    "Calling {tool}: `{cmd}` [[to get a baseline before any edits|to confirm the edit did what I "
    "think|to see the current state]].",
    "About to run `{cmd}` [[on my dev box|in the CI container|against the staging copy]]; this "
    "takes a while.",
    "Running `{cmd}` once more, this time saving the full output to a file.",
    "Next tool call: `{cmd}`, to see whether anything changed since the last edit.",
)

_FOLLOW: dict[str, tuple[str, ...]] = {
    "planning": (
        "Need to double-check this before relying on it.",
        "Writing it down so it doesn't get lost.",
        "Could be wrong about this; the code is older than the docs.",
        "{Person} might know more.",
        "This is the part I'm least sure about.",
        "Will revisit after reading {file2}.",
        "Costs nothing to confirm early.",
        "Parking this until the reproduction works.",
    ),
    "execution": (
        "Moving on.",
        "About {mins} minutes on this step so far.",
        "Noting it in the PR description.",
        "Back to {func} next.",
        "Writing this down before I forget.",
    ),
    "reflection": (
        "Worth bringing up in the retro.",
        "Adding it to the team's checklist.",
        "A cheap lesson, all things considered.",
        "Writing this down for whoever touches {file} next.",
        "{Reviewer} saw it the same way in review.",
        "Noted for the retro document.",
    ),
    "verification": (
        "No surprises there.",
        "Nothing left open on this point.",
        "Good enough for the sign-off.",
        "Noted in the release notes.",
        "{Reviewer} agreed in the PR thread.",
    ),
}

# Reactions, appended only to memories that report an observation or a result.
_REACTIONS = (
    "Not what I expected.",
    "That matches the hypothesis.",
    "Good, that narrows it down.",
    "Weird, but not blocking.",
    "One thing fewer to worry about.",
    "Interesting.",
)
_OBSERVING = ("{outcome}", "{obs}", "{error}", "{cause}", "{m_mid}", "{m_before}")

# Planning steps, one per group, in this order.
_STEP_GROUPS: tuple[tuple[str, ...], ...] = (
    (
        "reproduce {symptom} locally with production-sized data",
        "measure the {m_name} on staging to have a baseline",
        "collect the logs from {host} for the last week",
    ),
    ("read {file} and {file2} end to end", "trace how {func} is called from {component}"),
    (
        "write a failing test in {test_file} that captures the ticket",
        "extend {test} with the numbers from the ticket so it fails for the right reason",
    ),
    ("{fix}",),
    (
        "rerun the tests and compare the {m_name} with the baseline",
        "verify {req}",
    ),
    (
        "open the PR and ask {reviewer} for a review",
        "write up rollout and rollback steps in the PR",
    ),
)
_STEP_FIRST = ("First I will {a}.", "Step 1: {a}.", "First step: {a}.")
_STEP_MIDDLE = ("Then {a}.", "Step {k}: {a}.", "Next, {a}.", "After that, {a}.")
_STEP_LAST = ("Finally, {a}.", "Last step: {a}.", "Step {k}, the last one: {a}.")

_SOFT_GENERIC = (
    "The fix must be merged by {day}, because the release branch is cut that afternoon.",
    "The whole change should touch no more than {nfiles} files so that one reviewer can handle it.",
    "At most {n} CI reruns are allowed per PR before a flake ticket has to be filed.",
    "A second approval from the owning team is required before anything in {file} is merged.",
    "Fixes must not be force-pushed to the shared release branch; they go in as new commits.",
    "Deploys to {host} must not happen between 09:00 and 11:00, while the morning batch is "
    "running.",
    "A rollback plan in the PR description is required before the change can be deployed.",
    "The on-call engineer must be told before {component} is restarted in production.",
    "Test fixtures must never contain production customer data.",
    "The change must not add a new third-party dependency without a security review.",
    "The rollout has to be complete by {day}, before the change freeze starts.",
    "No more than {n} load tests per day may run against the shared staging cluster.",
)
_SOFT_LEADS: dict[str, tuple[str, ...]] = {
    "planning": (
        "Went through the team's deployment notes for {component}.",
        "Talked to {person} about the rollout.",
        "One more thing from the ticket comments.",
        "Read the release calendar and the contributing guide.",
        "{Person} added a comment to the ticket this morning.",
    ),
    "execution": (
        "Reminder to myself before pushing anything.",
        "While editing {file} I went back to the ticket.",
        "Re-read the ticket while the tests ran.",
        "{Person} pinged in the team channel.",
    ),
    "reflection": (
        "Something that shaped the fix more than I expected.",
        "Worth keeping in mind for the follow-up tickets.",
        "A rule I nearly forgot halfway through.",
    ),
    "verification": (
        "Before asking for the merge, one rule to confirm.",
        "The release checklist says it plainly.",
        "Still relevant for the rollout.",
    ),
}
_SOFT_TAILS = (
    "Noted.",
    "That limits the options.",
    "Keeping it in mind.",
    "It rules out the quick workaround.",
    "Checked: the current approach is compatible with it.",
    "Fine with the current plan.",
)

_DETAIL_NAMES = (
    "Ines Varga",
    "Kalinda Moss",
    "Teodor Halvorsen",
    "Mina Castellano",
    "Bruno Eklund",
    "Ayesha Varenne",
    "Dmitri Solberg",
    "Leontine Bakker",
    "Yusuf Marlowe",
    "Ottilie Fairbanks",
    "Anselm Nakagawa",
    "Greta Oyelaran",
    "Cyprian Holm",
    "Zofia Lindemann",
    "Tariq Vallance",
    "Elodie Ferreira",
    "Sunniva Rask",
    "Idris Kowalczyk",
    "Maren Okafor",
    "Lucien Brandt",
    "Hedda Sorensen",
    "Nikolai Umeh",
    "Philippa Strand",
    "Casimir Otieno",
    "Renske Vogel",
    "Amadou Lindberg",
    "Esme Takeda",
    "Valentin Mbeki",
    "Liesel Quartey",
    "Orrin Castaldi",
)
_PARTNERS = (
    "Halvorsen Freight",
    "Blue Juniper Apps",
    "Quarry and Finch",
    "Northgate Logistics",
    "Pellucid Retail",
    "Tamarind Travel",
    "Ostrava Parts",
    "Kestrel Ledger",
)
_REMARKS = (
    "Could we add a test for the empty case as well?",
    "Please keep the old name as an alias for one release.",
    "Nit: the log line should include the id.",
    "Is the new constant documented anywhere?",
    "Can this helper move next to its only caller?",
    "Let's mention the behaviour change in the changelog.",
    "Why not make the threshold configurable?",
)


def _name(f: _Fill) -> str:
    return f.rng.choice(_DETAIL_NAMES)


def _repro_path(f: _Fill) -> str:
    stem = f.ctx.domain.slug.replace("-", "_")
    return f"tests/fixtures/repro_{stem}_{f.rng.randint(10, 99)}.json"


def _ticket(f: _Fill) -> str:
    return f"{f.ctx.domain.prefix}-{f.rng.randint(1000, 9999)}"


_GENERIC_DETAILS = (
    _Detail(
        "planning",
        "The ticket is {answer}; [[support filed it|it came in through the on-call rotation|it "
        "was escalated from the customer success queue]] {count} days ago.",
        "What is the ID of the ticket for this task?",
        _ticket,
    ),
    _Detail(
        "planning",
        "My estimate for the whole task is {answer} hours, including review and the rollout.",
        "How many hours did the agent estimate for the whole task?",
        lambda f: f"{f.rng.randint(6, 30)}.5",
    ),
    _Detail(
        "planning",
        "Production read access for this team is approved by {answer}, so I'll ask there before "
        "querying anything live.",
        "Who approves production read access for the team?",
        _name,
    ),
    _Detail(
        "planning",
        "The last green build on main was #{answer}, a bit over a week ago.",
        "What is the number of the last green build on main?",
        lambda f: str(f.rng.randint(10_000, 99_999)),
    ),
    _Detail(
        "planning",
        "For the reproduction I'll use {answer}, a fresh staging box with a copy of last week's "
        "data.",
        "Which host did the agent plan to use for the staging reproduction?",
        lambda f: f"stg-{f.ctx.domain.slug}-{f.rng.randint(10, 99)}.{f.ctx.zone}.internal",
    ),
    _Detail(
        "execution",
        "Working on branch {answer}; main was clean when I branched.",
        "Which git branch did the agent work on?",
        lambda f: f"fix/{f.ctx.domain.slug}-{f.rng.randint(100, 999)}",
    ),
    _Detail(
        "execution",
        "First working version committed as {answer}.",
        "What is the short hash of the first working commit?",
        lambda f: _rh(7)(f.rng),
    ),
    _Detail(
        "execution",
        "The local dev server came up on port {answer} because the default one was taken.",
        "Which port did the agent's local dev server use?",
        lambda f: str(f.rng.randint(8001, 8999)),
    ),
    _Detail(
        "execution",
        "The full unit suite took {answer} seconds on my machine before any change.",
        "How many seconds did the full unit suite take on the agent's machine before the change?",
        lambda f: f"{f.rng.uniform(120.0, 480.0):.1f}",
    ),
    _Detail(
        "execution",
        "Saved the reproduction input as {answer} so the tests can load it.",
        "Where did the agent save the reproduction input?",
        _repro_path,
    ),
    _Detail(
        "reflection",
        "Roughly {answer} minutes went into the wrong theory before I dropped it.",
        "How many minutes did the wrong theory cost?",
        lambda f: str(f.rng.randint(100, 400)),
    ),
    _Detail(
        "reflection",
        "It was {answer} who pointed me at the real cause, in a two-line chat message.",
        "Who pointed the agent at the real cause?",
        _name,
    ),
    _Detail(
        "reflection",
        "Filed the unrelated problem I found as {answer} so it does not get lost.",
        "Which ticket was filed for the unrelated problem?",
        _ticket,
    ),
    _Detail(
        "reflection",
        "The misleading line in the ticket's log excerpt was line {answer}.",
        "Which line of the ticket's log excerpt was misleading?",
        lambda f: str(f.rng.randint(100, 999)),
    ),
    _Detail(
        "reflection",
        "The command that finally showed the cause ran at {answer} on the second day.",
        "At what time did the agent run the command that finally showed the cause?",
        lambda f: f"{f.rng.randint(8, 19):02d}:{f.rng.randint(0, 59):02d}",
    ),
    _Detail(
        "reflection",
        "I kept my working notes in {answer}; the ticket links to them.",
        "Where did the agent keep its working notes?",
        lambda f: f"notes/{f.ctx.domain.slug}-{f.rng.randint(10, 99)}.md",
    ),
    _Detail(
        "verification",
        "The second approval came from {answer} on the platform team.",
        "Who gave the second approval on the pull request?",
        _name,
    ),
    _Detail(
        "verification",
        "The pull request is #{answer}, against main, with the ticket linked in the description.",
        "What is the number of the pull request?",
        lambda f: str(f.rng.randint(1000, 9999)),
    ),
    _Detail(
        "verification",
        "Verified on canary host {answer} before the wider rollout.",
        "On which canary host was the change verified?",
        lambda f: f"canary-{f.ctx.domain.slug}-{f.rng.randint(10, 99)}.prod.internal",
    ),
    _Detail(
        "verification",
        "Final median of the {m_name}: {answer}{m_unit} over three runs.",
        "What was the final median of the {m_name} in verification?",
        lambda f: f.metric_answer(),
    ),
    _Detail(
        "verification",
        "The release tag that contains the fix is {answer}.",
        "Which release tag contains the fix?",
        lambda f: f"v{f.rng.randint(2, 9)}.{f.rng.randint(10, 40)}.{f.rng.randint(0, 9)}",
    ),
)


# ---------------------------------------------------------------------------------------------
# Domains. Strings may use {p_name} (fixed per trace from ``params``) and any template slot.
# ---------------------------------------------------------------------------------------------

_CSV_EXPORT = _Domain(
    key="csv_export_oom",
    slug="csv-export",
    prefix="DATA",
    goal="Make the orders CSV export stream its rows so that accounts with more than {p_rows_m} "
    "million orders finish without the export worker being OOM-killed.",
    params={
        "rows_m": _rf(1.2, 3.9),
        "mem": _rc("2", "3", "4"),
        "acct": _ri(4000, 9899),
        "spec": _rc("2018", "2019", "2020"),
        "batch": _rc("2000", "5000", "10000"),
        "tmp": _ri(5, 20),
        "wn": _ri(1, 6),
        "rn": _ri(1, 4),
    },
    components=(
        "the export worker",
        "the orders export job",
        "the CSV writer",
        "the export download endpoint",
    ),
    files=(
        "src/export/csv_writer.py",
        "src/export/jobs.py",
        "src/export/queries.py",
        "src/export/api.py",
        "src/export/models.py",
        "deploy/export-worker.yaml",
    ),
    test_files=(
        "tests/export/test_csv_writer.py",
        "tests/export/test_jobs.py",
        "tests/export/test_columns.py",
    ),
    tests=(
        "test_large_account_streams",
        "test_header_matches_spec",
        "test_empty_account_has_header_only",
        "test_non_ascii_customer_names",
        "test_trailer_row_count",
    ),
    funcs=(
        "CsvWriter.write_rows()",
        "build_export_query()",
        "run_export()",
        "OrderRow.as_csv()",
        "ExportJob.finalize()",
    ),
    tables=("orders", "order_lines", "export_runs"),
    hosts=(
        "export-worker-{p_wn}.prod.internal",
        "db-replica-{p_rn}.prod.internal",
        "export-api-1.prod.internal",
    ),
    people=(
        ("Oskar Lindqvist", "owns the export service"),
        ("Mireille Fontaine", "handles the bank integration on the support side"),
        ("Tuula Henriksen", "is the on-call SRE this week"),
    ),
    symptoms=(
        "the export worker getting OOM-killed on large accounts",
        "exports for big accounts stopping silently after a few million rows",
        "memory on the worker growing linearly with the number of orders",
    ),
    causes=(
        (
            "CsvWriter.write_rows() collects every row in a list and only writes them out in "
            "finalize()",
            "write each row straight to the gzip stream instead of buffering the whole export",
        ),
        (
            "build_export_query() calls fetchall(), so the entire result set is materialized in "
            "memory",
            "read from a named server-side cursor in batches of {p_batch} rows",
        ),
        (
            "OrderRow.as_csv() memoizes every rendered row in a module-level dict that nobody "
            "clears",
            "drop the memo dict in OrderRow.as_csv() and render rows on the fly",
        ),
    ),
    wrongs=(
        "the ORM session leaks objects between accounts",
        "the gzip step holds the whole compressed file in memory",
        "the pod memory limit was lowered in the last deploy",
    ),
    alt_fixes=(
        "raise the worker's memory limit to 8Gi",
        "split large accounts into one file per month",
        "run large accounts on a dedicated high-memory node pool",
    ),
    obs=(
        (
            "src/export/csv_writer.py",
            "CsvWriter keeps a self._rows list that grows for the whole run",
        ),
        (
            "src/export/queries.py",
            "build_export_query() returns cur.fetchall() instead of iterating the cursor",
        ),
        (
            "src/export/jobs.py",
            "run_export() retries the whole account from scratch on any exception",
        ),
        (
            "src/export/api.py",
            "the endpoint only enqueues a job and returns a run id, so nothing there holds rows",
        ),
        (
            "deploy/export-worker.yaml",
            "the worker has a hard memory limit of {p_mem}Gi and a single replica",
        ),
        ("src/export/models.py", "OrderRow.as_csv() caches its output in a dict keyed by order id"),
        (
            "src/export/csv_writer.py",
            "the column list is a hard-coded SPEC_{p_spec} tuple at the top of the module",
        ),
    ),
    errors=(
        "MemoryError",
        "Killed (exit code 137, OOMKilled)",
        "psycopg.errors.QueryCanceled: canceling statement due to statement timeout",
        "BrokenPipeError: [Errno 32] Broken pipe",
    ),
    edits=(
        ("src/export/csv_writer.py", "call writerow() per row and remove the self._rows buffer"),
        (
            "src/export/queries.py",
            "open a named cursor with itersize={p_batch} and yield rows from it",
        ),
        ("src/export/models.py", "delete the _rendered cache from OrderRow"),
        ("src/export/jobs.py", "log progress every {p_batch} rows instead of only at the end"),
        (
            "tests/export/test_csv_writer.py",
            "add a fixture that generates 200,000 synthetic orders lazily",
        ),
    ),
    reqs=(
        "that the header still matches the {p_spec} spec column by column",
        "that peak memory stays flat as the account grows",
        "that an empty account still produces a file with just the header",
        "that the trailer line carries the correct row count",
        "that non-ASCII customer names survive the round trip",
    ),
    risks=(
        "the server-side cursor keeping a long transaction open on the replica",
        "the bank's importer reacting badly to a different line ending",
        "half-written files left behind when the worker dies mid-export",
    ),
    questions=(
        "whether the bank's importer accepts both CRLF and LF line endings",
        "how long a transaction on the replica may stay open before the DBA alerts fire",
        "whether anyone still downloads the uncompressed variant",
    ),
    commands=(
        (
            "pytest",
            "pytest tests/export -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "pytest",
            "pytest tests/export/test_csv_writer.py -k large -x",
            (
                "stopped at the first failure, a MemoryError inside the fixture",
                "{n} passed in {secs}s",
            ),
        ),
        (
            "bash",
            "python -m memray run -o /tmp/export.bin scripts/export_account.py --account {p_acct}",
            ("peak memory {mb} MB after {big} rows",),
        ),
        (
            "psql",
            'psql -h db-replica-{p_rn}.prod.internal -c "select count(*) from orders where '
            'account_id = {p_acct}"',
            ("returned {big}",),
        ),
        (
            "bash",
            "kubectl top pod -l app=export-worker",
            ("the worker sits at {mb}Mi right after start",),
        ),
        (
            "git",
            "git log --oneline -8 -- src/export/",
            ("the last change to the writer is {count} days old and only touched the header",),
        ),
        ("bash", "grep -rn fetchall src/export", ("{n} hits, all of them in queries.py",)),
        (
            "bash",
            "time python scripts/export_account.py --account 17 --out /tmp/small.csv.gz",
            ("real {secs}s, and the output looks fine for a small account",),
        ),
    ),
    metrics=(
        _Metric("peak RSS of the export worker", " MB", (2900, 4100), (160, 420)),
        _Metric("export time for the largest account", " s", (700, 1500), (380, 900)),
    ),
    sql=(
        "db-replica-{p_rn}.prod.internal",
        "select account_id, count(*) as orders, max(created_at)::date as last_order from orders "
        "group by 1 order by 2 desc limit 4;",
        (("account_id", "id"), ("orders", "big"), ("last_order", "date")),
    ),
    trace=(
        ("src/export/jobs.py", "run_export", "writer.write_rows(batch)"),
        ("src/export/csv_writer.py", "write_rows", "self._rows.append(row.as_csv())"),
        (
            "src/export/models.py",
            "as_csv",
            "return self._rendered.setdefault(self.id, self._render())",
        ),
    ),
    trace_error="MemoryError",
    diffs=(
        (
            "src/export/csv_writer.py",
            "class CsvWriter:",
            (
                "     def write_rows(self, rows):",
                "         for row in rows:",
                "-            self._rows.append(row.as_csv())",
                "+            self._writer.writerow(row.as_csv())",
                "+        self._fh.flush()",
            ),
        ),
        (
            "src/export/queries.py",
            "def build_export_query(conn, account_id):",
            (
                "-    cur = conn.cursor()",
                '+    cur = conn.cursor(name=f"export_{account_id}")',
                "+    cur.itersize = {p_batch}",
                "     cur.execute(SQL, (account_id,))",
                "-    return cur.fetchall()",
                "+    yield from cur",
            ),
        ),
    ),
    log_cmd="kubectl logs deploy/export-worker --since=2h | tail -n 4",
    log_lines=(
        "{ts} INFO export.jobs account={p_acct} run={run} started",
        "{ts} WARN export.writer account={p_acct} rows_buffered={big} rss_mb={mb}",
        "{ts} ERROR export.jobs account={p_acct} worker exited: OOMKilled",
        "{ts} INFO export.jobs retrying account={p_acct} attempt={n}",
    ),
    outputs=(
        (
            "bash",
            "$ kubectl describe pod export-worker-{p_wn} | grep -A3 'Last State'\n    Last State: "
            "    Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n      "
            "Finished:     {date}T{time}Z",
        ),
    ),
    critical=(
        "The export must keep the column order of the {p_spec} spec because the bank's importer "
        "reads columns by position.",
        "The file name pattern orders_<account>_<date>.csv.gz must stay exactly as it is, since "
        "the bank's SFTP job matches on it.",
        "The export may only read from the replica and must never query the primary database.",
        "Every exported file must still end with the trailer line that carries the row count.",
    ),
    exec_critical=(
        "Never paste customer names or e-mail addresses from export samples into the ticket or "
        "the logs.",
        "Do not run a full export of account {p_acct} against production during business hours.",
    ),
    soft=(
        "The worker must not use more than {p_mem} GiB, because that is its hard pod limit.",
        "Temporary files on the worker may be at most {p_tmp} GB, since /tmp is a small volume.",
    ),
    details=(
        _Detail(
            "planning",
            "Support says the bank's importer rejects any file larger than {answer} MB.",
            "What is the largest file size, in MB, that the bank's importer accepts?",
            lambda f: str(f.rng.randint(300, 950)),
        ),
        _Detail(
            "execution",
            "The memray report for the big account went to {answer}.",
            "Where was the memray report for the big account written?",
            lambda f: f"/tmp/memray_export_{f.rng.randint(100, 999)}.html",
        ),
        _Detail(
            "verification",
            "The compressed export for the biggest account is now {answer} MB.",
            "How large, in MB, is the compressed export for the biggest account after the fix?",
            lambda f: f"{f.rng.uniform(100.0, 400.0):.1f}",
        ),
    ),
)

_LOGIN_FLAKE = _Domain(
    key="flaky_login_e2e",
    slug="login-flake",
    prefix="QA",
    goal="Make the login end-to-end test pass reliably in CI; it currently fails a few times in "
    "every hundred runs, mostly on the shared runners.",
    params={
        "timeout": _rc("5000", "8000", "10000"),
        "node": _ri(1, 8),
        "shards": _ri(3, 8),
        "joblimit": _ri(18, 30),
    },
    components=("the login page", "the session service", "the e2e suite", "the CI browser runners"),
    files=(
        "e2e/tests/test_login.py",
        "e2e/pages/login_page.py",
        "e2e/conftest.py",
        "src/auth/session.py",
        "src/web/static/login.js",
        ".ci/e2e.yml",
    ),
    test_files=(
        "e2e/tests/test_login.py",
        "e2e/tests/test_logout.py",
        "tests/auth/test_session.py",
    ),
    tests=(
        "test_login_with_valid_password",
        "test_login_redirects_to_dashboard",
        "test_remember_me_cookie",
        "test_logout_clears_session",
        "test_login_blocked_after_five_attempts",
    ),
    funcs=(
        "LoginPage.submit()",
        "wait_for_dashboard()",
        "create_session()",
        "SessionStore.get()",
        "seeded_user()",
    ),
    tables=("sessions", "users", "login_attempts"),
    hosts=(
        "ci-runner-{p_node}.build.internal",
        "auth-staging.internal",
        "selenium-grid.build.internal",
    ),
    people=(
        ("Yara Delacroix", "maintains the e2e framework"),
        ("Felix Oduya", "owns the auth service"),
        ("Hanne Brekke", "looks after the CI runners"),
    ),
    symptoms=(
        "test_login_redirects_to_dashboard timing out on the dashboard heading",
        "the login test failing only on the shared CI runners",
        "a blank dashboard after login in the recorded videos",
    ),
    causes=(
        (
            "wait_for_dashboard() waits for the URL to change but not for the session cookie, so "
            "the first request sometimes goes out unauthenticated",
            "wait for the session cookie and the dashboard heading instead of the URL alone",
        ),
        (
            "seeded_user() reuses one account across parallel shards, and one shard's logout "
            "kills the other shard's session",
            "create a unique user per test in seeded_user() so shards stop sharing sessions",
        ),
        (
            "login.js keeps the submit button disabled until a web font has loaded, and on slow "
            "runners the click lands on a disabled button",
            "wait until the submit button is enabled before clicking it",
        ),
    ),
    wrongs=(
        "the Selenium grid is simply overloaded",
        "the session service drops writes under load",
        "a recent CSS change moved the dashboard heading",
    ),
    alt_fixes=(
        "raise the global timeout to 30 seconds",
        "mark the test as flaky with three automatic retries",
        "run the login tests serially in their own job",
    ),
    obs=(
        (
            "e2e/pages/login_page.py",
            "LoginPage.submit() clicks the button and returns immediately without waiting for "
            "anything",
        ),
        (
            "e2e/conftest.py",
            "seeded_user() is session-scoped and returns the same e-mail address for every shard",
        ),
        (
            "e2e/tests/test_login.py",
            "the test asserts on the dashboard heading with a fixed timeout of {p_timeout} ms",
        ),
        (
            "src/auth/session.py",
            "create_session() writes the row asynchronously and returns before the commit",
        ),
        (
            "src/web/static/login.js",
            "the submit button stays disabled until document.fonts.ready resolves",
        ),
        (".ci/e2e.yml", "the suite runs in {p_shards} parallel shards on shared runners"),
    ),
    errors=(
        'TimeoutError: waiting for selector "h1.dashboard-title" failed: timeout {p_timeout}ms '
        "exceeded",
        "AssertionError: expected URL /dashboard, got /login?next=%2Fdashboard",
        'ElementClickInterceptedException: element <button id="login-submit"> is not clickable',
        "401 Unauthorized from GET /api/me",
    ),
    edits=(
        (
            "e2e/pages/login_page.py",
            "wait for the login-submit button to be enabled before clicking",
        ),
        (
            "e2e/conftest.py",
            "make seeded_user() function-scoped and give every user a unique address",
        ),
        ("e2e/tests/test_login.py", "wait for the session cookie before asserting on the heading"),
        (".ci/e2e.yml", "upload the trace.zip artifact for failed runs only"),
        ("src/auth/session.py", "await the commit in create_session() before returning"),
    ),
    reqs=(
        "that the login test passes 200 times in a row on the shared runners",
        "that the remember-me cookie still gets set",
        "that the logout test still clears the session",
        "that the suite's total runtime grew by less than a minute",
    ),
    risks=(
        "other e2e tests relying on the shared seeded user",
        "the longer wait hiding a real performance regression on the login page",
        "unique test users piling up in the staging users table",
    ),
    questions=(
        "whether the shards share one staging database",
        "how many green runs the CI team accepts as proof that a flake is fixed",
        "whether the video recordings are kept for failed runs only",
    ),
    commands=(
        (
            "pytest",
            "pytest e2e/tests/test_login.py -q --count=50",
            ("{passed} passed, {failed} failed in {secs}s",),
        ),
        (
            "pytest",
            "pytest e2e/tests/test_login.py -k redirects -x --headed",
            ("passed locally, as it always does",),
        ),
        (
            "bash",
            "gh run list --workflow e2e.yml --limit 100 --json conclusion",
            ("{failed} failures among the last 100 runs",),
        ),
        ("bash", "unzip -l artifacts/trace.zip", ("{n} screenshots and one network log",)),
        (
            "psql",
            'psql -h auth-staging.internal -c "select count(*) from sessions where user_id = 4211"',
            ("{count} open sessions for the seeded user",),
        ),
        (
            "git",
            "git log -S 'fonts.ready' --oneline",
            ("introduced {count} days ago in a font-loading tweak",),
        ),
        ("bash", "grep -rn seeded_user e2e/ | wc -l", ("{count} usages",)),
    ),
    metrics=(
        _Metric("failure rate of the login test over 100 CI runs", "%", (4, 19), (0, 1)),
        _Metric("number of failed runs in a 200-run soak of the login test", "", (6, 30), (0, 0)),
    ),
    sql=(
        "auth-staging.internal",
        "select user_id, count(*) as open_sessions, max(created_at) as newest from sessions group "
        "by 1 order by 2 desc limit 3;",
        (("user_id", "id"), ("open_sessions", "int"), ("newest", "ts")),
    ),
    trace=(
        ("e2e/tests/test_login.py", "test_login_redirects_to_dashboard", "login_page.submit()"),
        ("e2e/pages/login_page.py", "submit", "wait_for_dashboard(self.page)"),
        (
            "e2e/pages/dashboard.py",
            "wait_for_dashboard",
            'page.wait_for_selector("h1.dashboard-title", timeout={p_timeout})',
        ),
    ),
    trace_error='TimeoutError: waiting for selector "h1.dashboard-title" failed: timeout '
    "{p_timeout}ms exceeded",
    diffs=(
        (
            "e2e/pages/login_page.py",
            "class LoginPage:",
            (
                "     def submit(self):",
                '-        self.page.click("#login-submit")',
                '+        button = self.page.locator("#login-submit")',
                "+        expect(button).to_be_enabled()",
                "+        button.click()",
            ),
        ),
        (
            "e2e/conftest.py",
            "",
            (
                '-@pytest.fixture(scope="session")',
                "+@pytest.fixture",
                " def seeded_user(api):",
                '-    return api.create_user("e2e-login@example.test")',
                '+    return api.create_user(f"e2e-{uuid4().hex[:8]}@example.test")',
            ),
        ),
    ),
    log_cmd="grep login artifacts/e2e-shard-2.log | tail -n 4",
    log_lines=(
        "{ts} INFO e2e shard=2 test=test_login_redirects_to_dashboard start",
        "{ts} DEBUG auth POST /login 302 {ms}ms",
        "{ts} DEBUG auth GET /api/me 401 {ms2}ms",
        "{ts} ERROR e2e shard=2 timeout waiting for h1.dashboard-title",
    ),
    outputs=(
        (
            "bash",
            "$ gh run view {run} --log-failed | tail -n 3\ne2e (shard 2)  FAILED "
            "e2e/tests/test_login.py::test_login_redirects_to_dashboard\ne2e (shard 2)  "
            'TimeoutError: waiting for selector "h1.dashboard-title" failed: timeout '
            "{p_timeout}ms exceeded\ne2e (shard 2)  1 failed, {passed} passed in {secs}s",
        ),
    ),
    critical=(
        "The login test must keep running against the real auth service on staging, not a mock, "
        "because it is the only end-to-end check of the session cookie.",
        "Do not raise the test timeout above {p_timeout} ms; slow logins are exactly what this "
        "test is supposed to catch.",
        "Do not add automatic retries to the login test, since the CI policy forbids retries on "
        "auth tests.",
        "The fix must not change the login page markup, because the mobile app's web view depends "
        "on the button id.",
    ),
    exec_critical=(
        "Never commit the staging admin password that the e2e harness reads from the vault.",
        "Do not delete rows from the staging users table by hand; other teams run tests against "
        "it.",
    ),
    soft=(
        "The e2e job must not take longer than {p_joblimit} minutes in total, otherwise the merge "
        "queue times out.",
        "At most {p_shards} shards are available to the e2e job on the shared runners.",
    ),
    details=(
        _Detail(
            "planning",
            "The flake tracker lists this test under id {answer}.",
            "Under which id does the flake tracker list the login test?",
            lambda f: f"FLK-{f.rng.randint(100, 999)}",
        ),
        _Detail(
            "execution",
            "The failing trace from shard 2 is saved as {answer}.",
            "Under which file name was the failing trace from shard 2 saved?",
            lambda f: f"trace-shard2-{f.rng.randint(1000, 9999)}.zip",
        ),
        _Detail(
            "verification",
            "The 200-run soak of the login test was build {answer}.",
            "Which build ran the 200-run soak of the login test?",
            lambda f: str(f.rng.randint(50_000, 99_999)),
        ),
    ),
)

_VAT_ROUNDING = _Domain(
    key="vat_rounding",
    slug="vat-rounding",
    prefix="BILL",
    goal="Fix the one-cent VAT differences between invoice PDFs and the ledger export on invoices "
    "with many lines, without changing any invoice that has already been sent.",
    params={
        "year": _rc("2021", "2022", "2023"),
        "bad": _ri(120, 900),
        "lines": _ri(40, 200),
        "month": _rc("2025-01", "2025-02", "2025-03", "2025-04"),
        "inv": _ri(100_000, 999_999),
    },
    components=(
        "the invoice calculator",
        "the PDF renderer",
        "the ledger export",
        "the billing API",
    ),
    files=(
        "billing/invoices/totals.py",
        "billing/invoices/lines.py",
        "billing/pdf/render.py",
        "billing/ledger/export.py",
        "billing/money.py",
    ),
    test_files=(
        "tests/billing/test_totals.py",
        "tests/billing/test_ledger_export.py",
        "tests/billing/test_money.py",
    ),
    tests=(
        "test_vat_per_line_matches_total",
        "test_many_lines_rounding",
        "test_zero_rated_lines",
        "test_credit_note_negative_vat",
        "test_ledger_export_matches_pdf",
    ),
    funcs=(
        "InvoiceTotals.compute()",
        "round_money()",
        "LineItem.vat_amount()",
        "LedgerExport.rows()",
        "render_totals_box()",
    ),
    tables=("invoices", "invoice_lines", "ledger_entries"),
    hosts=("billing-staging.internal", "ledger-db.prod.internal", "pdf-render-2.internal"),
    people=(
        ("Carmen Ibarrola", "is the finance controller who reported the differences"),
        ("Lukas Weidinger", "owns the billing service"),
        ("Amara Quist", "does QA for invoicing"),
    ),
    symptoms=(
        "invoice PDFs showing VAT one cent off from the ledger export",
        "the ledger reconciliation flagging invoices with many lines",
        "credit notes whose VAT does not cancel the original invoice exactly",
    ),
    causes=(
        (
            "LineItem.vat_amount() rounds each line and the PDF sums the rounded values, while "
            "the ledger rounds the total once",
            "compute VAT once on the invoice total and distribute the rounding remainder across "
            "the lines",
        ),
        (
            "round_money() uses Python's round(), which rounds half to even, while the ledger "
            "rounds half up",
            "switch round_money() to Decimal.quantize with ROUND_HALF_UP",
        ),
        (
            "line amounts stay floats until render time, so binary rounding errors pile up on "
            "long invoices",
            "keep every amount as a Decimal from parsing to rendering",
        ),
    ),
    wrongs=(
        "the PDF renderer truncates instead of rounding",
        "the currency conversion adds the extra cent",
        "the ledger export counts shipping lines twice",
    ),
    alt_fixes=(
        "adjust the last line by the difference so the totals match",
        "round only in the PDF and leave the calculator alone",
        "let finance correct the differences by hand each month",
    ),
    obs=(
        ("billing/money.py", "round_money() wraps the built-in round() on a float"),
        (
            "billing/invoices/lines.py",
            "LineItem.vat_amount() returns a float rounded to two places",
        ),
        (
            "billing/invoices/totals.py",
            "InvoiceTotals.compute() sums the already rounded line VAT amounts",
        ),
        (
            "billing/ledger/export.py",
            "LedgerExport.rows() recomputes VAT from the net total with Decimal and ROUND_HALF_UP",
        ),
        (
            "billing/pdf/render.py",
            "render_totals_box() formats whatever InvoiceTotals gives it and does no arithmetic "
            "of its own",
        ),
        (
            "billing/invoices/totals.py",
            "a comment claims per-line rounding is what the {p_year} audit asked for, with no link",
        ),
    ),
    errors=(
        "AssertionError: Decimal('1843.27') != Decimal('1843.28')",
        "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]",
        "TypeError: unsupported operand type(s) for +: 'float' and 'decimal.Decimal'",
        "LedgerMismatch: invoice INV-{p_inv} differs by 0.01",
    ),
    edits=(
        ("billing/money.py", "implement round_money() with Decimal.quantize and ROUND_HALF_UP"),
        ("billing/invoices/lines.py", "return an unrounded Decimal from LineItem.vat_amount()"),
        (
            "billing/invoices/totals.py",
            "round once on the total and spread the remainder over the largest lines",
        ),
        (
            "tests/billing/test_totals.py",
            "add a {p_lines}-line invoice fixture taken from the reconciliation report",
        ),
        ("billing/ledger/export.py", "reuse round_money() instead of its private rounding helper"),
    ),
    reqs=(
        "that PDF and ledger agree to the cent on all {p_bad} flagged invoices",
        "that the line VAT adds up to the VAT total on every invoice",
        "that credit notes cancel their invoices exactly",
        "that invoices already sent are left untouched",
    ),
    risks=(
        "already sent invoices being re-rendered with different numbers",
        "other teams' code relying on the float return type of vat_amount()",
        "the remainder distribution looking odd on single-line invoices",
    ),
    questions=(
        "whether the {p_year} audit really asked for per-line rounding",
        "whether finance wants the historical differences corrected or only documented",
        "how the ledger treats zero-rated lines",
    ),
    commands=(
        (
            "pytest",
            "pytest tests/billing -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "pytest",
            "pytest tests/billing/test_totals.py -k many_lines -vv",
            ("fails with a one-cent difference on the VAT total",),
        ),
        (
            "psql",
            'psql -h ledger-db.prod.internal -c "select count(*) from ledger_entries where '
            'abs(diff) = 0.01"',
            ("returned {p_bad}",),
        ),
        (
            "bash",
            "python scripts/reconcile.py --month {p_month} --dry-run",
            ("{p_bad} invoices differ, and every difference is exactly one cent",),
        ),
        (
            "bash",
            "grep -rn 'round(' billing/",
            ("{n} places that round with the built-in function",),
        ),
        (
            "git",
            "git blame -L 40,60 billing/money.py",
            ("written {count} months ago and unchanged since",),
        ),
        (
            "bash",
            'python -c "print(round(2.675, 2))"',
            ("prints 2.67, which is the float problem in one line",),
        ),
    ),
    metrics=(
        _Metric("number of invoices where PDF and ledger differ", "", (120, 900), (0, 0)),
        _Metric("total VAT difference on last month's invoices", " EUR", (1.2, 9.0), (0, 0), 2),
    ),
    sql=(
        "ledger-db.prod.internal",
        "select invoice_id, count(*) as lines, sum(vat) as vat_lines, max(vat_total) as vat_total "
        "from invoice_lines join invoices using (invoice_id) group by 1 having sum(vat) <> "
        "max(vat_total) limit 3;",
        (("invoice_id", "id"), ("lines", "int"), ("vat_lines", "money"), ("vat_total", "money")),
    ),
    trace=(
        (
            "tests/billing/test_totals.py",
            "test_many_lines_rounding",
            "assert totals.vat == ledger_vat",
        ),
    ),
    trace_error="AssertionError: Decimal('1843.27') != Decimal('1843.28')",
    diffs=(
        (
            "billing/money.py",
            "def round_money(value):",
            (
                "-    return round(value, 2)",
                "+    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)",
            ),
        ),
        (
            "billing/invoices/totals.py",
            "class InvoiceTotals:",
            (
                "-        vat = sum(line.vat_amount() for line in self.lines)",
                "+        vat = round_money(sum(line.vat_raw() for line in self.lines))",
                "+        self._spread_remainder(vat)",
                "         return Totals(net=net, vat=vat)",
            ),
        ),
    ),
    log_cmd="grep LedgerMismatch logs/reconcile-{p_month}.log | head -n 4",
    log_lines=(
        "{ts} WARN reconcile LedgerMismatch invoice=INV-{id} pdf={money} ledger={money2}",
        "{ts} WARN reconcile LedgerMismatch invoice=INV-{id2} pdf={money3} ledger={money4}",
        "{ts} INFO reconcile checked={big} mismatched={p_bad}",
        "{ts} INFO reconcile finished in {secs}s",
    ),
    outputs=(
        (
            "bash",
            "$ python scripts/reconcile.py --month {p_month} --dry-run | tail -n 3\nchecked {big} "
            "invoices\nmismatches: {p_bad} (all 0.01)\nlargest line count among mismatches: "
            "{p_lines}",
        ),
    ),
    critical=(
        "Do not change the public signature of InvoiceTotals.compute(); three other teams call it.",
        "Invoices that have already been sent to customers must never be recalculated or "
        "re-rendered.",
        "All money arithmetic must stay in Decimal, and floats are not allowed anywhere in the "
        "invoice path.",
        "The VAT shown on the PDF must equal the VAT booked in the ledger to the cent.",
    ),
    exec_critical=(
        "Never run the reconciliation script without --dry-run against the production ledger.",
        "Do not copy real invoice numbers into test fixtures without anonymizing them first.",
    ),
    soft=(
        "Finance needs the fix deployed by {day}, because the monthly close starts the morning "
        "after.",
        "The per-line VAT on the PDF must not differ from the line total by more than 0.01 in "
        "either direction.",
    ),
    details=(
        _Detail(
            "planning",
            "The worst invoice in the reconciliation report has {answer} lines.",
            "How many lines does the worst invoice in the reconciliation report have?",
            lambda f: str(f.rng.randint(220, 480)),
        ),
        _Detail(
            "execution",
            "The smallest reproducing case is invoice {answer} on the staging copy.",
            "Which staging invoice is the smallest reproducing case?",
            lambda f: f"INV-{f.rng.randint(10_000, 99_999)}",
        ),
        _Detail(
            "reflection",
            "The float problem was already described on an old wiki page, {answer}.",
            "Which wiki page already described the float rounding problem?",
            lambda f: f"wiki/billing/rounding-notes-{f.rng.randint(2017, 2020)}",
        ),
    ),
)

_DASHBOARD_SQL = _Domain(
    key="slow_dashboard_query",
    slug="dashboard-sql",
    prefix="REP",
    goal="Bring the p95 load time of the regional sales dashboard under {p_target} seconds; its "
    "main query currently runs for about half a minute.",
    params={
        "target": _rc("2", "3"),
        "rn": _ri(1, 3),
        "pg": _rc("14", "15", "16"),
        "months": _ri(6, 24),
        "timeout_s": _rc("30", "45", "60"),
        "disk": _ri(8, 40),
    },
    components=(
        "the sales dashboard",
        "the reporting API",
        "the reporting replica",
        "the nightly rollup job",
    ),
    files=(
        "reporting/queries/regional_sales.sql",
        "reporting/api/dashboard.py",
        "reporting/repository.py",
        "migrations/versions/0142_sales_indexes.py",
        "reporting/rollups.py",
    ),
    test_files=(
        "tests/reporting/test_dashboard.py",
        "tests/reporting/test_rollups.py",
        "tests/reporting/test_queries.py",
    ),
    tests=(
        "test_regional_sales_totals",
        "test_dashboard_filters_by_region",
        "test_rollup_idempotent",
        "test_empty_region_returns_zero",
        "test_query_uses_index",
    ),
    funcs=(
        "DashboardRepository.regional_sales()",
        "build_filters()",
        "refresh_sales_rollup()",
        "get_dashboard()",
        "SalesRow.from_record()",
    ),
    tables=("sales_orders", "sales_order_items", "regions", "daily_sales_rollup"),
    hosts=(
        "reporting-replica-{p_rn}.internal",
        "reporting-api-2.prod.internal",
        "pgbouncer-reporting.internal",
    ),
    people=(
        ("Priyanka Sethu", "is the DBA for the reporting cluster"),
        ("Jonah Albrecht", "is the product manager for the dashboard"),
        ("Wen Takahara", "wrote the original query"),
    ),
    symptoms=(
        "the regional sales dashboard taking half a minute to load",
        "dashboard timeouts every Monday morning",
        "the reporting replica's CPU pinned while the dashboard is open",
    ),
    causes=(
        (
            "the query filters on date_trunc('day', created_at), so the index on created_at "
            "cannot be used",
            "rewrite the date filter as a plain range on created_at so the existing index applies",
        ),
        (
            "the join to sales_order_items happens before the region filter, so every item row of "
            "the year is read",
            "filter orders by region in a CTE before joining the item rows",
        ),
        (
            "the planner's row estimates for sales_orders are stale because autovacuum has not "
            "analyzed the table in months",
            "run ANALYZE after the nightly load and raise the statistics target for region_id",
        ),
    ),
    wrongs=(
        "the reporting replica is simply undersized",
        "pgbouncer queues the dashboard connections",
        "the ORM issues one query per region",
    ),
    alt_fixes=(
        "cache the dashboard response for fifteen minutes",
        "serve the dashboard from the nightly rollup table only",
        "move the reporting replica to a bigger instance",
    ),
    obs=(
        (
            "reporting/queries/regional_sales.sql",
            "the WHERE clause wraps created_at in date_trunc()",
        ),
        (
            "reporting/repository.py",
            "DashboardRepository.regional_sales() sends the raw SQL file with psycopg parameters",
        ),
        (
            "reporting/api/dashboard.py",
            "get_dashboard() runs the query once per selected region instead of once overall",
        ),
        (
            "migrations/versions/0142_sales_indexes.py",
            "there is a btree index on sales_orders(created_at) but none on region_id",
        ),
        (
            "reporting/rollups.py",
            "refresh_sales_rollup() already computes per-region daily totals that nothing reads",
        ),
        (
            "reporting/queries/regional_sales.sql",
            "the join to sales_order_items comes before the region filter",
        ),
    ),
    errors=(
        "psycopg.errors.QueryCanceled: canceling statement due to statement timeout",
        "504 Gateway Timeout from /api/dashboard/regional-sales",
        "pgbouncer: query_wait_timeout",
        'psycopg.errors.UndefinedColumn: column "region" does not exist',
    ),
    edits=(
        (
            "reporting/queries/regional_sales.sql",
            "replace date_trunc('day', created_at) with a half-open range on created_at",
        ),
        (
            "reporting/queries/regional_sales.sql",
            "move the region filter into a CTE ahead of the item join",
        ),
        (
            "migrations/versions/0143_region_index.py",
            "add a concurrent index on sales_orders(region_id, created_at)",
        ),
        ("reporting/api/dashboard.py", "query all selected regions in one statement"),
        ("tests/reporting/test_queries.py", "assert that EXPLAIN picks the new index"),
    ),
    reqs=(
        "that the totals per region are identical to the old query for the last {p_months} months",
        "that the p95 load time stays under {p_target} seconds with 50 concurrent users",
        "that an empty region still returns zeros",
        "that the new index builds without locking sales_orders",
    ),
    risks=(
        "the new index slowing down the nightly bulk load",
        "a plan flip once the table outgrows the statistics sample",
        "cached results hiding a real regression",
    ),
    questions=(
        "whether finance uses the same query for the quarterly report",
        "how much disk the reporting replica has left for another index",
        "whether the dashboard filters by order date or by invoice date",
    ),
    commands=(
        (
            "psql",
            "psql -h reporting-replica-{p_rn}.internal -f reporting/queries/regional_sales.sql",
            ("returned {count} rows, one per region",),
        ),
        (
            "psql",
            'psql -h reporting-replica-{p_rn}.internal -c "select '
            "pg_size_pretty(pg_total_relation_size('sales_orders'))\"",
            ("{count} GB",),
        ),
        (
            "pytest",
            "pytest tests/reporting -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "bash",
            "k6 run load/dashboard.js --vus 50 --duration 2m",
            ("{failed} failed requests; the full summary went to load/results.json",),
        ),
        (
            "bash",
            "curl -s https://reporting-staging.internal/healthz",
            ("ok, the reporting API is up and answering",),
        ),
        (
            "git",
            "git log --oneline -3 -- reporting/queries/regional_sales.sql",
            ("the query has not changed in {count} months",),
        ),
        (
            "psql",
            'psql -h reporting-replica-{p_rn}.internal -c "select last_autoanalyze from '
            "pg_stat_user_tables where relname = 'sales_orders'\"",
            ("last analyzed on {date}",),
        ),
    ),
    metrics=(
        _Metric("p95 load time of the dashboard", " s", (18, 35), (0.9, 2.4), 1),
        _Metric("execution time of the main query", " ms", (14000, 31000), (300, 1900)),
        _Metric("number of buffers read per dashboard load", "", (180_000, 900_000), (2000, 30000)),
    ),
    sql=(
        "reporting-replica-{p_rn}.internal",
        "select region_id, count(*) as orders, round(avg(total), 2) as avg_total from "
        "sales_orders where created_at >= now() - interval '30 days' group by 1 order by 2 desc "
        "limit 4;",
        (("region_id", "int"), ("orders", "big"), ("avg_total", "money")),
    ),
    trace=(
        (
            "reporting/api/dashboard.py",
            "get_dashboard",
            "rows = repo.regional_sales(regions, start, end)",
        ),
        ("reporting/repository.py", "regional_sales", "cur.execute(SQL_REGIONAL_SALES, params)"),
        (
            ".venv/lib/python3.11/site-packages/psycopg/cursor.py",
            "execute",
            "raise ex.with_traceback(None)",
        ),
    ),
    trace_error="psycopg.errors.QueryCanceled: canceling statement due to statement timeout",
    diffs=(
        (
            "reporting/queries/regional_sales.sql",
            "",
            (
                "-WHERE date_trunc('day', o.created_at) BETWEEN %(start)s AND %(end)s",
                "+WHERE o.created_at >= %(start)s",
                "+  AND o.created_at < %(end)s + interval '1 day'",
                "   AND o.status = 'completed'",
            ),
        ),
        (
            "reporting/api/dashboard.py",
            "def get_dashboard(request):",
            (
                "-    rows = [repo.regional_sales([r], start, end) for r in regions]",
                "+    rows = repo.regional_sales(regions, start, end)",
                "     return render(rows)",
            ),
        ),
    ),
    log_cmd="grep 'duration:' /var/log/postgresql/postgresql-{p_pg}-main.log | tail -n 3",
    log_lines=(
        "{ts} LOG:  duration: {slow_ms} ms  execute <unnamed>: WITH filtered AS (SELECT ...",
        "{ts} LOG:  duration: {slow_ms2} ms  execute <unnamed>: SELECT r.name, sum(i.amount) ...",
        "{ts} LOG:  duration: {slow_ms3} ms  statement: SELECT count(*) FROM sales_orders ...",
    ),
    outputs=(
        (
            "psql",
            "$ psql -h reporting-replica-{p_rn}.internal -c 'explain analyze ...'\n Sort  (actual "
            "time={slow_ms}..{slow_ms} rows=12 loops=1)\n   ->  HashAggregate  (actual rows=12 "
            "loops=1)\n         ->  Hash Join  (actual rows={big} loops=1)\n               ->  "
            "Seq Scan on sales_order_items i  (actual rows={big2} loops=1)\n               ->  "
            "Seq Scan on sales_orders o  (actual rows={big3} loops=1)\n                     "
            "Filter: (date_trunc('day', created_at) >= '{date}')\n Execution Time: {slow_ms} ms",
        ),
    ),
    critical=(
        "The dashboard numbers must stay identical to the old query to the cent, because finance "
        "reconciles them against the ledger.",
        "The reporting replica is read-only for us, so all schema changes have to go through "
        "migrations on the primary.",
        "Index builds on sales_orders must use CREATE INDEX CONCURRENTLY, because the table is "
        "written to around the clock.",
        "Do not add a cache in front of the dashboard; the product owner wants live numbers.",
    ),
    exec_critical=(
        "Never run EXPLAIN ANALYZE on write queries against the primary, since it executes them "
        "for real.",
    ),
    soft=(
        "The statement timeout on the reporting replica is {p_timeout_s} seconds and must not be "
        "raised for the dashboard user.",
        "The new index may take at most {p_disk} GB of disk on the replica.",
    ),
    details=(
        _Detail(
            "planning",
            "The slowest dashboard load last week took {answer} seconds, according to Grafana.",
            "How many seconds did the slowest dashboard load take last week?",
            lambda f: f"{f.rng.uniform(40.0, 90.0):.1f}",
        ),
        _Detail(
            "execution",
            "The new index is called {answer}.",
            "What is the name of the new index?",
            lambda f: f.rng.choice(
                (
                    "ix_sales_orders_region_created",
                    "sales_orders_region_id_created_at_idx",
                    "ix_so_region_day",
                )
            ),
        ),
        _Detail(
            "verification",
            "With the new plan the main query touches {answer} shared buffers per load.",
            "How many shared buffers does the main query touch per load after the change?",
            lambda f: str(f.rng.randint(31_000, 60_000)),
        ),
    ),
)

_WORKER_LEAK = _Domain(
    key="queue_worker_leak",
    slug="notif-leak",
    prefix="NOTIF",
    goal="Find and fix the memory growth in the notification queue worker, which the OOM killer "
    "currently restarts about every {p_hours} hours.",
    params={
        "hours": _ri(5, 14),
        "limit": _rc("1024", "1536"),
        "conc": _ri(4, 16),
        "celery": _rc("5.3", "5.4"),
        "soak": _ri(6, 10),
        "cache": _rc("256", "512", "1024"),
        "wn": _ri(1, 9),
    },
    components=(
        "the notification worker",
        "the template cache",
        "the push provider client",
        "the notifications queue",
    ),
    files=(
        "workers/notifications/tasks.py",
        "workers/notifications/templates.py",
        "workers/notifications/push_client.py",
        "workers/celery_app.py",
        "deploy/notification-worker.yaml",
    ),
    test_files=(
        "tests/workers/test_tasks.py",
        "tests/workers/test_templates.py",
        "tests/workers/test_push_client.py",
    ),
    tests=(
        "test_send_push_renders_template",
        "test_template_cache_is_bounded",
        "test_push_client_reuses_session",
        "test_failed_push_is_retried",
        "test_unsubscribed_users_are_skipped",
    ),
    funcs=(
        "send_notification()",
        "TemplateCache.render()",
        "PushClient.send()",
        "build_payload()",
        "on_task_failure()",
    ),
    tables=("notification_log", "user_devices", "notification_templates"),
    hosts=(
        "notif-worker-{p_wn}.prod.internal",
        "redis-queue.prod.internal",
        "notif-api-2.prod.internal",
    ),
    people=(
        ("Soren Maalouf", "owns the notification pipeline"),
        ("Efua Lindgren", "is on call for the workers this week"),
        ("Marek Dobos", "wrote the push client"),
    ),
    symptoms=(
        "the worker's RSS growing steadily until it is OOM-killed",
        "notification delays of several minutes right after each restart",
        "memory growth that tracks the number of distinct templates sent",
    ),
    causes=(
        (
            "TemplateCache keys compiled templates by the full render context, so the cache grows "
            "with every user and evicts nothing",
            "key the template cache by template id and version and bound it with an LRU",
        ),
        (
            "PushClient.send() creates a new HTTP session per call and keeps every session alive "
            "in a module-level list",
            "create one session per worker process and drop the module-level list",
        ),
        (
            "on_task_failure() stores each exception with its traceback and locals in a global "
            "list for a report nobody sends",
            "report failures immediately and keep only the exception type and message",
        ),
    ),
    wrongs=(
        "Celery's prefetch holds thousands of messages in memory",
        "the Redis client leaks connections",
        "the Python build on the image has an allocator leak",
    ),
    alt_fixes=(
        "set max_tasks_per_child so each process is recycled every few thousand tasks",
        "double the pod memory limit",
        "restart the workers every hour from a cron job",
    ),
    obs=(
        (
            "workers/notifications/templates.py",
            "TemplateCache uses a plain dict keyed by (template_id, frozenset(context.items()))",
        ),
        (
            "workers/notifications/push_client.py",
            "PushClient.send() appends every new requests.Session to _SESSIONS",
        ),
        (
            "workers/notifications/tasks.py",
            "on_task_failure() appends the exception object to FAILED, and nothing ever reads "
            "that list",
        ),
        ("workers/celery_app.py", "worker_prefetch_multiplier is 1 and acks_late is on"),
        (
            "deploy/notification-worker.yaml",
            "the pod memory limit is {p_limit}Mi with a concurrency of {p_conc}",
        ),
        (
            "workers/notifications/tasks.py",
            "send_notification() loads the user's devices on every call without any caching",
        ),
    ),
    errors=(
        "MemoryError",
        "Worker exited prematurely: signal 9 (SIGKILL)",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "redis.exceptions.TimeoutError: Timeout reading from socket",
    ),
    edits=(
        (
            "workers/notifications/templates.py",
            "replace the dict with an LRU keyed by template id and version",
        ),
        (
            "workers/notifications/push_client.py",
            "keep a single session per process and remove _SESSIONS",
        ),
        (
            "workers/notifications/tasks.py",
            "store only the exception type and message in on_task_failure()",
        ),
        (
            "tests/workers/test_templates.py",
            "add a test that renders 10,000 distinct contexts and checks the cache size",
        ),
        ("workers/celery_app.py", "log RSS every 1,000 tasks at debug level"),
    ),
    reqs=(
        "that RSS stays flat over a six-hour soak with production-like traffic",
        "that the rendered output is byte-identical to before",
        "that failed pushes are still retried",
        "that the template cache stays within its configured size",
    ),
    risks=(
        "a lower cache hit rate making rendering slower",
        "other code depending on the global FAILED list",
        "the single session going stale after a provider-side disconnect",
    ),
    questions=(
        "whether the analytics job reads the FAILED list",
        "how many distinct templates are active in production",
        "whether the push provider limits connections per client",
    ),
    commands=(
        (
            "pytest",
            "pytest tests/workers -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "bash",
            "python scripts/soak_worker.py --tasks 50000 --tracemalloc",
            ("top allocation site is templates.py:{line} with {mb} MB",),
        ),
        (
            "bash",
            "kubectl top pod -l app=notification-worker",
            ("{mb}Mi on the oldest pod and {mb2}Mi on the newest",),
        ),
        (
            "bash",
            "py-spy dump --pid $(pgrep -f 'celery worker' | head -1)",
            ("all threads idle in the event loop, nothing stuck",),
        ),
        (
            "bash",
            "redis-cli -h redis-queue.prod.internal llen notifications",
            ("{count} messages waiting",),
        ),
        (
            "git",
            "git log --oneline -5 -- workers/notifications/templates.py",
            ("the cache was added {count} weeks ago",),
        ),
        ("bash", "grep -rn _SESSIONS workers/", ("{n} references, all in push_client.py",)),
    ),
    metrics=(
        _Metric("RSS of the worker after six hours", " MiB", (900, 1450), (210, 330)),
        _Metric("RSS growth of the worker per 10,000 tasks", " MiB", (40, 120), (0.2, 3.0), 1),
    ),
    sql=(
        "notif-db.prod.internal",
        "select template_id, count(*) as sent, count(distinct user_id) as users from "
        "notification_log where sent_at > now() - interval '1 hour' group by 1 order by 2 desc "
        "limit 4;",
        (("template_id", "int"), ("sent", "big"), ("users", "big")),
    ),
    trace=(
        (
            "workers/notifications/tasks.py",
            "send_notification",
            "body = TEMPLATES.render(template_id, context)",
        ),
        (
            "workers/notifications/templates.py",
            "render",
            "compiled = self._cache[key] = self._compile(template_id)",
        ),
        (
            ".venv/lib/python3.11/site-packages/jinja2/environment.py",
            "from_string",
            "return cls.from_code(self, self.compile(source), gs, None)",
        ),
    ),
    trace_error="MemoryError",
    diffs=(
        (
            "workers/notifications/templates.py",
            "class TemplateCache:",
            (
                "-        self._cache = {}",
                "+        self._cache = LRU(maxsize={p_cache})",
                "     def render(self, template_id, context):",
                "-        key = (template_id, frozenset(context.items()))",
                "+        key = (template_id, self._versions[template_id])",
            ),
        ),
        (
            "workers/notifications/push_client.py",
            "class PushClient:",
            (
                "     def send(self, device, payload):",
                "-        session = requests.Session()",
                "-        _SESSIONS.append(session)",
                "+        session = self._session",
                "         return session.post(self.url, json=payload, timeout=5)",
            ),
        ),
    ),
    log_cmd="kubectl logs notif-worker-{p_wn} --since=6h | grep -E 'rss|SIGKILL' | tail -n 4",
    log_lines=(
        "{ts} DEBUG worker pid={pid} tasks={big} rss_mb={mb}",
        "{ts} DEBUG worker pid={pid} tasks={big2} rss_mb={mb2}",
        "{ts} INFO celery Task send_notification[{uuid}] succeeded in {secs}s",
        "{ts} ERROR celery Worker exited prematurely: signal 9 (SIGKILL)",
    ),
    outputs=(
        (
            "bash",
            "$ python scripts/soak_worker.py --tasks 50000 --tracemalloc | head -n 4\ntop "
            "allocation sites after 50000 tasks:\n#1 workers/notifications/templates.py:{line}: "
            "{mb} MiB\n#2 workers/notifications/push_client.py:{line2}: {n} MiB\n#3 "
            "jinja2/lexer.py:{line3}: 1.{n2} MiB",
        ),
    ),
    critical=(
        "Notifications must be delivered at most once, so no change may turn acks_late off or add "
        "blind retries.",
        "The rendered text of every template must stay byte-identical, because legal approved the "
        "wording.",
        "Do not raise the pod memory limit; the cluster has no headroom left this quarter.",
        "The worker must keep working with the Celery {p_celery} release pinned in "
        "requirements.txt.",
    ),
    exec_critical=("Never send test pushes to real device tokens; use the sandbox provider only.",),
    soft=(
        "Soak tests on staging must not run longer than {p_soak} hours, because the sandbox push "
        "quota resets daily.",
        "The template cache may hold no more than {p_cache} compiled templates per process.",
    ),
    details=(
        _Detail(
            "planning",
            "The oldest running pod right now is {answer}.",
            "Which pod was the oldest one running during planning?",
            lambda f: f"notification-worker-{_rh(9)(f.rng)}-{_rh(5)(f.rng)}",
        ),
        _Detail(
            "execution",
            "The soak run used {answer} synthetic users.",
            "How many synthetic users did the soak run use?",
            lambda f: str(f.rng.randint(20_000, 90_000)),
        ),
        _Detail(
            "reflection",
            "The leak rate worked out to about {answer} KB per task.",
            "What was the leak rate per task, in KB?",
            lambda f: f"{f.rng.uniform(1.1, 9.9):.1f}",
        ),
    ),
)

_INI_TO_YAML = _Domain(
    key="config_ini_to_yaml",
    slug="pricing-yaml",
    prefix="PLAT",
    goal="Move the pricing service's configuration from config/pricing.ini to a validated YAML "
    "file, keeping every current value and the environment-variable overrides working.",
    params={"keys": _ri(60, 140), "wn": _ri(1, 6), "sections": _ri(8, 12)},
    components=(
        "the pricing service",
        "the config loader",
        "the deployment templates",
        "the settings validator",
    ),
    files=(
        "pricing/config/loader.py",
        "pricing/config/schema.py",
        "config/pricing.ini",
        "config/pricing.yaml",
        "deploy/helm/pricing/values.yaml",
        "scripts/ini_to_yaml.py",
    ),
    test_files=(
        "tests/config/test_loader.py",
        "tests/config/test_schema.py",
        "tests/config/test_env_overrides.py",
    ),
    tests=(
        "test_all_ini_keys_present_in_yaml",
        "test_env_override_wins",
        "test_interpolation_resolved",
        "test_unknown_key_rejected",
        "test_booleans_parsed_strictly",
    ),
    funcs=(
        "load_settings()",
        "Settings.from_mapping()",
        "apply_env_overrides()",
        "convert_ini()",
        "parse_bool()",
    ),
    tables=("config_audit", "price_rules"),
    hosts=("pricing-staging.internal", "config-vault.internal", "pricing-{p_wn}.prod.internal"),
    people=(
        ("Ilse Marchetti", "owns the pricing service"),
        ("Tobias Renwick", "maintains the Helm charts"),
        ("Noor Haddadi", "runs the platform team's config standard"),
    ),
    symptoms=(
        "configuration drift between the INI file and the Helm values",
        "booleans like 'yes' and 'off' being read inconsistently",
        "interpolated values such as %(base_url)s leaking into the running config unexpanded",
    ),
    causes=(
        (
            "configparser resolves %(...)s references at read time, and the YAML loader has no "
            "equivalent",
            "resolve interpolations once in the conversion script and write literal values into "
            "the YAML",
        ),
        (
            "parse_bool() accepts 'yes', 'on' and '1' but treats 'True ' with a trailing space as "
            "false",
            "declare booleans in the schema and reject anything that is not a real YAML boolean",
        ),
        (
            "apply_env_overrides() matches variables by upper-cased section and key, which breaks "
            "for keys with dashes",
            "map environment variables through an explicit alias table in the schema",
        ),
    ),
    wrongs=(
        "the Helm chart overrides the file at deploy time",
        "PyYAML reads 'no' as a string here",
        "the INI file has duplicate sections that configparser merges silently",
    ),
    alt_fixes=(
        "keep the INI file and generate the YAML from it at build time",
        "load both formats for a release and log the differences",
        "convert the file by hand and review the diff line by line",
    ),
    obs=(
        (
            "pricing/config/loader.py",
            "load_settings() reads config/pricing.ini with ConfigParser and BasicInterpolation",
        ),
        (
            "config/pricing.ini",
            "there are {p_keys} keys in nine sections, and seven of them use %(base_url)s "
            "interpolation",
        ),
        ("pricing/config/schema.py", "the schema only covers the [database] and [cache] sections"),
        (
            "deploy/helm/pricing/values.yaml",
            "the chart mounts pricing.ini from a ConfigMap and sets PRICING_DATABASE__HOST",
        ),
        (
            "pricing/config/loader.py",
            "apply_env_overrides() splits variable names on a double underscore",
        ),
        ("scripts/ini_to_yaml.py", "the conversion script writes every value as a string"),
    ),
    errors=(
        "configparser.InterpolationMissingOptionError: Bad value substitution: option 'api_url' "
        "in section 'upstream' contains an interpolation key 'base_url' which is not a valid "
        "option name",
        "yaml.scanner.ScannerError: mapping values are not allowed here",
        "pydantic_core.ValidationError: 1 validation error for Settings cache.ttl_seconds",
        "KeyError: 'PRICING_RATE_LIMIT__BURST'",
    ),
    edits=(
        ("scripts/ini_to_yaml.py", "resolve interpolations before writing and keep native types"),
        ("pricing/config/schema.py", "add the remaining seven sections with strict types"),
        (
            "pricing/config/loader.py",
            "load YAML first and fall back to INI behind a flag for one release",
        ),
        ("deploy/helm/pricing/values.yaml", "mount pricing.yaml instead of pricing.ini"),
        ("tests/config/test_loader.py", "compare the settings loaded from both formats key by key"),
    ),
    reqs=(
        "that all {p_keys} keys load with the same values from YAML as from INI",
        "that environment overrides still win over the file",
        "that unknown keys are rejected at startup",
        "that the Helm chart renders without the INI ConfigMap",
    ),
    risks=(
        "a value that silently changes type, such as a zip code losing its leading zero",
        "the other two services that read the same INI file",
        "an environment override that stops matching after the rename",
    ),
    questions=(
        "whether anyone edits pricing.ini directly on the hosts",
        "whether the staging overrides live in Helm or in the vault",
        "how the other services locate pricing.ini today",
    ),
    commands=(
        (
            "pytest",
            "pytest tests/config -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "bash",
            "python scripts/ini_to_yaml.py config/pricing.ini -o config/pricing.yaml",
            ("wrote {p_keys} keys, {n} of them with interpolation resolved",),
        ),
        (
            "bash",
            "helm template deploy/helm/pricing | grep -c PRICING_",
            ("{count} environment variables",),
        ),
        (
            "bash",
            "diff <(python scripts/dump_settings.py --ini) <(python scripts/dump_settings.py "
            "--yaml)",
            ("{n} differing lines, all of them booleans",),
        ),
        ("bash", "yamllint config/pricing.yaml", ("clean apart from {n} line-length warnings",)),
        ("git", "git grep -n pricing.ini", ("{n} references outside the service",)),
        (
            "bash",
            "python -X importtime -c 'import pricing.app' 2>&1 | tail -n 1",
            ("{ms} ms cumulative for pricing.app",),
        ),
    ),
    metrics=(
        _Metric("number of keys that differ between INI and YAML", "", (6, 24), (0, 0)),
        _Metric("number of config warnings at startup", "", (9, 30), (0, 0)),
    ),
    sql=(
        "pricing-db.internal",
        "select key, old_value, new_value from config_audit where service = 'pricing' order by "
        "changed_at desc limit 3;",
        (
            ("key", "choice:cache.ttl_seconds/upstream.timeout/rate_limit.burst/db.pool_size"),
            ("old_value", "int"),
            ("new_value", "int"),
        ),
    ),
    trace=(
        ("pricing/app.py", "create_app", "settings = load_settings()"),
        ("pricing/config/loader.py", "load_settings", "return Settings.from_mapping(raw)"),
        ("pricing/config/schema.py", "from_mapping", "return cls.model_validate(data)"),
    ),
    trace_error="pydantic_core.ValidationError: 1 validation error for Settings cache.ttl_seconds",
    diffs=(
        (
            "pricing/config/loader.py",
            "def load_settings(path=None):",
            (
                "-    parser = ConfigParser(interpolation=BasicInterpolation())",
                "-    parser.read(path or DEFAULT_INI)",
                "+    data = yaml.safe_load(Path(path or DEFAULT_YAML).read_text())",
                "+    data = apply_env_overrides(data, os.environ)",
                "     return Settings.from_mapping(data)",
            ),
        ),
        (
            "config/pricing.yaml",
            "",
            (
                "+cache:",
                "+  ttl_seconds: 300",
                "+  enabled: true",
                "+upstream:",
                "+  timeout_seconds: 4.5",
            ),
        ),
    ),
    log_cmd="kubectl logs deploy/pricing --since=10m | grep settings | tail -n 3",
    log_lines=(
        "{ts} INFO settings loaded source=pricing.yaml keys={p_keys}",
        "{ts} WARN settings env override ignored name=PRICING_RATE-LIMIT__BURST",
        "{ts} INFO settings override applied name=PRICING_DATABASE__HOST",
    ),
    outputs=(
        (
            "bash",
            "$ diff <(python scripts/dump_settings.py --ini) <(python scripts/dump_settings.py "
            "--yaml)\n{line}c{line}\n< cache.enabled = 'yes'\n---\n> cache.enabled = True",
        ),
    ),
    critical=(
        "The service must keep reading PRICING_* environment variables under the same names, "
        "because the Helm charts of two other teams set them.",
        "Every key in the current pricing.ini must end up in the YAML with exactly the same "
        "effective value.",
        "Secrets must not be written into pricing.yaml; they stay in the vault and are injected "
        "at runtime.",
        "The service must still start from the INI file for one release, so that a rollback needs "
        "no config change.",
    ),
    exec_critical=(
        "Never commit a generated pricing.yaml that contains the staging database password.",
    ),
    soft=(
        "The new schema may have at most {p_sections} top-level sections, per the platform team's "
        "config standard.",
        "Keeping the YAML switch behind the PRICING_CONFIG_FORMAT flag is required until the next "
        "release.",
    ),
    details=(
        _Detail(
            "planning",
            "The INI file currently has {answer} lines including comments.",
            "How many lines does pricing.ini have, including comments?",
            lambda f: str(f.rng.randint(180, 420)),
        ),
        _Detail(
            "execution",
            "The sha256 of the converted YAML starts with {answer}.",
            "What are the first characters of the converted YAML file's sha256?",
            lambda f: _rh(10)(f.rng),
        ),
        _Detail(
            "verification",
            "The platform team's schema linter checked against version {answer} of the config "
            "standard.",
            "Which version of the config standard did the schema linter check against?",
            lambda f: f"{f.rng.randint(1, 3)}.{f.rng.randint(0, 9)}.{f.rng.randint(0, 9)}",
        ),
    ),
)

_RATE_LIMIT = _Domain(
    key="api_rate_limiting",
    slug="api-ratelimit",
    prefix="API",
    goal="Add per-key rate limiting to the public REST API ({p_rpm} requests per minute by "
    "default, with a burst of {p_burst}) and answer over-limit requests with a proper 429.",
    params={
        "rpm": _rc("300", "600", "1200"),
        "burst": _ri(20, 80),
        "rn": _ri(1, 3),
        "wn": _ri(1, 8),
        "cache_s": _rc("30", "60", "120"),
        "lat": _rc("2", "3", "5"),
    },
    components=(
        "the public API gateway",
        "the rate limiter middleware",
        "the API key service",
        "the Redis cluster for rate limits",
    ),
    files=(
        "api/middleware/ratelimit.py",
        "api/app.py",
        "api/keys/service.py",
        "api/settings.py",
        "api/errors.py",
        "docs/public/rate-limits.md",
    ),
    test_files=(
        "tests/api/test_ratelimit.py",
        "tests/api/test_errors.py",
        "tests/api/test_keys.py",
    ),
    tests=(
        "test_burst_allowed_then_429",
        "test_retry_after_header_present",
        "test_limits_are_per_key",
        "test_internal_keys_exempt",
        "test_limiter_fails_open_when_redis_down",
    ),
    funcs=(
        "RateLimitMiddleware.__call__()",
        "take_token()",
        "resolve_api_key()",
        "too_many_requests()",
        "KeyPolicy.for_key()",
    ),
    tables=("api_keys", "api_key_policies", "api_usage_daily"),
    hosts=(
        "redis-ratelimit-{p_rn}.prod.internal",
        "api-staging.internal",
        "api-gw-{p_wn}.prod.internal",
    ),
    people=(
        ("Gideon Achebe-Lund", "owns the public API"),
        ("Paula Szymanska", "runs developer relations and writes the API docs"),
        ("Ravi Castellanos", "operates the Redis clusters"),
    ),
    symptoms=(
        "a handful of API keys sending several thousand requests per minute",
        "latency spikes for everyone when one integration retries in a tight loop",
        "clients hammering the API because it does not answer with 429",
    ),
    causes=(
        (
            "the API has no per-key accounting at all, and the only limit is the load balancer's "
            "connection cap",
            "implement a token bucket per key in Redis with one atomic Lua script",
        ),
        (
            "the retry storms come from clients that retry immediately because the API does not "
            "send Retry-After",
            "answer with 429 and a Retry-After header computed from the bucket state",
        ),
        (
            "the largest bursts come from a single partner key that polls every endpoint in "
            "parallel",
            "give partner keys their own policy in api_key_policies instead of one global default",
        ),
    ),
    wrongs=(
        "the load balancer already rate limits per IP",
        "the spikes come from the nightly reports rather than from clients",
        "Redis is too slow to sit in the request path",
    ),
    alt_fixes=(
        "limit per IP address at the load balancer",
        "use an in-process limiter in each gateway pod",
        "ask the noisy partners by e-mail to slow down",
    ),
    obs=(
        (
            "api/app.py",
            "middlewares are added in the order auth, logging, routing, with no hook for limits",
        ),
        (
            "api/keys/service.py",
            "resolve_api_key() already caches key lookups for {p_cache_s} seconds",
        ),
        ("api/errors.py", "too_many_requests() exists, but nothing calls it"),
        ("api/settings.py", "there is an unused RATE_LIMIT_ENABLED flag that defaults to False"),
        (
            "docs/public/rate-limits.md",
            "the public docs promise {p_rpm} requests per minute even though nothing enforces it",
        ),
        (
            "api/middleware/ratelimit.py",
            "the file is a stub with a TODO and a fixed-window counter that nobody wired in",
        ),
    ),
    errors=(
        "redis.exceptions.ConnectionError: Error 111 connecting to "
        "redis-ratelimit-{p_rn}.prod.internal:6379. Connection refused",
        "AssertionError: assert 200 == 429",
        "KeyError: 'X-RateLimit-Remaining'",
        "NOSCRIPT No matching script. Please use EVAL",
    ),
    edits=(
        (
            "api/middleware/ratelimit.py",
            "implement take_token() as a single EVALSHA call running a token bucket script",
        ),
        ("api/app.py", "insert RateLimitMiddleware right after auth so the key is known"),
        ("api/errors.py", "add Retry-After and X-RateLimit-Remaining to too_many_requests()"),
        ("api/keys/service.py", "load each key's policy together with the key itself"),
        ("docs/public/rate-limits.md", "document the burst allowance and the 429 response body"),
    ),
    reqs=(
        "that a key gets exactly its burst allowance before the first 429",
        "that the Retry-After header is present and plausible",
        "that internal keys are exempt",
        "that the API keeps serving while Redis is down",
    ),
    risks=(
        "the limiter adding latency to every request",
        "partners hitting the limit right after the release without warning",
        "clock skew between gateway pods making the window uneven",
    ),
    questions=(
        "whether the mobile app uses one shared key",
        "whether failed requests should count against the limit",
        "how much headroom the Redis cluster has at peak",
    ),
    commands=(
        (
            "pytest",
            "pytest tests/api -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "bash",
            "hey -n 2000 -c 50 -H 'X-Api-Key: test-key-1' https://api-staging.internal/v1/orders",
            ("{count} responses were 429, p99 latency {ms} ms",),
        ),
        (
            "bash",
            "redis-cli -h redis-ratelimit-{p_rn}.prod.internal info stats | grep instantaneous_ops",
            ("instantaneous_ops_per_sec:{ops}",),
        ),
        (
            "psql",
            'psql -h api-db.internal -c "select key_id, sum(requests) from api_usage_daily where '
            'day = current_date group by 1 order by 2 desc limit 5"',
            ("the top key made {big} requests today",),
        ),
        (
            "bash",
            "curl -si -H 'X-Api-Key: test-key-1' https://api-staging.internal/v1/ping | head -n 5",
            ("200 with no rate limit headers yet",),
        ),
        (
            "git",
            "git log --oneline -- api/middleware/ratelimit.py",
            ("two commits, both from the original stub",),
        ),
        ("bash", "grep -rn too_many_requests api/", ("only the definition, no callers",)),
    ),
    metrics=(
        _Metric(
            "p99 latency for other clients during a retry storm", " ms", (1400, 3600), (190, 420)
        ),
        _Metric("requests per minute from the noisiest key", "", (4000, 12000), (600, 1200)),
        _Metric("share of requests failing with 5xx during a retry storm", "%", (8, 30), (0, 1), 1),
    ),
    sql=(
        "api-db.internal",
        "select key_id, sum(requests) as requests, max(peak_rpm) as peak_rpm from api_usage_daily "
        "where day >= current_date - 7 group by 1 order by 2 desc limit 4;",
        (("key_id", "id"), ("requests", "big"), ("peak_rpm", "int")),
    ),
    trace=(
        ("api/app.py", "dispatch", "response = await self.app(scope, receive, send)"),
        (
            "api/middleware/ratelimit.py",
            "__call__",
            "allowed, remaining = await take_token(self.redis, key_id, policy)",
        ),
        (
            "api/middleware/ratelimit.py",
            "take_token",
            "return await redis.evalsha(SCRIPT_SHA, 1, bucket_key, now, rate, burst)",
        ),
    ),
    trace_error="redis.exceptions.NoScriptError: No matching script. Please use EVAL.",
    diffs=(
        (
            "api/app.py",
            "def create_app(settings):",
            (
                "     app.add_middleware(AuthMiddleware)",
                "+    if settings.rate_limit_enabled:",
                "+        app.add_middleware(RateLimitMiddleware, redis=redis_pool)",
                "     app.add_middleware(LoggingMiddleware)",
            ),
        ),
        (
            "api/errors.py",
            "def too_many_requests(retry_after):",
            (
                "-    return JSONResponse(body, status_code=429)",
                '+    headers = {"Retry-After": str(retry_after)}',
                "+    return JSONResponse(body, status_code=429, headers=headers)",
            ),
        ),
    ),
    log_cmd="kubectl logs deploy/api-gateway --since=15m | grep ratelimit | tail -n 4",
    log_lines=(
        "{ts} INFO ratelimit key={id} allowed remaining={n}",
        "{ts} WARN ratelimit key={id} limited retry_after={n2}s",
        "{ts} ERROR ratelimit redis unavailable, failing open",
        "{ts} INFO ratelimit policy loaded key={id2} rate={p_rpm}/min burst={p_burst}",
    ),
    outputs=(
        (
            "bash",
            "$ curl -si -H 'X-Api-Key: test-key-1' https://api-staging.internal/v1/orders | head "
            "-n 4\nHTTP/1.1 429 Too Many Requests\nRetry-After: {n}\nX-RateLimit-Limit: {p_rpm}\n"
            "X-RateLimit-Remaining: 0",
        ),
    ),
    critical=(
        "Internal service keys must never be rate limited, because the billing jobs use them in "
        "bulk.",
        "If Redis is unavailable, the API must fail open and keep serving requests.",
        "The limit must be counted per API key and not per IP address, since several partners "
        "share NAT gateways.",
        "Do not change the JSON error format of existing endpoints; the client SDKs parse it.",
    ),
    exec_critical=(
        "Never log full API keys; only their first eight characters may appear in logs.",
    ),
    soft=(
        "The limiter must not add more than {p_lat} ms to the p99 latency of any endpoint.",
        "Partners have to be notified by {day}, so that enforcement can start the following week.",
    ),
    details=(
        _Detail(
            "planning",
            "The noisiest key right now belongs to the partner {answer}.",
            "Which partner owns the noisiest API key?",
            lambda f: f.rng.choice(_PARTNERS),
        ),
        _Detail(
            "execution",
            "The SHA of the loaded Lua script starts with {answer}.",
            "What are the first characters of the Lua script's SHA?",
            lambda f: _rh(10)(f.rng),
        ),
        _Detail(
            "verification",
            "Under the staging load test the limiter added {answer} ms at p99.",
            "How many milliseconds did the limiter add at p99 under the staging load test?",
            lambda f: f"{f.rng.uniform(0.4, 2.9):.1f}",
        ),
    ),
)

_DJANGO_UPGRADE = _Domain(
    key="framework_major_upgrade",
    slug="django-upgrade",
    prefix="PORTAL",
    goal="Upgrade the customer portal from Django {p_old} to Django {p_new} without any change in "
    "behaviour for users.",
    params={
        "old": _rc("4.1", "4.2"),
        "new": _rc("5.1", "5.2"),
        "py": _rc("3.11", "3.12"),
        "urls": _ri(20, 60),
        "wn": _ri(1, 6),
        "node": _ri(1, 8),
        "prs": _ri(2, 4),
    },
    components=(
        "the customer portal",
        "the admin site",
        "the settings module",
        "the template layer",
    ),
    files=(
        "portal/settings/base.py",
        "portal/urls.py",
        "portal/accounts/views.py",
        "portal/orders/models.py",
        "requirements/base.txt",
        "portal/middleware.py",
    ),
    test_files=(
        "tests/portal/test_accounts.py",
        "tests/portal/test_orders.py",
        "tests/portal/test_admin.py",
    ),
    tests=(
        "test_password_reset_flow",
        "test_order_list_paginates",
        "test_admin_changelist_loads",
        "test_csrf_on_profile_form",
        "test_order_dates_in_local_time",
    ),
    funcs=(
        "OrderListView.get_queryset()",
        "PortalMiddleware.__call__()",
        "send_reset_email()",
        "Order.save()",
        "format_local_date()",
    ),
    tables=("orders_order", "accounts_profile", "django_migrations"),
    hosts=(
        "portal-staging.internal",
        "portal-{p_wn}.prod.internal",
        "ci-runner-{p_node}.build.internal",
    ),
    people=(
        ("Agnes Thorvald", "leads the portal team"),
        ("Mateo Kurokawa", "maintains the shared Django plugins"),
        ("Linnea Osei", "does release management"),
    ),
    symptoms=(
        "deprecation warnings that become errors on the new version",
        "third-party packages without a release for the new version",
        "a test suite that stops at import time after the version bump",
    ),
    causes=(
        (
            "PortalMiddleware still relies on MiddlewareMixin behaviour that the new version "
            "removed",
            "rewrite PortalMiddleware as a plain callable class",
        ),
        (
            "the portal depends on USE_L10N and pytz, and both are gone in the new version",
            "move date handling to zoneinfo and drop the USE_L10N setting",
        ),
        (
            "django-legacy-widgets is pinned to a release that imports a removed module",
            "replace django-legacy-widgets with vendored copies of the two widgets we actually use",
        ),
    ),
    wrongs=(
        "the database adapter is incompatible with the new version",
        "the admin templates need a full rewrite",
        "the migrations have to be squashed before the upgrade",
    ),
    alt_fixes=(
        "upgrade in two steps through the intermediate version",
        "fork the abandoned widget package and patch it",
        "silence the deprecation warnings and upgrade later",
    ),
    obs=(
        (
            "portal/middleware.py",
            "PortalMiddleware subclasses MiddlewareMixin and only overrides process_request()",
        ),
        (
            "portal/settings/base.py",
            "USE_L10N = True is still set, and TIME_ZONE comes from an environment variable",
        ),
        (
            "requirements/base.txt",
            "django-legacy-widgets is pinned to 1.4.2 with a comment that says 'do not bump'",
        ),
        (
            "portal/orders/models.py",
            "Order.save() calls pytz.timezone() to localize the created date",
        ),
        ("portal/urls.py", "{p_urls} url() patterns still use regular expressions"),
        (
            "portal/accounts/views.py",
            "the password reset view is a copy of an old built-in view, not a subclass",
        ),
    ),
    errors=(
        "ImportError: cannot import name 'url' from 'django.conf.urls'",
        "ModuleNotFoundError: No module named 'pytz'",
        "RemovedInDjango50Warning: The USE_L10N setting is deprecated",
        "TypeError: PortalMiddleware.__init__() missing 1 required positional argument: "
        "'get_response'",
    ),
    edits=(
        ("portal/urls.py", "replace the url() patterns with path() and re_path()"),
        (
            "portal/middleware.py",
            "turn PortalMiddleware into a callable class that takes get_response",
        ),
        ("portal/orders/models.py", "use zoneinfo instead of pytz in Order.save()"),
        ("requirements/base.txt", "bump Django to {p_new} and drop django-legacy-widgets"),
        ("portal/settings/base.py", "remove USE_L10N and set FORMS_URLFIELD_ASSUME_HTTPS"),
    ),
    reqs=(
        "that every page on the smoke list renders with a 200",
        "that order dates still show in the customer's local time zone",
        "that the password reset e-mail is unchanged",
        "that no deprecation warning is left in the test output",
    ),
    risks=(
        "a third-party plugin that only fails at runtime on a rarely used page",
        "subtle date shifts around daylight saving time",
        "the admin's new default ordering confusing support staff",
    ),
    questions=(
        "whether the reporting service imports portal models directly",
        "whether the mobile team depends on the old URL regexes",
        "how long Django {p_old} stays under security support",
    ),
    commands=(
        (
            "pytest",
            "pytest -q -W error::DeprecationWarning",
            ("{passed} passed, {failed} failed, {n} errors in {secs}s",),
        ),
        (
            "bash",
            "python -m pip install -r requirements/base.txt",
            ("resolution failed: django-legacy-widgets 1.4.2 requires Django<5.0",),
        ),
        ("bash", "python manage.py check --deploy", ("System check identified {n} issues",)),
        ("bash", "python manage.py makemigrations --check --dry-run", ("No changes detected",)),
        ("bash", "pipdeptree -r -p django", ("{count} packages depend on Django directly",)),
        (
            "git",
            "git grep -n 'from django.conf.urls import url'",
            ("{n} files still import url()",),
        ),
        ("bash", "python -W error -c 'import portal.settings.base'", ("imports cleanly now",)),
    ),
    metrics=(
        _Metric("number of deprecation warnings in the test run", "", (40, 260), (0, 0)),
        _Metric("number of tests failing on the new version", "", (30, 140), (0, 0)),
    ),
    sql=(
        "portal-db.internal",
        "select app, count(*) as applied, max(applied)::date as last from django_migrations group "
        "by 1 order by 2 desc limit 4;",
        (
            ("app", "choice:orders/accounts/admin/auth/sessions"),
            ("applied", "int"),
            ("last", "date"),
        ),
    ),
    trace=(
        ("portal/wsgi.py", "<module>", "application = get_wsgi_application()"),
        (
            ".venv/lib/python{p_py}/site-packages/django/core/handlers/base.py",
            "load_middleware",
            "mw_instance = middleware(adapted_handler)",
        ),
    ),
    trace_error="TypeError: PortalMiddleware.__init__() missing 1 required positional argument: "
    "'get_response'",
    diffs=(
        (
            "portal/urls.py",
            "",
            (
                "-from django.conf.urls import url",
                "+from django.urls import path, re_path",
                "-    url(r'^orders/$', OrderListView.as_view(), name='order-list'),",
                "+    path('orders/', OrderListView.as_view(), name='order-list'),",
            ),
        ),
        (
            "portal/middleware.py",
            "",
            (
                "-class PortalMiddleware(MiddlewareMixin):",
                "-    def process_request(self, request):",
                "+class PortalMiddleware:",
                "+    def __init__(self, get_response):",
                "+        self.get_response = get_response",
            ),
        ),
    ),
    log_cmd="pytest -q 2>&1 | grep Warning | sort | uniq -c | sort -rn | head -n 3",
    log_lines=(
        "    {count} RemovedInDjango50Warning: The USE_L10N setting is deprecated.",
        "    {count2} RemovedInDjango50Warning: The django.utils.timezone.utc alias is deprecated.",
        "    {n} DeprecationWarning: pkg_resources is deprecated as an API.",
    ),
    outputs=(
        (
            "bash",
            "$ python manage.py check --deploy\nSystem check identified some issues:\n\n"
            "WARNINGS:\n?: (security.W004) You have not set a value for the SECURE_HSTS_SECONDS "
            "setting.\n?: (urls.W002) Your URL pattern '^orders/$' has a route beginning with a "
            "'^'.\n\nSystem check identified 2 issues (0 silenced).",
        ),
    ),
    critical=(
        "All URLs must stay exactly the same, including trailing slashes, because partner sites "
        "deep-link into the portal.",
        "The upgrade must not ship any migration that rewrites orders_order, since the table "
        "holds over 200 million rows.",
        "Do not upgrade anything except Django and the packages that block it; other bumps go in "
        "separate PRs.",
        "The portal must keep running on Python {p_py}, which is what the production image ships.",
    ),
    exec_critical=(
        "Never run the test suite against the shared staging database; use the disposable "
        "Postgres container.",
    ),
    soft=(
        "The upgrade must be live by {day}, before security support for the old version runs out.",
        "No more than {p_prs} PRs should be open for the upgrade at the same time, so that review "
        "can keep up.",
    ),
    details=(
        _Detail(
            "planning",
            "The smoke list for the portal has {answer} URLs.",
            "How many URLs are on the portal's smoke list?",
            lambda f: str(f.rng.randint(110, 380)),
        ),
        _Detail(
            "execution",
            "The vendored widgets now live in {answer}.",
            "Where do the vendored widgets live after the change?",
            lambda f: f.rng.choice(
                (
                    "portal/vendor/legacy_widgets/",
                    "portal/widgets/vendored.py",
                    "portal/forms/legacy_widgets.py",
                )
            ),
        ),
        _Detail(
            "reflection",
            "The checklist that would have saved me time was {answer}.",
            "Which checklist would have saved the agent time on the upgrade?",
            lambda f: f"wiki/portal/upgrade-checklist-v{f.rng.randint(2, 7)}",
        ),
    ),
)

_NIGHTLY_ETL = _Domain(
    key="nightly_etl_broken",
    slug="etl-orders",
    prefix="DWH",
    goal="Get the nightly warehouse ETL job green again; it has failed {p_fails} nights in a row "
    "since the upstream orders schema changed.",
    params={
        "fails": _rc("three", "four", "five", "six"),
        "hour": _rc("02:00", "02:30", "03:15"),
        "retries": _ri(2, 4),
        "par": _ri(2, 4),
    },
    components=(
        "the nightly ETL DAG",
        "the orders extract task",
        "the warehouse loader",
        "the data quality checks",
    ),
    files=(
        "dags/nightly_orders.py",
        "etl/extract/orders.py",
        "etl/transform/orders.py",
        "etl/load/warehouse.py",
        "etl/quality/checks.yaml",
        "etl/schemas/orders_v3.json",
    ),
    test_files=(
        "tests/etl/test_extract_orders.py",
        "tests/etl/test_transform_orders.py",
        "tests/etl/test_quality_checks.py",
    ),
    tests=(
        "test_extract_handles_currency_column",
        "test_transform_is_idempotent",
        "test_load_replaces_partition",
        "test_row_counts_match_source",
        "test_null_customer_ids_rejected",
    ),
    funcs=(
        "extract_orders()",
        "normalize_amounts()",
        "load_partition()",
        "run_quality_checks()",
        "OrdersSchema.validate()",
    ),
    tables=("raw.orders", "staging.orders_clean", "warehouse.fact_orders", "etl.run_log"),
    hosts=(
        "airflow-scheduler.data.internal",
        "warehouse.data.internal",
        "orders-db-replica.internal",
    ),
    people=(
        ("Henrik Balogun", "owns the warehouse models"),
        ("Daria Voss", "maintains Airflow"),
        ("Kofi Brennan", "is on the upstream orders team"),
    ),
    symptoms=(
        "the orders extract task failing every night since the upstream release",
        "yesterday's partition of fact_orders missing from the warehouse",
        "the row-count quality check alerting every morning",
    ),
    causes=(
        (
            "the upstream team renamed amount to amount_gross and added a currency column, while "
            "OrdersSchema still expects the old layout",
            "update OrdersSchema to the v3 layout and map amount_gross explicitly in "
            "normalize_amounts()",
        ),
        (
            "load_partition() appends instead of replacing, so every retry duplicated rows and "
            "the row-count check now fails even on good runs",
            "make load_partition() delete and insert the partition in one transaction",
        ),
        (
            "extract_orders() builds its window from naive datetimes and misses orders created "
            "between midnight UTC and local midnight",
            "build the extract window from timezone-aware UTC datetimes",
        ),
    ),
    wrongs=(
        "the warehouse ran out of disk during the load",
        "the Airflow worker lost its database credentials",
        "the upstream replica was down during the extract window",
    ),
    alt_fixes=(
        "skip the row-count check until the upstream schema settles",
        "backfill the missing days by hand",
        "pin the extract to the old view the upstream team still maintains",
    ),
    obs=(
        ("etl/extract/orders.py", "extract_orders() selects columns by name, including amount"),
        (
            "etl/schemas/orders_v3.json",
            "the upstream team's new schema lists amount_gross, amount_net and currency",
        ),
        (
            "etl/load/warehouse.py",
            "load_partition() runs a plain INSERT without deleting the partition first",
        ),
        ("dags/nightly_orders.py", "retries are set to {p_retries} with a ten-minute delay"),
        (
            "etl/quality/checks.yaml",
            "the row-count check allows a 0.5 percent difference from the source",
        ),
        ("etl/transform/orders.py", "normalize_amounts() assumes every amount is in EUR"),
    ),
    errors=(
        'psycopg.errors.UndefinedColumn: column "amount" does not exist',
        "jsonschema.exceptions.ValidationError: 'currency' was unexpected",
        "QualityCheckFailed: row_count fact_orders={big} source={big2}",
        "airflow.exceptions.AirflowTaskTimeout: Timeout, PID: {pid}",
    ),
    edits=(
        ("etl/schemas/orders_v3.json", "vendor the upstream v3 schema and validate against it"),
        ("etl/transform/orders.py", "map amount_gross to amount and carry the currency through"),
        ("etl/load/warehouse.py", "delete and insert the partition inside one transaction"),
        ("etl/extract/orders.py", "build the extract window from timezone-aware UTC datetimes"),
        (
            "dags/nightly_orders.py",
            "add an on-failure callback that posts the failing task to the data channel",
        ),
    ),
    reqs=(
        "that fact_orders has exactly one row per source order for every backfilled day",
        "that the row-count check passes with its original threshold",
        "that non-EUR orders keep their original currency",
        "that rerunning the DAG for a day does not duplicate rows",
    ),
    risks=(
        "the backfill competing with the morning dashboards for warehouse slots",
        "the upstream team changing the schema again without notice",
        "duplicated rows from earlier retries still sitting in older partitions",
    ),
    questions=(
        "whether finance needs the missing days before month end",
        "whether the upstream team will keep the old view for a while",
        "how many days back the source retains raw orders",
    ),
    commands=(
        (
            "bash",
            "airflow tasks test nightly_orders extract_orders {date}",
            ("failed with UndefinedColumn on amount", "succeeded, {big} rows extracted"),
        ),
        (
            "bash",
            "airflow dags backfill nightly_orders -s {date} -e {date}",
            ("one run queued and finished in {mins} minutes",),
        ),
        (
            "psql",
            'psql -h warehouse.data.internal -c "select count(*) from warehouse.fact_orders '
            "where order_date = '{date}'\"",
            ("returned {big}",),
        ),
        (
            "psql",
            "psql -h orders-db-replica.internal -c '\\d orders'",
            ("shows amount_gross, amount_net and currency; amount is gone",),
        ),
        (
            "pytest",
            "pytest tests/etl -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "bash",
            "airflow tasks states-for-dag-run nightly_orders scheduled__{date}T{p_hour}:00+00:00",
            ("extract failed and everything downstream is upstream_failed",),
        ),
        (
            "bash",
            "jq '.properties | keys | length' etl/schemas/orders_v3.json",
            ("{count} fields",),
        ),
    ),
    metrics=(
        _Metric("end-to-end runtime of the DAG", " min", (55, 95), (38, 70)),
        _Metric("number of duplicate rows in fact_orders", "", (12000, 90000), (0, 0)),
        _Metric("number of rows loaded for the latest day", "", (0, 0), (180_000, 420_000)),
    ),
    sql=(
        "warehouse.data.internal",
        "select order_date, count(*) as rows, count(distinct order_id) as orders from "
        "warehouse.fact_orders where order_date >= current_date - 4 group by 1 order by 1;",
        (("order_date", "date"), ("rows", "big"), ("orders", "big")),
    ),
    trace=(
        (
            ".venv/lib/python3.11/site-packages/airflow/models/taskinstance.py",
            "_execute_task",
            "result = execute_callable(context=context)",
        ),
        ("dags/nightly_orders.py", "run_extract", 'return extract_orders(ds=context["ds"])'),
        ("etl/extract/orders.py", "extract_orders", "cur.execute(ORDERS_SQL, window)"),
    ),
    trace_error='psycopg.errors.UndefinedColumn: column "amount" does not exist',
    diffs=(
        (
            "etl/transform/orders.py",
            "def normalize_amounts(rows):",
            (
                "     for row in rows:",
                '-        amount = row["amount"]',
                '+        amount = row["amount_gross"]',
                '+        currency = row.get("currency", "EUR")',
            ),
        ),
        (
            "etl/load/warehouse.py",
            "def load_partition(conn, day, rows):",
            (
                "     with conn.transaction():",
                "+        cur.execute(DELETE_PARTITION, (day,))",
                "         cur.executemany(INSERT_FACT, rows)",
            ),
        ),
    ),
    log_cmd="tail -n 4 "
    "logs/dag_id=nightly_orders/run_id=scheduled__{date}/task_id=extract_orders/attempt=3.log",
    log_lines=(
        "[{ts}] {taskinstance.py:1159} INFO - Starting attempt 3 of 3",
        "[{ts}] {extract.py:88} INFO - extract window {date} 00:00 to 23:59",
        "[{ts}] {taskinstance.py:2698} ERROR - Task failed with exception",
        "[{ts}] {standard_task_runner.py:110} ERROR - Failed to execute job {pid} for task "
        "extract_orders",
    ),
    outputs=(
        (
            "bash",
            "$ airflow dags list-runs -d nightly_orders --no-backfill | head -n 4\ndag_id         "
            "| run_id                              | state\nnightly_orders | "
            "scheduled__{date}T{p_hour}:00+00:00 | failed\nnightly_orders | "
            "scheduled__{date2}T{p_hour}:00+00:00 | failed\nnightly_orders | "
            "scheduled__{date3}T{p_hour}:00+00:00 | failed",
        ),
    ),
    critical=(
        "The warehouse table fact_orders must keep its column names, because the finance "
        "dashboards query it directly.",
        "Backfills must not run between 06:00 and 09:00 UTC, when the morning reports read the "
        "warehouse.",
        "Do not loosen the data quality thresholds just to make the job pass.",
        "The extract must read from the orders replica only and never from the upstream team's "
        "primary.",
    ),
    exec_critical=(
        "Never drop or truncate a warehouse partition without taking a snapshot first.",
    ),
    soft=(
        "The backfill must be finished by {day} morning, when finance closes the week.",
        "At most {p_par} backfill runs may execute in parallel on the shared Airflow pool.",
    ),
    details=(
        _Detail(
            "planning",
            "The first failed run was the one scheduled for {answer}.",
            "On which date was the first failed run of the nightly job scheduled?",
            lambda f: (f.ctx.base_date - timedelta(days=f.rng.randint(30, 60))).isoformat(),
        ),
        _Detail(
            "execution",
            "The upstream schema change shipped in their release {answer}.",
            "In which upstream release did the orders schema change ship?",
            lambda f: (
                f"orders-api {f.rng.randint(20, 26)}.{f.rng.randint(1, 12)}.{f.rng.randint(0, 9)}"
            ),
        ),
        _Detail(
            "reflection",
            "The alert that should have caught this on the first night is {answer}.",
            "Which alert should have caught the ETL failure on the first night?",
            lambda f: f.rng.choice(
                ("etl_orders_freshness", "fact_orders_lag_hours", "nightly_orders_sla_miss")
            ),
        ),
    ),
)

_WEBHOOK_RETRIES = _Domain(
    key="payment_webhook_retries",
    slug="webhook-retries",
    prefix="PAY",
    goal="Make the payment provider's webhook consumer retry failed events safely, so that no "
    "payment confirmation is lost when our database is briefly unavailable.",
    params={
        "attempts": _ri(5, 8),
        "ing": _rc("15", "30", "60"),
        "prov": _ri(6, 12),
        "ack": _ri(3, 10),
        "wn": _ri(1, 4),
    },
    components=(
        "the webhook consumer",
        "the payments service",
        "the dead-letter queue",
        "the order fulfilment service",
    ),
    files=(
        "payments/webhooks/handler.py",
        "payments/webhooks/verify.py",
        "payments/events/store.py",
        "payments/retry.py",
        "payments/settings.py",
        "deploy/payments-webhooks.yaml",
    ),
    test_files=(
        "tests/payments/test_webhook_handler.py",
        "tests/payments/test_retry.py",
        "tests/payments/test_signature.py",
    ),
    tests=(
        "test_duplicate_event_is_ignored",
        "test_retry_after_db_outage",
        "test_invalid_signature_rejected",
        "test_event_order_does_not_matter",
        "test_dead_letter_after_max_attempts",
    ),
    funcs=(
        "handle_webhook()",
        "verify_signature()",
        "EventStore.record()",
        "schedule_retry()",
        "mark_order_paid()",
    ),
    tables=("payment_events", "orders", "webhook_dead_letters"),
    hosts=("payments-db.prod.internal", "webhooks-{p_wn}.prod.internal", "rabbitmq.prod.internal"),
    people=(
        ("Rosalind Achterberg", "owns the payments service"),
        ("Emil Sandoval", "is our contact at the payment provider"),
        ("Chioma Lindahl", "runs finance operations"),
    ),
    symptoms=(
        "paid orders stuck in pending after short database outages",
        "the provider disabling our endpoint after too many 500 responses",
        "support marking orders as paid by hand from the provider dashboard",
    ),
    causes=(
        (
            "handle_webhook() returns 500 on any database error, and the provider gives up after "
            "a few attempts",
            "acknowledge the webhook only after the event is stored durably and retry the "
            "processing from our own queue",
        ),
        (
            "EventStore.record() is not idempotent, so a redelivered event hits the unique "
            "constraint and is reported as an error",
            "make EventStore.record() an upsert keyed by the provider's event id",
        ),
        (
            "mark_order_paid() runs inside the request with no timeout, so a slow database makes "
            "the provider time out and resend",
            "move mark_order_paid() to a background task with bounded retries and a dead-letter "
            "queue",
        ),
    ),
    wrongs=(
        "the signature check rejects valid events",
        "the provider sends events out of order",
        "the load balancer drops long-running requests",
    ),
    alt_fixes=(
        "ask the provider to raise their retry count",
        "poll the provider's API every five minutes for missed payments",
        "always return 200 and reconcile at night",
    ),
    obs=(
        (
            "payments/webhooks/handler.py",
            "handle_webhook() does the signature check, storage and order update in one request",
        ),
        (
            "payments/events/store.py",
            "EventStore.record() does a plain INSERT with a unique constraint on event_id",
        ),
        ("payments/retry.py", "the retry helper exists, but only the refund flow uses it"),
        (
            "payments/webhooks/verify.py",
            "verify_signature() compares HMACs with == instead of a constant-time compare",
        ),
        ("deploy/payments-webhooks.yaml", "the request timeout at the ingress is {p_ing} seconds"),
        (
            "payments/settings.py",
            "a comment quotes the provider's retry schedule: {p_prov} attempts over 24 hours",
        ),
    ),
    errors=(
        "psycopg.errors.UniqueViolation: duplicate key value violates unique constraint "
        '"payment_events_event_id_key"',
        'psycopg.OperationalError: connection to server at "payments-db.prod.internal" failed: '
        "Connection refused",
        "503 Service Unavailable returned to the provider for event evt_{hex}",
        "asyncio.TimeoutError in mark_order_paid()",
    ),
    edits=(
        (
            "payments/events/store.py",
            "turn EventStore.record() into INSERT ... ON CONFLICT (event_id) DO NOTHING",
        ),
        (
            "payments/webhooks/handler.py",
            "store the raw event, enqueue the processing and return 200",
        ),
        (
            "payments/retry.py",
            "add exponential backoff with jitter, capped at {p_attempts} attempts",
        ),
        ("payments/webhooks/verify.py", "use hmac.compare_digest() for the signature check"),
        ("deploy/payments-webhooks.yaml", "add a consumer deployment for the processing queue"),
    ),
    reqs=(
        "that a redelivered event is ignored without an error",
        "that events survive a database outage of a few minutes",
        "that an event lands in webhook_dead_letters after the last attempt",
        "that orders are marked paid exactly once",
    ),
    risks=(
        "processing events out of order when a refund arrives before its payment",
        "the queue growing without bound during a long outage",
        "double fulfilment if the idempotency key is wrong",
    ),
    questions=(
        "whether the provider guarantees unique event ids across accounts",
        "how fast finance needs to see payments in the ledger",
        "whether refunds arrive through the same endpoint",
    ),
    commands=(
        (
            "pytest",
            "pytest tests/payments -q",
            ("{passed} passed, {failed} failed in {secs}s", "{passed} passed in {secs}s"),
        ),
        (
            "bash",
            "docker compose stop postgres && sleep 30 && docker compose start postgres",
            ("the consumer logged {count} retries and recovered",),
        ),
        (
            "bash",
            "python scripts/replay_events.py --from fixtures/provider_events.jsonl --twice",
            ("{count} events replayed, no duplicates in payment_events",),
        ),
        (
            "psql",
            'psql -h payments-db.prod.internal -c "select count(*) from orders where status = '
            "'pending' and paid_at_provider is not null\"",
            ("returned {count}",),
        ),
        (
            "bash",
            "rabbitmqctl list_queues name messages | grep payments",
            ("payments.process holds {count} messages",),
        ),
        (
            "git",
            "git log --oneline -4 -- payments/webhooks/handler.py",
            ("last touched when the signature check was added",),
        ),
        ("bash", "grep -rn schedule_retry payments/", ("{n} call sites, all in the refund flow",)),
    ),
    metrics=(
        _Metric("number of webhook events lost per database outage", "", (3, 40), (0, 0)),
        _Metric("p95 response time to the provider", " ms", (900, 2800), (35, 90)),
        _Metric(
            "share of deliveries answered with 5xx during a 30-second database outage",
            "%",
            (40, 95),
            (0, 2),
        ),
    ),
    sql=(
        "payments-db.prod.internal",
        "select event_id, type, attempts, last_error from payment_events where status = 'failed' "
        "order by received_at desc limit 3;",
        (
            ("event_id", "evt"),
            ("type", "choice:payment.succeeded/payment.refunded/charge.updated"),
            ("attempts", "small"),
            ("last_error", "choice:db timeout/unique violation/connection refused"),
        ),
    ),
    trace=(
        ("payments/webhooks/handler.py", "handle_webhook", "await EventStore.record(event)"),
        ("payments/events/store.py", "record", "await cur.execute(INSERT_EVENT, event.as_row())"),
        (
            ".venv/lib/python3.11/site-packages/psycopg/cursor_async.py",
            "execute",
            "raise ex.with_traceback(None)",
        ),
    ),
    trace_error="psycopg.errors.UniqueViolation: duplicate key value violates unique constraint "
    '"payment_events_event_id_key"',
    diffs=(
        (
            "payments/events/store.py",
            "INSERT_EVENT = (",
            (
                '-    "INSERT INTO payment_events (event_id, type, payload) VALUES (%s, %s, %s)"',
                '+    "INSERT INTO payment_events (event_id, type, payload) VALUES (%s, %s, %s) "',
                '+    "ON CONFLICT (event_id) DO NOTHING"',
                " )",
            ),
        ),
        (
            "payments/webhooks/handler.py",
            "async def handle_webhook(request):",
            (
                "     event = await verify_signature(request)",
                "-    await mark_order_paid(event)",
                "+    await EventStore.record(event)",
                '+    await queue.publish("payments.process", event.id)',
                "     return Response(status_code=200)",
            ),
        ),
    ),
    log_cmd="kubectl logs deploy/payments-webhooks --since=30m | grep evt_ | tail -n 4",
    log_lines=(
        "{ts} INFO webhook received evt_{hex} type=payment.succeeded",
        "{ts} ERROR webhook db error evt_{hex} OperationalError, returning 500",
        "{ts} INFO retry evt_{hex} attempt={n} delay={secs}s",
        "{ts} WARN webhook duplicate evt_{hex} ignored",
    ),
    outputs=(
        (
            "bash",
            "$ rabbitmqctl list_queues name messages consumers\nTimeout: 60.0 seconds ...\n"
            "Listing queues for vhost / ...\nname\tmessages\tconsumers\n"
            "payments.process\t{count}\t{n}\npayments.dead_letter\t{n2}\t1",
        ),
    ),
    critical=(
        "A payment event must never mark an order as paid twice, even when the provider "
        "redelivers it.",
        "The endpoint must answer the provider within {p_ack} seconds, otherwise the provider "
        "counts the delivery as failed.",
        "Signature verification must happen before anything is stored, and it must not be relaxed "
        "for retries.",
        "Do not change the webhook URL, because re-registering it with the provider takes two "
        "weeks.",
    ),
    exec_critical=(
        "Never replay production webhook events against staging; the payloads contain card "
        "fingerprints.",
    ),
    soft=(
        "The retry policy may use at most {p_attempts} attempts before an event goes to the "
        "dead-letter queue.",
        "Finance requires the change to be live by {day}, ahead of the month-end settlement.",
    ),
    details=(
        _Detail(
            "planning",
            "The provider's webhook signing secret was last rotated on {answer}.",
            "When was the webhook signing secret last rotated?",
            lambda f: (f.ctx.base_date - timedelta(days=f.rng.randint(40, 200))).isoformat(),
        ),
        _Detail(
            "execution",
            "The new dead-letter queue is named {answer}.",
            "What is the new dead-letter queue called?",
            lambda f: f.rng.choice(
                ("payments.webhooks.dlq", "pay-webhook-deadletter", "payments.dead_letter.v2")
            ),
        ),
        _Detail(
            "verification",
            "The database outage in the staging drill lasted {answer} seconds.",
            "How long, in seconds, was the database outage in the staging drill?",
            lambda f: str(f.rng.randint(120, 600)),
        ),
    ),
)

_DOMAINS: tuple[_Domain, ...] = (
    _CSV_EXPORT,
    _LOGIN_FLAKE,
    _VAT_ROUNDING,
    _DASHBOARD_SQL,
    _WORKER_LEAK,
    _INI_TO_YAML,
    _RATE_LIMIT,
    _DJANGO_UPGRADE,
    _NIGHTLY_ETL,
    _WEBHOOK_RETRIES,
)


# ---------------------------------------------------------------------------------------------
# Multi-line tool output, as an agent pastes it into memory.
# ---------------------------------------------------------------------------------------------

ToolOutput = Callable[[_Fill], tuple[str, str]]

_GIT_MESSAGES = (
    "Refactor {func} for readability",
    "Add debug logging around {func}",
    "Bump pinned dependencies",
    "Fix typo in a docstring of {func2}",
    "Handle empty input in {func}",
    "Tidy imports in {file}",
    "Split {file2} into smaller helpers",
    "Make {test} less dependent on wall-clock time",
)


def _out_pytest(f: _Fill, clean: bool = False) -> tuple[str, str]:
    domain, r = f.ctx.domain, f.rng
    folder = r.choice(domain.test_files).rsplit("/", 1)[0]
    passed = r.randint(f.ctx.suite // 6, f.ctx.suite // 2)
    failed, skipped = 0 if clean else r.randint(1, 3), r.randint(0, 9)
    shown = min(passed + failed + skipped, 120)
    cells = ["."] * shown
    for mark, times in (("F", failed), ("s", min(skipped, 4))):
        for _ in range(times):
            cells[r.randrange(shown)] = mark
    lines = [f"$ pytest {folder} -q"]
    for start in range(0, shown, 60):
        chunk = "".join(cells[start : start + 60])
        end = start + len(chunk)
        lines.append(f"{chunk:<60} [{100 if end >= shown else round(100 * end / shown):3d}%]")
    if failed:
        lines.append("=" * 10 + " short test summary info " + "=" * 10)
        for index in r.sample(range(len(domain.tests)), k=failed):
            error = f(r.choice(domain.errors))
            error = error if len(error) <= 70 else error[:67] + "..."
            home = domain.test_files[index % len(domain.test_files)]
            lines.append(f"FAILED {home}::{domain.tests[index]} - {error}")
    parts = [f"{failed} failed"] if failed else []
    parts.append(f"{passed} passed")
    if skipped:
        parts.append(f"{skipped} skipped")
    lines.append(f"{', '.join(parts)} in {r.uniform(3.0, 260.0):.2f}s")
    return "pytest", "\n".join(lines)


def _out_traceback(f: _Fill) -> tuple[str, str]:
    domain, r = f.ctx.domain, f.rng
    lead = r.choice(("", "stderr from the last run:", "Traceback from the CI log:"))
    lines = [lead] if lead else []
    lines.append("Traceback (most recent call last):")
    for path, func, code in domain.trace:
        lines.append(f'  File "{f(path)}", line {r.randint(20, 480)}, in {func}')
        lines.append(f"    {f(code)}")
    lines.append(f(domain.trace_error))
    return "bash", "\n".join(lines)


def _cell(f: _Fill, kind: str) -> str:
    r = f.rng
    if kind.startswith("choice:"):
        return r.choice(kind.removeprefix("choice:").split("/"))
    if kind in ("date", "ts"):
        day = (f.ctx.base_date - timedelta(days=r.randint(0, 30))).isoformat()
        if kind == "date":
            return day
        return f"{day} {r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}+00"
    makers: dict[str, Callable[[], str]] = {
        "id": lambda: str(r.randint(1000, 99_999)),
        "int": lambda: str(r.randint(2, 5000)),
        "big": lambda: str(r.randint(10_000, 5_000_000)),
        "money": lambda: f"{r.uniform(10.0, 9000.0):.2f}",
        "evt": lambda: "evt_" + _rh(12)(r),
        "small": lambda: str(r.randint(1, 9)),
    }
    return makers[kind]()


def _out_sql(f: _Fill) -> tuple[str, str]:
    host, query, columns = f.ctx.domain.sql
    rows = [[_cell(f, kind) for _, kind in columns] for _ in range(f.rng.randint(3, 4))]
    widths = [max(len(name), *(len(row[i]) for row in rows)) for i, (name, _) in enumerate(columns)]
    numeric = [kind in ("id", "int", "big", "money", "small") for _, kind in columns]
    lines = [
        f'$ psql -h {f(host)} -c "{query}"',
        " " + " | ".join(name.center(w) for (name, _), w in zip(columns, widths, strict=True)),
        "-" + "-+-".join("-" * w for w in widths) + "-",
    ]
    for row in rows:
        cells = zip(row, widths, numeric, strict=True)
        lines.append(" " + " | ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in cells))
    lines.append(f"({len(rows)} rows)")
    return "psql", "\n".join(lines)


def _out_diff(f: _Fill) -> tuple[str, str]:
    path, header, body = f.rng.choice(f.ctx.domain.diffs)
    lines = [f(line) for line in body]
    old = sum(1 for line in lines if not line.startswith("+"))
    new = sum(1 for line in lines if not line.startswith("-"))
    context = f" {header}" if header else ""
    if old == 0:
        head = [f"$ git diff --staged {path}", "--- /dev/null", f"+++ b/{path}"]
        hunk = f"@@ -0,0 +1,{new} @@"
    else:
        start = f.rng.randint(12, 240)
        head = [f"$ git diff {path}", f"--- a/{path}", f"+++ b/{path}"]
        hunk = f"@@ -{start},{old} +{start},{new} @@{context}"
    return "git", "\n".join([*head, hunk, *lines])


def _out_log(f: _Fill) -> tuple[str, str]:
    domain, r = f.ctx.domain, f.rng
    keep = min(len(domain.log_lines), r.randint(3, 4))
    chosen = sorted(r.sample(range(len(domain.log_lines)), k=keep))
    seconds = r.randint(0, 20 * 3600)
    lines = [f"$ {f(domain.log_cmd)}"]
    for index in chosen:
        seconds += r.randint(1, 400)
        hh, rest = divmod(seconds, 3600)
        stamp = f"{f.ctx.base_date.isoformat()}T{hh:02d}:{rest // 60:02d}:{rest % 60:02d}Z"
        lines.append(f(domain.log_lines[index].replace("{ts}", stamp)))
    return "bash", "\n".join(lines)


def _out_git_log(f: _Fill) -> tuple[str, str]:
    r = f.rng
    path = r.choice(f.ctx.domain.files)
    messages = r.sample(_GIT_MESSAGES, k=r.randint(3, 4))
    lines = [f"$ git log --oneline -{len(messages)} -- {path}"]
    lines.extend(f"{_rh(7)(r)} {f(message)}" for message in messages)
    return "git", "\n".join(lines)


def _out_domain(f: _Fill) -> tuple[str, str]:
    tool, template = f.rng.choice(f.ctx.domain.outputs)
    return tool, f(template)


_EXECUTION_OUTPUTS: tuple[ToolOutput, ...] = (
    _out_pytest,
    _out_traceback,
    _out_sql,
    _out_diff,
    _out_log,
    _out_git_log,
    _out_domain,
)
_VERIFICATION_OUTPUTS: tuple[ToolOutput, ...] = (lambda f: _out_pytest(f, clean=True), _out_log)


# ---------------------------------------------------------------------------------------------
# Stage assembly.
# ---------------------------------------------------------------------------------------------


def _tokens(text: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(text.lower()))


def _has_keyword(text: str) -> bool:
    return any(pattern.search(text) for pattern in _KEYWORD_RE.values())


class _StageBuilder:
    def __init__(self, ctx: _Ctx, stage: str) -> None:
        self.ctx = ctx
        self.rng = ctx.rng
        self.stage = stage
        self.templates = _TEMPLATES[stage]
        self.memories: list[TraceMemory] = []
        self.kinds: list[str] = []
        self.tokens: list[frozenset[str]] = []
        self.uses: dict[str, int] = {}
        self.usage: dict[str, dict[int, int]] = {}
        self.output_turn = 0

    def fill(self) -> _Fill:
        return _Fill(self.ctx, self.usage)

    # -- bookkeeping ----------------------------------------------------------------------------

    def insert(self, position: int, memory: TraceMemory, kind: str) -> None:
        self.memories.insert(position, memory)
        self.kinds.insert(position, kind)
        self.tokens.insert(position, _tokens(memory.content))

    def append(self, memory: TraceMemory, kind: str) -> None:
        self.insert(len(self.memories), memory, kind)

    def similarity(self, text: str, skip: int = -1) -> float:
        """Highest similarity of ``text`` to the stage's memories (except the one at ``skip``)."""
        mine = _tokens(text)
        best = 0.0
        for index, other in enumerate(self.tokens):
            union = len(mine | other)
            if union and index != skip:
                best = max(best, len(mine & other) / union)
        return best

    def _usable(self) -> list[tuple[int, str]]:
        return [
            (p, t) for p, t in self.templates if not (t.startswith("^") and self.uses.get(t, 0))
        ] or list(self.templates)

    def _least_used(self, phase: int) -> str:
        """A template used least often so far in this stage, preferring the current phase.

        Templates marked ``^`` say something that happens once in a stage (the estimate, the
        sign-off) and are not repeated while any other template is left.
        """
        usable = self._usable()
        low = min(self.uses.get(t, 0) for _, t in usable)
        fresh = [(p, t) for p, t in usable if self.uses.get(t, 0) == low]
        same = [t for p, t in fresh if p == phase]
        return self.rng.choice(same if same and self.rng.random() < 0.8 else [t for _, t in fresh])

    def _follow(self, template: str) -> str | None:
        options = [f for f in _FOLLOW[self.stage] if self.uses.get(f, 0) < 2]
        if self.stage == "execution" and any(slot in template for slot in _OBSERVING):
            options += [r for r in _REACTIONS if self.uses.get(r, 0) < 2]
        if not options:
            return None
        low = min(self.uses.get(f, 0) for f in options)
        return self.rng.choice([f for f in options if self.uses.get(f, 0) == low])

    # -- ordinary memories ----------------------------------------------------------------------

    def text(self, phase: int, only: Sequence[str] = ()) -> TraceMemory:
        rng = self.rng
        best: tuple[float, str, str, str | None] | None = None
        for attempt in range(40):
            if only:
                template = rng.choice(only)
            elif attempt < 15:
                template = self._least_used(phase)
            else:  # the least used templates keep colliding: take any usable one
                template = rng.choice([t for _, t in self._usable()])
            fill = self.fill()
            content = fill(template)
            follow = self._follow(template) if rng.random() < 0.22 else None
            if follow is not None:
                content = f"{content}{'' if content[-1] in '.!?' else '.'} {fill(follow)}"
            score = self.similarity(content)
            if not 7 <= len(content.split()) <= 70:
                score += 1.0
            if best is None or score < best[0]:
                best = (score, content, template, follow)
            if score < _SIMILAR_TARGET:
                break
        assert best is not None
        for used in best[2:]:
            if used is not None:
                self.uses[used] = self.uses.get(used, 0) + 1
        return TraceMemory(best[1])

    def tool_call(self) -> TraceMemory:
        best: tuple[float, TraceMemory] | None = None
        for _ in range(20):
            fill = self.fill()
            content = fill(self.rng.choice(_TOOL_CALLS))
            memory = TraceMemory(content, metadata={"kind": "tool_call", "tool": fill.get("tool")})
            score = self.similarity(content)
            if best is None or score < best[0]:
                best = (score, memory)
            if score < _SIMILAR_TARGET:
                break
        assert best is not None
        return best[1]

    def tool_result(self, outputs: Sequence[ToolOutput]) -> TraceMemory:
        best: tuple[float, TraceMemory] | None = None
        for _ in range(2 * len(outputs)):
            make = outputs[self.output_turn % len(outputs)]
            self.output_turn += 1
            tool, content = make(self.fill())
            memory = TraceMemory(content, metadata={"kind": "tool_result", "tool": tool})
            score = self.similarity(content)
            if best is None or score < best[0]:
                best = (score, memory)
            if score < _SIMILAR_TARGET:
                break
        assert best is not None
        return best[1]

    def steps(self) -> list[TraceMemory]:
        rng = self.rng
        groups = list(_STEP_GROUPS)
        if rng.random() < 0.4:
            groups.pop()
        if rng.random() < 0.5:
            groups.pop(1)
        fill = self.fill()
        memories = []
        for number, group in enumerate(groups, 1):
            if number == 1:
                frame = rng.choice(_STEP_FIRST)
            elif number == len(groups):
                frame = rng.choice(_STEP_LAST)
            else:
                frame = rng.choice(_STEP_MIDDLE)
            action = fill(rng.choice(group))
            memories.append(TraceMemory(frame.replace("{a}", action).replace("{k}", str(number))))
        return memories

    def dedupe(self, outputs: Sequence[ToolOutput]) -> None:
        """Regenerate ordinary memories that ended up near-duplicates of another one."""
        for index, kind in enumerate(self.kinds):
            if kind not in ("text", "call", "result"):
                continue
            if self.similarity(self.memories[index].content, skip=index) < _NEAR_DUPLICATE:
                continue
            del self.memories[index], self.kinds[index], self.tokens[index]
            if kind == "result":
                memory = self.tool_result(outputs)
            elif kind == "call":
                memory = self.tool_call()
            else:
                memory = self.text(min(2, 3 * index // len(self.kinds)))
            self.insert(index, memory, kind)

    def ensure_keywords(self) -> None:
        """Swap ordinary notes for ones carrying any stage keyword that did not come up."""
        for word, pattern in _KEYWORD_RE.items():
            if any(pattern.search(memory.content) for memory in self.memories):
                continue
            candidates = [t for _, t in self.templates if pattern.search(t)]
            spare = [
                i
                for i, kind in enumerate(self.kinds)
                if kind == "text" and not _has_keyword(self.memories[i].content)
            ]
            if not candidates or not spare:
                raise RuntimeError(f"cannot place keyword {word!r} in {self.stage}")
            index = self.rng.choice(spare)
            del self.memories[index], self.kinds[index], self.tokens[index]
            for _ in range(30):
                memory = self.text(0, candidates)
                if pattern.search(memory.content):
                    break
            self.insert(index, memory, "text")

    # -- planted constraints and details --------------------------------------------------------

    def flagged(self) -> list[str]:
        domain, rng = self.ctx.domain, self.rng
        if self.stage == "planning":
            chosen = rng.sample(domain.critical, k=rng.randint(2, 3))
        elif self.stage == "execution":
            chosen = [rng.choice(domain.exec_critical)]
        else:
            chosen = []
        return [_Fill(self.ctx)(sentence) for sentence in chosen]

    def soft(self) -> tuple[TraceMemory, str]:
        ctx, rng = self.ctx, self.rng
        own = [s for s in ctx.domain.soft if s not in ctx.used_soft]
        generic = [s for s in _SOFT_GENERIC if s not in ctx.used_soft]
        raw = rng.choice(own if own and rng.random() < 0.5 else generic)
        ctx.used_soft.add(raw)
        fill = self.fill()
        sentence = fill(raw)
        lead = fill(rng.choice(_SOFT_LEADS[self.stage]))
        shape = rng.random()
        if shape < 0.45:
            content = f"{lead} {sentence}"
        elif shape < 0.8:
            content = f"{lead} {sentence} {rng.choice(_SOFT_TAILS)}"
        else:
            content = f"{sentence} {rng.choice(_SOFT_TAILS)}"
        return TraceMemory(content), sentence

    def details(self, count: int) -> list[PlantedDetail]:
        rng = self.rng
        own = [d for d in self.ctx.domain.details if d.stage == self.stage]
        generic = [d for d in _GENERIC_DETAILS if d.stage == self.stage]
        rng.shuffle(own)
        rng.shuffle(generic)
        planted: list[PlantedDetail] = []
        for spec in (*own, *generic):
            if len(planted) == count:
                break
            made = self._detail(spec, planted)
            if made is not None:
                memory, detail = made
                self.insert(rng.randint(0, len(self.memories)), memory, "detail")
                planted.append(detail)
        if len(planted) < 3:
            raise RuntimeError(f"only {len(planted)} details could be planted in {self.stage}")
        return planted

    def _detail(
        self, spec: _Detail, planted: Sequence[PlantedDetail]
    ) -> tuple[TraceMemory, PlantedDetail] | None:
        for _ in range(10):
            fill = self.fill()
            answer = spec.answer(fill)
            fill.values["answer"] = answer
            content, question = fill(spec.text), fill(spec.question)
            if len(answer) < 3 or answer not in content:
                continue
            if any(answer in memory.content for memory in self.memories):
                continue
            if any(detail.answer in content for detail in planted):
                continue
            if self.similarity(content) >= _NEAR_DUPLICATE:
                continue
            return TraceMemory(content), PlantedDetail(question, answer)
        return None


def _build_stage(ctx: _Ctx, stage: str, bounds: tuple[int, int]) -> StageTrace:
    rng = ctx.rng
    builder = _StageBuilder(ctx, stage)
    total = rng.randint(*bounds)
    flagged = builder.flagged()
    n_soft, n_details = rng.randint(1, 2), rng.randint(3, 5)
    steps = builder.steps() if stage == "planning" else []
    n_plain = total - len(flagged) - n_soft - n_details - len(steps)

    kinds = ["text"] * n_plain
    if stage == "execution":
        n_results = max(1, round(total * rng.uniform(0.08, 0.12)))
        n_calls = rng.randint(2, 4)
    elif stage == "verification":
        n_results, n_calls = rng.randint(1, 2), 0
    else:
        n_results, n_calls = 0, 0
    for order, position in enumerate(rng.sample(range(2, n_plain), k=n_results + n_calls)):
        kinds[position] = "result" if order < n_results else "call"
    outputs = _EXECUTION_OUTPUTS if stage == "execution" else _VERIFICATION_OUTPUTS
    outputs = tuple(rng.sample(outputs, k=len(outputs)))
    for index, kind in enumerate(kinds):
        if kind == "result":
            builder.append(builder.tool_result(outputs), kind)
        elif kind == "call":
            builder.append(builder.tool_call(), kind)
        else:
            builder.append(builder.text(min(2, 3 * index // n_plain)), kind)

    if steps:
        low, high = n_plain // 4, (3 * n_plain) // 4
        for offset, position in enumerate(sorted(rng.sample(range(low, high), k=len(steps)))):
            builder.insert(position + offset, steps[offset], "step")
    builder.dedupe(outputs)
    builder.ensure_keywords()

    planted: dict[int, str] = {}
    for sentence in flagged:
        memory = TraceMemory(sentence, critical=True)
        limit = len(builder.memories) * 2 // 3 if stage == "planning" else len(builder.memories)
        builder.insert(rng.randint(0, limit), memory, "flagged")
        planted[id(memory)] = sentence
    for _ in range(n_soft):
        memory, sentence = builder.soft()
        builder.insert(rng.randint(0, len(builder.memories)), memory, "soft")
        planted[id(memory)] = sentence
    details = builder.details(n_details)
    constraints = tuple(planted[id(m)] for m in builder.memories if id(m) in planted)
    return StageTrace(stage, tuple(builder.memories), constraints, tuple(details))


def _context(domain: _Domain, rng: random.Random) -> _Ctx:
    params = {name: make(rng) for name, make in domain.params.items()}
    cause, fix = rng.choice(domain.causes)
    wrong = rng.choice(domain.wrongs)
    pools: dict[str, tuple[str, ...]] = {
        "component": domain.components,
        "file": domain.files,
        "py_file": tuple(f for f in domain.files if f.endswith(".py")),
        "test_file": domain.test_files,
        "test": domain.tests,
        "func": domain.funcs,
        "table": domain.tables,
        "host": domain.hosts,
        "symptom": domain.symptoms,
        "finding": tuple(c for c, _ in domain.causes if c != cause),
        "other_wrong": tuple(w for w in domain.wrongs if w != wrong),
        "alt_fix": domain.alt_fixes,
        "error": domain.errors,
        "req": domain.reqs,
        "risk": domain.risks,
        "question": domain.questions,
        "remark": _REMARKS,
    }
    metrics = tuple((m, rng.uniform(*m.before), rng.uniform(*m.after)) for m in domain.metrics)
    return _Ctx(
        rng=rng,
        domain=domain,
        params=params,
        pools=pools,
        metrics=metrics,
        cause=cause,
        fix=fix,
        wrong=wrong,
        reviewer=rng.choice(domain.people)[0],
        estimate=str(rng.randint(3, 9)),
        suite=rng.randint(240, 1400),
        base_date=date(2024, 2, 1) + timedelta(days=rng.randint(0, 660)),
        zone=rng.choice(("eu1", "eu2", "us1", "us3")),
    )


def _validate(trace: TaskTrace) -> None:
    """The guarantees the benchmarks rely on; a violation is a bug in this module."""
    if tuple(stage.stage_type for stage in trace.stages) != STAGES:
        raise RuntimeError(f"{trace.task_id}: stages out of order")
    for stage in trace.stages:
        where = f"{trace.task_id}/{stage.stage_type}"
        texts = [memory.content for memory in stage.memories]
        for memory in stage.memories:
            if memory.critical and memory.content not in stage.constraints:
                raise RuntimeError(f"{where}: flagged memory missing from constraints")
        for sentence in stage.constraints:
            if not any(sentence in text for text in texts):
                raise RuntimeError(f"{where}: constraint not found: {sentence}")
        for detail in stage.details:
            hits = sum(detail.answer in text for text in texts)
            if hits != 1 or len(detail.answer) < 3:
                raise RuntimeError(f"{where}: detail {detail.answer!r} found {hits} times")
        for word, pattern in _KEYWORD_RE.items():
            if not any(pattern.search(text) for text in texts):
                raise RuntimeError(f"{where}: keyword {word!r} missing")


def generate_traces(count: int, seed: int = 0, *, size: str = "mixed") -> list[TaskTrace]:
    """``count`` traces; the same (count, seed, size) always gives the same traces.

    Domains rotate in seeded shuffled rounds, so any ten consecutive traces cover all ten.
    Trace ``i`` depends only on (seed, i, size), so a longer list extends a shorter one.
    """
    if size not in _SIZES:
        raise ValueError(f"size must be one of {sorted(_SIZES)}, not {size!r}")
    if count < 0:
        raise ValueError("count must not be negative")
    order_rng = random.Random(seed)
    order: list[_Domain] = []
    traces = []
    for index in range(count):
        if not order:
            order = list(_DOMAINS)
            order_rng.shuffle(order)
        domain = order.pop()
        rng = random.Random(f"agent-traces/{seed}/{index}/{size}")
        ctx = _context(domain, rng)
        stages = tuple(_build_stage(ctx, stage, _SIZES[size][stage]) for stage in STAGES)
        trace = TaskTrace(
            f"{domain.slug}-{seed}-{index:04d}", domain.key, ctx.sub(domain.goal), stages
        )
        _validate(trace)
        traces.append(trace)
    return traces


def _print_trace(trace: TaskTrace) -> None:
    print(f"task {trace.task_id}  (domain {trace.domain})")
    print(f"goal: {trace.goal}")
    for stage in trace.stages:
        print(f"\n===== {stage.stage_type}: {len(stage.memories)} memories =====")
        for number, memory in enumerate(stage.memories, 1):
            flag = "[CRITICAL] " if memory.critical else ""
            meta = f"   {memory.metadata}" if memory.metadata else ""
            body = memory.content.replace("\n", "\n       | ")
            print(f"{number:4d}. {flag}{body}{meta}")
        print("  constraints:")
        for sentence in stage.constraints:
            print(f"    - {sentence}")
        print("  details:")
        for detail in stage.details:
            print(f"    - {detail.question} -> {detail.answer}")
    print(f"\n{'stage':<14}{'memories':>9}{'critical':>9}{'constr.':>9}{'details':>9}{'chars':>9}")
    for stage in trace.stages:
        critical = sum(memory.critical for memory in stage.memories)
        chars = sum(len(memory.content) for memory in stage.memories)
        print(
            f"{stage.stage_type:<14}{len(stage.memories):>9}{critical:>9}"
            f"{len(stage.constraints):>9}{len(stage.details):>9}{chars:>9}"
        )


if __name__ == "__main__":
    _seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    _size = sys.argv[2] if len(sys.argv) > 2 else "mixed"
    _print_trace(generate_traces(1, _seed, size=_size)[0])
