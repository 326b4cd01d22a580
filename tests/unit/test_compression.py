"""ContextCompressor with the extractive engine: ratios, retention, the fallback ladder,
contradictions, task compression and the adaptive target. Real LoCoMo sessions (each session
treated as one stage) when ../shared/data is present."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentcore.adapters.compressors import ExtractiveEngine
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.domain.critical_facts import CriticalFact, FactKind
from agentcore.domain.errors import InvalidParams, InvalidState, ProviderError, Unauthorized
from agentcore.domain.fact_checks import missing_facts
from agentcore.domain.fact_text import terse
from agentcore.domain.usage import TokenUsage
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.compass.drafts import (
    Aggressiveness,
    CompressionItem,
    CompressionRequest,
    Draft,
    StageSummary,
    adaptive_target_ratio,
)

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo10.json"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def counter() -> BpeTokenCounter:
    return BpeTokenCounter()


@pytest.fixture
def compressor(counter: BpeTokenCounter) -> ContextCompressor:
    return ContextCompressor(ExtractiveEngine(counter), counter)


def _items(texts: Sequence[str], **meta: Any) -> list[CompressionItem]:
    return [
        CompressionItem(f"m{i}", text, created_at=T0 + timedelta(minutes=i), metadata=meta)
        for i, text in enumerate(texts)
    ]


# An execution stage of a coding agent: tool calls, outcomes, two rules and an error fixed.
AGENT_STAGE = [
    "Opened the repository and read the README to find how the billing service is built.",
    "The team lead said we must keep the public API of the invoices module unchanged.",
    "Ran the unit tests for the billing service; 212 passed and 3 failed in the tax module.",
    "The failing tests compute VAT for cross-border invoices and expect rounding to cents.",
    "Read tax/rates.py: the rate table is loaded once at import time from a YAML file.",
    "Tried to patch the rounding helper but the linter rejected a bare except clause.",
    "The CI pipeline failed with a TimeoutError while pulling the Postgres image.",
    "Retried the pipeline; it failed again with a TimeoutError on the same step.",
    "Fixed the timeouts by pinning the Postgres image to a local registry mirror.",
    "Rewrote the rounding helper with Decimal and quantize to two places, half up.",
    "All 215 unit tests pass now, including the three cross-border VAT cases.",
    "Never commit directly to the release branch; open a pull request for review instead.",
    "Lesson learned: load the tax rates lazily so tests can inject their own table.",
    "Wrote a short note in the pull request describing the rounding change and the mirror.",
    "The reviewer asked for one more test with a negative invoice amount; added it.",
    "Checked the coverage report; the tax module went from 71 percent to 88 percent.",
    "Updated the changelog entry for the billing service under the unreleased section.",
    "Pushed the branch and the pipeline finished green in about nine minutes.",
    "Asked the lead whether to backport the fix; the answer was to wait for QA first.",
    "Closed the two stale issues about VAT rounding that this change resolves.",
    "Noted that the staging environment still runs last week's build of billing.",
    "Left a reminder to rerun the smoke tests on staging after the next deploy.",
]


def _locomo_sessions() -> list[tuple[str, list[CompressionItem]]]:
    if not LOCOMO.exists():
        pytest.skip(f"{LOCOMO} is not available")
    sessions = []
    for conversation in json.loads(LOCOMO.read_text()):
        turns = conversation["conversation"]
        for name, session in turns.items():
            if name.startswith("session_") and isinstance(session, list):
                items = [
                    CompressionItem(
                        f"{conversation['sample_id']}/{t['dia_id']}",
                        t["text"],
                        created_at=T0 + timedelta(seconds=n),
                        metadata={"speaker": t["speaker"]},
                        stage_id=f"{conversation['sample_id']}/{name}",
                    )
                    for n, t in enumerate(session)
                ]
                sessions.append((f"{conversation['sample_id']}/{name}", items))
    return sessions[::4]  # a fixed sample across all ten conversations


async def test_locomo_sessions_compress_to_ten_to_one_keeping_critical_facts(
    compressor: ContextCompressor,
) -> None:
    results = [(name, await compressor.compress_stage(items)) for name, items in _locomo_sessions()]
    assert len(results) >= 50
    for name, result in results:
        assert result.passed, name
        assert result.retention >= 0.95, name
        assert result.contradictions == (), name
        if not result.fallback:
            assert 8 <= result.ratio <= 12, name
    in_band = sum(8 <= r.ratio <= 12 for _, r in results)
    assert in_band >= 0.9 * len(results)


async def test_summary_keeps_chronological_order_and_speakers(
    compressor: ContextCompressor,
) -> None:
    items = [
        CompressionItem(
            item.memory_id, item.content, created_at=item.created_at,
            metadata={"speaker": "lead" if n % 3 == 1 else "agent"},
        )
        for n, item in enumerate(_items(AGENT_STAGE))
    ]  # fmt: skip
    result = await compressor.compress_stage(list(reversed(items)))  # order comes from time
    lines = [line.split(": ", 1) for line in result.summary.splitlines()]
    positions = [AGENT_STAGE.index(_source_of(text)) for _, text in lines]
    assert positions == sorted(positions)
    assert [speaker for speaker, _ in lines] == [
        "lead" if n % 3 == 1 else "agent" for n in positions
    ]


def _source_of(line: str) -> str:
    """The memory a summary line comes from: a sentence, a cut of one, or a fact written
    without its articles."""
    first = line.split(". ")[0].rstrip(".…")[:25]
    return next(text for text in AGENT_STAGE if first in (text[:25], terse(text)[:25]))


async def test_agent_stage_keeps_rules_fix_and_reports_patterns(
    compressor: ContextCompressor,
) -> None:
    result = await compressor.compress_stage(_items(AGENT_STAGE))

    assert 8 <= result.ratio <= 12
    assert not result.fallback
    assert result.passed
    assert result.engine == "extractive"
    assert result.usage is None
    assert {fact.kind for fact in result.critical_facts} == {FactKind.CONSTRAINT}
    assert missing_facts([f.content for f in result.critical_facts], result.summary) == []
    # the fix of the timeouts is a key fact: preferred, and here it fits
    assert {fact.kind for fact in result.key_facts} >= {FactKind.ERROR_FIX}
    assert result.quality_metrics()["key_facts"] == len(result.key_facts)
    assert "Never commit directly to release branch" in result.summary  # articles dropped
    [pattern] = result.error_patterns
    assert pattern.signature == "TimeoutError"
    assert pattern.occurrences == 2
    assert pattern.memory_ids == ("m6", "m7")
    assert any("Lesson learned" in insight for insight in result.insights)
    assert result.input_tokens > 10 * result.output_tokens * 0.8


async def test_repetitive_log_lines_still_compress_to_the_target(
    compressor: ContextCompressor,
) -> None:
    """A loop's log: every line repeats the others but for its number. The distinct lines fit
    in a third of the budget; the variants fill the rest instead of a 30:1 summary."""
    lines = [f"Loaded batch {i} of the invoices; the totals matched the ledger." for i in range(30)]
    result = await compressor.compress_stage(_items(lines))
    assert 8 <= result.ratio <= 12
    assert result.passed
    assert len(set(result.summary.splitlines())) == len(result.summary.splitlines())


async def test_the_same_input_gives_the_same_summary(compressor: ContextCompressor) -> None:
    first = await compressor.compress_stage(_items(AGENT_STAGE))
    second = await compressor.compress_stage(_items(AGENT_STAGE))
    assert first.summary == second.summary


async def test_facts_that_do_not_fit_make_the_ratio_gentler(
    compressor: ContextCompressor,
) -> None:
    """Most of the stage is flagged facts: 10:1 cannot hold them, so the target is relaxed to
    what they need before the first draft, and the record says why."""
    facts = [
        f"Customer {name} must be invoiced in {currency} and never before day {day}."
        for name, currency, day in [
            ("Acme", "euros", 5), ("Globex", "dollars", 10), ("Initech", "pounds", 15),
            ("Umbrella", "yen", 20), ("Hooli", "francs", 25),
        ]
    ]  # fmt: skip
    chatter = [
        "We spent the morning reading the old billing scripts and their many comments.",
        "The scripts were written years ago and nobody remembers exactly why they work.",
    ] * 6
    items = _items(chatter) + [
        CompressionItem(f"f{i}", text, critical=True, created_at=T0 + timedelta(hours=1, minutes=i))
        for i, text in enumerate(facts)
    ]
    result = await compressor.compress_stage(items)

    assert result.retention == 1.0
    assert all(f in [c.content for c in result.critical_facts] for f in facts)  # verbatim
    assert result.passed
    assert result.target_ratio < 8
    assert result.ratio == pytest.approx(result.input_tokens / result.output_tokens)
    assert 0.8 * result.target_ratio <= result.ratio <= 1.2 * result.target_ratio
    [reason] = result.quality_metrics()["ratio_reasons"]
    assert reason.startswith("the 5 critical facts need ")
    assert f"relaxed to {result.target_ratio:.2f}:1" in reason


async def test_the_last_resort_keeps_every_fact_verbatim(counter: BpeTokenCounter) -> None:
    facts = [
        f"Rule {n}: deployments of service {n} must never run between {n}:00 and {n + 1}:00."
        for n in range(1, 13)
    ]
    items = _items(["Short note about the rollout plan for this quarter."] * 3) + [
        CompressionItem(f"f{n}", text, critical=True) for n, text in enumerate(facts)
    ]
    flipped = Draft("Deployments of service 1 must always run between 1:00 and 2:00.")
    engine = ScriptedEngine(flipped, flipped, flipped, ExtractiveEngine(counter))
    result = await ContextCompressor(engine, counter).compress_stage(items)

    assert [a.contradictions for a in result.attempts[:3]] == [1, 1, 1]
    last = result.attempts[-1]
    assert last.verbatim_facts
    assert last.passed
    assert len(result.attempts) == 4
    assert all(fact in result.summary for fact in facts)


class ScriptedEngine:
    """A compression engine that returns scripted drafts (or raises), recording requests."""

    def __init__(self, *script: Draft | Exception | ExtractiveEngine) -> None:
        self.script = list(script)
        self.requests: list[CompressionRequest] = []

    @property
    def name(self) -> str:
        return "llm:scripted"

    async def draft(self, request: CompressionRequest) -> Draft:
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ExtractiveEngine):
            return await step.draft(request)
        return step


async def _extractive_summary(counter: BpeTokenCounter, items: list[CompressionItem]) -> str:
    return (
        await ContextCompressor(ExtractiveEngine(counter), counter).compress_stage(items)
    ).summary


async def test_contradicting_drafts_are_rejected_and_the_extractive_ladder_takes_over(
    counter: BpeTokenCounter,
) -> None:
    items = _items(AGENT_STAGE)
    good = await _extractive_summary(counter, items)
    flipped = good.replace("Never commit directly", "Always commit directly")
    assert flipped != good
    usage = TokenUsage("m", 10, 5)
    engine = ScriptedEngine(Draft(flipped, usage=usage), Draft(flipped, usage=usage))
    compressor = ContextCompressor(engine, counter, fallback_engine=ExtractiveEngine(counter))

    result = await compressor.compress_stage(items)

    first, second, third = result.attempts
    assert first.contradictions == second.contradictions == 1
    assert not first.passed
    assert not second.passed
    assert [first.target_ratio, second.target_ratio] == pytest.approx([10, 10 / 1.5])
    assert third.engine == "extractive"
    assert third.passed
    assert third.target_ratio == 10
    assert result.fallback
    assert result.contradictions == ()
    assert result.summary == good
    assert result.usage == TokenUsage("m", 20, 10)
    assert result.quality_metrics()["replaced_by"] == "extractive"


async def test_a_draft_that_loses_a_fact_is_repaired_when_the_fact_fits(
    counter: BpeTokenCounter,
) -> None:
    items = _items(AGENT_STAGE)
    good = await _extractive_summary(counter, items)
    lossy = "\n".join(line for line in good.splitlines() if "release branch" not in line)
    engine = ScriptedEngine(Draft(lossy))
    compressor = ContextCompressor(engine, counter, fallback_engine=ExtractiveEngine(counter))

    result = await compressor.compress_stage(items)

    [attempt] = result.attempts
    assert (attempt.repaired, attempt.passed, attempt.retention) == (True, True, 1.0)
    assert result.summary.startswith(lossy)
    assert "release branch" in result.summary.removeprefix(lossy)
    metrics = result.quality_metrics()
    assert (metrics["repaired"], metrics["repaired_drafts"], metrics["replaced_by"]) == (
        True,
        1,
        None,
    )


async def test_a_draft_that_loses_a_fact_is_retried_with_the_fact_named(
    counter: BpeTokenCounter,
) -> None:
    items = _items(AGENT_STAGE)
    good = await _extractive_summary(counter, items)
    # Too long already: the lost fact cannot be appended within the ratio.
    lossy = "\n".join(
        [line for line in good.splitlines() if "release branch" not in line] + AGENT_STAGE[:8]
    )
    engine = ScriptedEngine(Draft(lossy), ExtractiveEngine(counter))
    compressor = ContextCompressor(engine, counter, fallback_engine=ExtractiveEngine(counter))

    result = await compressor.compress_stage(items)

    assert result.attempts[0].retention < 1
    assert not result.attempts[0].repaired
    [lost] = engine.requests[1].lost_facts
    assert "release branch" in lost
    assert result.engine == "llm:scripted"
    assert result.passed
    assert result.fallback
    assert len(result.attempts) == 2


async def test_a_provider_failure_falls_back_to_the_extractive_engine(
    counter: BpeTokenCounter,
) -> None:
    failure = ProviderError("down", model="gpt-4.1-mini", prompt_tokens=300, completion_tokens=60)
    engine = ScriptedEngine(failure)
    compressor = ContextCompressor(engine, counter, fallback_engine=ExtractiveEngine(counter))

    result = await compressor.compress_stage(_items(AGENT_STAGE))

    assert result.attempts[0].error == "PROVIDER_ERROR"
    assert result.engine == "extractive"
    assert result.passed
    assert result.fallback
    assert result.usage == TokenUsage("gpt-4.1-mini", 300, 60)
    assert len(engine.requests) == 1  # a failed provider is not asked again


async def test_provider_failure_without_fallback_and_auth_errors_are_raised(
    counter: BpeTokenCounter,
) -> None:
    alone = ContextCompressor(ScriptedEngine(ProviderError("down")), counter)
    with pytest.raises(ProviderError):
        await alone.compress_stage(_items(AGENT_STAGE))
    denied = ContextCompressor(
        ScriptedEngine(Unauthorized("bad key")), counter, fallback_engine=ExtractiveEngine(counter)
    )
    with pytest.raises(Unauthorized):
        await denied.compress_stage(_items(AGENT_STAGE))


async def test_memories_of_two_stages_are_refused(compressor: ContextCompressor) -> None:
    items = [
        CompressionItem("a", "Planned the work.", stage_id="s1"),
        CompressionItem("b", "Ran the tests.", stage_id="s2"),
    ]
    with pytest.raises(InvalidState, match="BR-8"):
        await compressor.compress_stage(items)


async def test_a_tiny_stage_is_kept_whole(compressor: ContextCompressor) -> None:
    items = _items(["Started the task.", "Never delete the audit log."], speaker="agent")
    result = await compressor.compress_stage(items)
    assert result.kept_whole
    assert result.passed
    assert not result.fallback
    assert result.summary == "Started the task.\nNever delete the audit log."  # one speaker
    assert result.ratio == pytest.approx(1, abs=0.5)
    assert result.retention == 1.0
    empty = await compressor.compress_stage([])
    assert empty.summary == ""
    assert empty.kept_whole


STAGES = [
    ("planning", [
        "The goal is to migrate the billing service from Python 3.9 to Python 3.12 without "
        "downtime. The customer requires that invoices issued before the migration render "
        "byte-for-byte identically afterwards. We mapped the dependencies: the PDF renderer, "
        "the tax tables, the Postgres driver and the message queue client. The renderer pins "
        "an old font library that has no wheel for 3.12, so it needs a replacement. The plan "
        "is to upgrade the libraries first, then switch the runtime behind a feature flag, "
        "then remove the flag after one week of clean operation in production.",
    ]),
    ("execution", [
        "Upgraded the Postgres driver and the queue client; both test suites pass on 3.12. "
        "Replaced the font library with its maintained fork and regenerated the golden PDFs. "
        "The team decided the old 3.9 workers must stay running until the flag is removed. "
        "Three rendering tests failed on kerning differences and were fixed by embedding the "
        "original font metrics. The CI matrix now runs both interpreters on every pull "
        "request, which doubled its duration to about eighteen minutes per run.",
    ]),
    ("reflection", [
        "The kerning failures came from the fork changing default metrics; the golden files "
        "caught it before release. Regenerating golden files hides such regressions, so the "
        "lesson is to diff them visually before accepting new ones. Doubling the CI time is "
        "acceptable for the migration period only; afterwards the 3.9 job goes away. The "
        "deadline is the end of the quarter, and the freeze starts two weeks before it.",
    ]),
    ("verification", [
        "Compared one thousand historical invoices rendered on both interpreters; all are "
        "identical byte for byte. Load tests on staging show the same latency within two "
        "percent. Never enable the flag for the enterprise tenants before their maintenance "
        "window on Sunday night. The rollback procedure was rehearsed twice and takes under "
        "five minutes, which meets the runbook's requirement.",
    ]),
]  # fmt: skip


async def test_task_compression_keeps_every_critical_constraint(
    compressor: ContextCompressor,
) -> None:
    stages = []
    for n, (stage_type, texts) in enumerate(STAGES):
        facts = tuple(
            CriticalFact(s.strip().rstrip(".") + ".", FactKind.CONSTRAINT, (f"raw{n}",))
            for s in texts[0].split(". ")
            if any(w in s for w in ("requires", "must", "Never", "deadline"))
        )
        stages.append(StageSummary(f"stage-{n}", stage_type, texts[0], facts))
    constraints = [f.content for s in stages for f in s.critical_facts]
    assert len(constraints) == 4

    result = await compressor.compress_task(stages)

    # every constraint is listed beside the brief, word for word; the text does not repeat it
    assert [f.content for f in result.critical_facts] == constraints
    assert result.retention == 1.0
    assert len(missing_facts(constraints, result.summary)) >= 3
    assert 4 <= result.ratio <= 6, result.attempts
    assert result.passed
    assert result.contradictions == ()
    assert result.summary.splitlines()[0].startswith(("planning: ", "execution: "))


def test_adaptive_target_ratio() -> None:
    base = 10.0
    assert adaptive_target_ratio(base, Aggressiveness()) == base
    assert adaptive_target_ratio(base, Aggressiveness(complexity=1)) == pytest.approx(6)
    assert adaptive_target_ratio(base, Aggressiveness(error_rate=1)) == pytest.approx(5)
    assert adaptive_target_ratio(base, Aggressiveness(budget_used=0.75)) == base
    assert adaptive_target_ratio(base, Aggressiveness(budget_used=1)) == pytest.approx(15)
    assert adaptive_target_ratio(base, Aggressiveness(recent_retention=0.85)) == pytest.approx(8)
    assert adaptive_target_ratio(base, Aggressiveness(recent_retention=0.99)) == base
    # Gentler as complexity or errors grow, more aggressive as the budget runs out.
    for name in ("complexity", "error_rate"):
        values = [adaptive_target_ratio(base, Aggressiveness(**{name: x / 10})) for x in range(11)]
        assert values == sorted(values, reverse=True)
    spent = [adaptive_target_ratio(base, Aggressiveness(budget_used=x / 10)) for x in range(11)]
    assert spent == sorted(spent)
    everything = Aggressiveness(complexity=1, error_rate=1, recent_retention=0)
    assert adaptive_target_ratio(base, everything) == 1.5  # the floor


def test_aggressiveness_signals_are_validated() -> None:
    with pytest.raises(InvalidParams):
        Aggressiveness(error_rate=1.5)


async def test_the_adapted_target_is_used(compressor: ContextCompressor) -> None:
    result = await compressor.compress_stage(
        _items(AGENT_STAGE), aggressiveness=Aggressiveness(complexity=0.5)
    )
    assert result.target_ratio == pytest.approx(8)
    assert 6.4 <= result.ratio <= 9.6
