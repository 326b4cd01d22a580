"""ContextCompressor (FR-2.4, FR-3): a finished stage's raw memories → a stage summary at about
10:1 in tokens; stage summaries → a task progress brief at about 5:1. An engine (extractive or
LLM) writes a draft; the compressor checks every draft and falls back when the check fails.

Quality check (FR-3.3), after every draft:
- critical-fact retention ≥ ``quality_threshold`` (1.0: every flagged sentence and constraint;
  the spec allows 0.95), as defined in ``agentcore.domain.fact_checks`` (content words,
  exact numbers, negations);
- the achieved ratio input/output tokens within the attempt's target ±``ratio_tolerance`` (20%);
- no contradiction of the source introduced (a negation flip or a changed number).

Fallback ladder (NFR-R5), each step recorded in ``attempts``: target, target/1.5, target/2, then
target/2 with every critical fact verbatim (whose ratio is not checked: keeping the facts wins).
With an LLM primary engine and an extractive ``fallback_engine``, the LLM gets the first two
steps (the second one is told which facts it lost); the extractive engine then runs the whole
ladder from the original target. A retryable provider failure counts as a failed step.

Tiny inputs: when ``input_tokens / target`` is under ``min_summary_tokens`` (20) a summary
would say nothing; the input is kept whole (ratio ≈ 1, ``kept_whole``) and passes. A task
brief's text is the exception: it stands beside the list of constraints, which already says
most of a constraint-heavy task, and is compressed however little of the summaries is left.

Tokens are counted with the injected ``TokenCounter`` (o200k). ``output_tokens`` counts the
summary only; insights, critical facts and error patterns are side lists (the critical facts
are inside the summary anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from agentcore.domain.critical_facts import (
    PRIORITY,
    CriticalFact,
    FactKind,
    Passage,
    extract_critical_facts,
    merge_duplicates,
)
from agentcore.domain.errors import AgentCoreError, InvalidParams, InvalidState
from agentcore.domain.fact_checks import (
    Contradiction,
    SourceIndex,
    beyond,
    missing_facts,
    retention,
)
from agentcore.domain.fact_text import terse
from agentcore.domain.usage import TokenUsage
from agentcore.services.compass.drafts import (
    Aggressiveness,
    Attempt,
    CompressionEngine,
    CompressionItem,
    CompressionRequest,
    CompressionResult,
    Draft,
    Level,
    StageSummary,
    adaptive_target_ratio,
    display_labels,
)
from agentcore.services.working_memory import TokenCounter

STAGE_TARGET_RATIO = 10.0
TASK_TARGET_RATIO = 5.0
FALLBACK_DIVISORS = (1.0, 1.5, 2.0)
FACT_SHARE = 0.9  # at most this share of a summary goes to critical facts when they crowd it


@dataclass(frozen=True, slots=True)
class _Step:
    engine: CompressionEngine
    divisor: float
    verbatim: bool = False


@dataclass(frozen=True, slots=True)
class _Checked:
    attempt: Attempt
    draft: Draft
    facts: tuple[CriticalFact, ...]
    output_tokens: int
    contradictions: tuple[Contradiction, ...]
    lost: tuple[str, ...]


# The facts every summary must keep (FR-2.4, FR-3.3): what was flagged critical and standing
# constraints. Decisions, error fixes and identifiers are key facts: preferred when they fit.
REQUIRED_KINDS = frozenset({FactKind.FLAGGED, FactKind.CONSTRAINT})


class ContextCompressor:
    """Stage and task compression with the quality check and fallback ladder (module doc).
    ``engine`` writes drafts; ``fallback_engine`` (the extractive one, when ``engine`` is an
    LLM) takes over after two failed LLM drafts or a retryable provider failure."""

    def __init__(
        self,
        engine: CompressionEngine,
        tokens: TokenCounter,
        *,
        fallback_engine: CompressionEngine | None = None,
        quality_threshold: float = 1.0,
        ratio_tolerance: float = 0.2,
        min_summary_tokens: int = 20,
    ) -> None:
        if not 0 <= quality_threshold <= 1 or not 0 < ratio_tolerance < 1:
            raise ValueError("quality_threshold must be in [0, 1] and ratio_tolerance in (0, 1)")
        if min_summary_tokens < 1:
            raise ValueError("min_summary_tokens must be at least 1")
        self._engine = engine
        self._fallback = fallback_engine
        self._tokens = tokens
        self._threshold = quality_threshold
        self._tolerance = ratio_tolerance
        self._min_summary_tokens = min_summary_tokens

    async def compress_stage(
        self,
        items: Sequence[CompressionItem],
        *,
        target_ratio: float = STAGE_TARGET_RATIO,
        aggressiveness: Aggressiveness | None = None,
    ) -> CompressionResult:
        """Raw memories of ONE stage → stage summary, critical facts, insights and error
        patterns. Items are put in ``created_at`` order. Raises ``InvalidState`` when the items
        carry more than one ``stage_id`` (BR-8: stage boundaries are never crossed)."""
        stage_ids = {item.stage_id for item in items if item.stage_id is not None}
        if len(stage_ids) > 1:
            raise InvalidState(
                "stage compression got memories of several stages; stages are compressed one "
                "at a time (BR-8)",
                stages=len(stage_ids),
            )
        ordered = sorted(
            items, key=lambda i: (i.created_at is not None, i.created_at or datetime.min)
        )
        passages = [Passage(i.memory_id, i.content, i.critical) for i in ordered]
        facts = extract_critical_facts(passages)
        required = [f for f in facts if f.kind in REQUIRED_KINDS]
        key = [f for f in facts if f.kind not in REQUIRED_KINDS]
        return await self._compress("stage", ordered, required, key, target_ratio, aggressiveness)

    async def compress_task(
        self,
        stages: Sequence[StageSummary],
        *,
        target_ratio: float = TASK_TARGET_RATIO,
        aggressiveness: Aggressiveness | None = None,
    ) -> CompressionResult:
        """Stage summaries, in task order → a progress brief: every critical constraint (the
        stages' constraint and flagged facts, and constraints in the summaries' text) listed
        word for word in ``critical_facts``, and a text at ``target_ratio`` over what the
        summaries say beyond them: the text spends its budget on progress, never on repeating
        the list, so the brief with its list is smaller than the summaries it stands for.
        ``retention`` is computed over the text and the list together."""
        carried = [
            CriticalFact(fact.content, fact.kind, fact.source_ids, (index, 10_000 + n))
            for index, stage in enumerate(stages)
            for n, fact in enumerate(stage.critical_facts)
            if fact.kind in REQUIRED_KINDS
        ]
        found = extract_critical_facts([Passage(s.stage_id, s.summary) for s in stages])
        facts = merge_facts(carried, [f for f in found if f.kind in REQUIRED_KINDS])
        listed = [f.content for f in facts]
        items = [
            CompressionItem(
                s.stage_id,
                rest,
                created_at=s.completed_at,
                metadata={"label": s.stage_type},
            )
            for s in stages
            if (rest := beyond(s.summary, listed))
        ]
        # What is left beside the list is compressed however little it is (a stage's text
        # under MIN_SUMMARY_TOKENS at the ratio is kept whole; here the list already is).
        result = await self._compress(
            "task", items, (), (), target_ratio, aggressiveness, listed=facts, whole_below=1
        )
        # The brief is its text and the constraints listed beside it, word for word.
        record = "\n".join([result.summary, *(f.content for f in facts)])
        kept = retention([f.content for f in facts], record)
        return replace(result, critical_facts=tuple(facts), retention=kept)

    async def _compress(
        self,
        level: Level,
        items: Sequence[CompressionItem],
        facts: Sequence[CriticalFact],
        key_facts: Sequence[CriticalFact],
        base_target: float,
        aggressiveness: Aggressiveness | None,
        *,
        listed: Sequence[CriticalFact] = (),
        whole_below: int | None = None,
    ) -> CompressionResult:
        if base_target <= 1:
            raise InvalidParams("the target ratio must be above 1", errors=["target_ratio"])
        target, reasons = base_target, []
        if aggressiveness is not None:
            target = adaptive_target_ratio(
                base_target, aggressiveness, quality_threshold=self._threshold
            )
            if abs(target - base_target) > 1e-9:
                reasons.append(
                    f"adapted from {base_target:g}:1 to {target:.2f}:1 ({aggressiveness})"
                )
        input_tokens = self._tokens.count("\n".join(i.content for i in items)) if items else 0
        smallest = self._min_summary_tokens if whole_below is None else whole_below
        if input_tokens / target < smallest:
            return self._kept_whole(items, facts, input_tokens, target)
        target = self._room_for_facts(facts, input_tokens, target, reasons)
        index = SourceIndex([*(i.content for i in items), *(f.content for f in facts)])
        results: list[_Checked] = []
        usage: list[TokenUsage] = []
        lost: tuple[str, ...] = ()
        failed_engine: CompressionEngine | None = None
        for step in self._ladder():
            if step.engine is failed_engine:
                continue
            request = self._request(level, items, facts, input_tokens, target, step, lost)
            request = replace(request, key_facts=key_facts, listed_facts=listed)
            try:
                draft = await step.engine.draft(request)
            except AgentCoreError as exc:
                if not exc.retryable or step.engine is self._fallback or self._fallback is None:
                    raise
                failed_engine = step.engine
                usage += _usage_of_failure(exc)
                results.append(self._failed(step, request, exc))
                continue
            if draft.usage is not None:
                usage.append(draft.usage)
            checked = self._check(draft, request, facts, index, input_tokens, step)
            if not checked.attempt.passed and checked.lost:
                checked = self._repaired(checked, request, facts, index, input_tokens, step)
            results.append(checked)
            if checked.attempt.passed:
                break
            lost = checked.lost
        result = self._result(results, input_tokens, target, usage, reasons)
        kept = retention([f.content for f in key_facts], result.summary)
        return replace(result, key_facts=tuple(key_facts), key_retention=kept)

    def _room_for_facts(
        self, facts: Sequence[CriticalFact], input_tokens: int, target: float, reasons: list[str]
    ) -> float:
        """``target``, or a gentler one whose budget holds every critical fact (compacted) with
        a tenth to spare, when the facts alone need more than ``target`` allows (its budget
        plus the tolerance)."""
        if not facts:
            return target
        needed = self._tokens.count("\n".join(terse(f.content) or f.content for f in facts))
        room = input_tokens / (target * (1 - self._tolerance))
        if needed <= room:
            return target
        gentler = max(input_tokens / (needed / FACT_SHARE), 1.0)
        reasons.append(
            f"the {len(facts)} critical facts need {needed} tokens, more than the {room:.0f} "
            f"that {target:.2f}:1 allows; relaxed to {gentler:.2f}:1 to keep them all"
        )
        return gentler

    def _repaired(
        self,
        checked: _Checked,
        request: CompressionRequest,
        facts: Sequence[CriticalFact],
        index: SourceIndex,
        input_tokens: int,
        step: _Step,
    ) -> _Checked:
        """The draft with the facts it lost appended, when that passes the check (an LLM that
        dropped a constraint costs no second call); else the draft as it was."""
        extra = "\n".join(terse(fact) or fact for fact in checked.lost)
        mended = replace(checked.draft, summary=f"{checked.draft.summary.rstrip()}\n{extra}")
        again = self._check(mended, request, facts, index, input_tokens, step)
        if not again.attempt.passed:
            return checked
        return replace(again, attempt=replace(again.attempt, repaired=True))

    def _ladder(self) -> list[_Step]:
        last = FALLBACK_DIVISORS[-1]
        if self._fallback is None:
            steps = [_Step(self._engine, d) for d in FALLBACK_DIVISORS]
            return [*steps, _Step(self._engine, last, verbatim=True)]
        steps = [_Step(self._engine, d) for d in FALLBACK_DIVISORS[:2]]
        steps += [_Step(self._fallback, d) for d in FALLBACK_DIVISORS]
        return [*steps, _Step(self._fallback, last, verbatim=True)]

    def _request(
        self,
        level: Level,
        items: Sequence[CompressionItem],
        facts: Sequence[CriticalFact],
        input_tokens: int,
        target: float,
        step: _Step,
        lost: tuple[str, ...],
    ) -> CompressionRequest:
        step_target = max(target / step.divisor, 1.0)
        return CompressionRequest(
            level=level,
            items=items,
            critical_facts=facts,
            target_ratio=step_target,
            budget_tokens=max(round(input_tokens / step_target), 1),
            min_tokens=max(int(input_tokens / (step_target * (1 + self._tolerance))) + 1, 1),
            max_tokens=max(int(input_tokens / (step_target * (1 - self._tolerance))), 1),
            verbatim_facts=step.verbatim,
            lost_facts=lost,
        )

    def _check(
        self,
        draft: Draft,
        request: CompressionRequest,
        facts: Sequence[CriticalFact],
        index: SourceIndex,
        input_tokens: int,
        step: _Step,
    ) -> _Checked:
        extra = [
            CriticalFact(text, FactKind.MODEL, (), (len(request.items), n))
            for n, text in enumerate(draft.critical_facts)
        ]
        all_facts = tuple(merge_facts(facts, extra))
        output_tokens = self._tokens.count(draft.summary)
        ratio = input_tokens / output_tokens if output_tokens else float(input_tokens)
        lost = missing_facts([f.content for f in all_facts], draft.summary)
        kept = 1 - len(lost) / len(all_facts) if all_facts else 1.0
        contradictions = tuple(index.contradictions(draft.summary))
        low = request.target_ratio * (1 - self._tolerance)
        high = request.target_ratio * (1 + self._tolerance)
        ratio_ok = request.verbatim_facts or (output_tokens > 0 and low <= ratio <= high)
        passed = kept >= self._threshold and not contradictions and ratio_ok
        attempt = Attempt(
            step.engine.name,
            request.target_ratio,
            ratio,
            kept,
            len(contradictions),
            ratio_ok,
            passed,
            request.verbatim_facts,
        )
        return _Checked(attempt, draft, all_facts, output_tokens, contradictions, tuple(lost))

    def _failed(self, step: _Step, request: CompressionRequest, exc: AgentCoreError) -> _Checked:
        attempt = Attempt(
            step.engine.name, request.target_ratio, 0.0, 0.0, 0, False, False,
            request.verbatim_facts, exc.code,
        )  # fmt: skip
        return _Checked(attempt, Draft(""), (), 0, (), ())

    def _result(
        self,
        results: list[_Checked],
        input_tokens: int,
        target: float,
        usage: list[TokenUsage],
        reasons: list[str],
    ) -> CompressionResult:
        drafted = [r for r in results if r.attempt.error is None]
        accepted = next((r for r in drafted if r.attempt.passed), drafted[-1])
        attempts = tuple(r.attempt for r in results)
        return CompressionResult(
            summary=accepted.draft.summary,
            insights=accepted.draft.insights,
            critical_facts=accepted.facts,
            error_patterns=accepted.draft.error_patterns,
            input_tokens=input_tokens,
            output_tokens=accepted.output_tokens,
            ratio=accepted.attempt.ratio,
            target_ratio=target,
            retention=accepted.attempt.retention,
            contradictions=accepted.contradictions,
            engine=accepted.attempt.engine,
            fallback=not attempts[0].passed,
            attempts=attempts,
            usage=_total_usage(usage),
            passed=accepted.attempt.passed,
            ratio_reasons=(*reasons, *_outcome_reasons(accepted, target, self._tolerance)),
        )

    def _kept_whole(
        self,
        items: Sequence[CompressionItem],
        facts: Sequence[CriticalFact],
        input_tokens: int,
        target: float,
    ) -> CompressionResult:
        summary = "\n".join(
            f"{label}: {i.content.strip()}" if label else i.content.strip()
            for i, label in zip(items, display_labels(items), strict=True)
        )
        output_tokens = self._tokens.count(summary) if summary else 0
        return CompressionResult(
            summary=summary,
            insights=(),
            critical_facts=tuple(facts),
            error_patterns=(),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            ratio=input_tokens / output_tokens if output_tokens else 1.0,
            target_ratio=target,
            retention=retention([f.content for f in facts], summary),
            contradictions=(),
            engine="kept_whole",
            fallback=False,
            attempts=(),
            usage=None,
            kept_whole=True,
        )


def merge_facts(first: Sequence[CriticalFact], then: Sequence[CriticalFact]) -> list[CriticalFact]:
    """``first`` then the facts of ``then`` that none of ``first`` already states, in
    priority order of kind for equal positions."""
    merged = merge_duplicates([*first, *then])
    return sorted(merged, key=lambda f: (f.position, PRIORITY.index(f.kind)))


def _outcome_reasons(accepted: _Checked, target: float, tolerance: float) -> list[str]:
    """Why the accepted draft's ratio is off the target, when it is."""
    attempt = accepted.attempt
    if target * (1 - tolerance) <= attempt.ratio <= target * (1 + tolerance):
        return []
    if attempt.ratio > target:
        return [
            f"the input repeats itself: every distinct sentence fits in {accepted.output_tokens} "
            f"tokens ({attempt.ratio:.2f}:1)"
        ]
    if attempt.verbatim_facts:
        return [f"the last resort keeps every critical fact word for word ({attempt.ratio:.2f}:1)"]
    return [f"no draft met {target:.2f}:1 ±{tolerance:.0%}; the closest was kept"]


def _usage_of_failure(exc: AgentCoreError) -> list[TokenUsage]:
    model = exc.details.get("model")
    prompt = exc.details.get("prompt_tokens")
    completion = exc.details.get("completion_tokens")
    if isinstance(model, str) and isinstance(prompt, int) and isinstance(completion, int):
        return [TokenUsage(model, prompt, completion)]
    return []


def _total_usage(usage: list[TokenUsage]) -> TokenUsage | None:
    if not usage:
        return None
    return TokenUsage(
        usage[0].model,
        sum(u.prompt_tokens for u in usage),
        sum(u.completion_tokens for u in usage),
    )
