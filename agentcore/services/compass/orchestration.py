"""COMPASS orchestration: a completed stage is compressed (as a background job) into its stage
memory, and the task's progress brief is kept over its stage memories.

- ``complete_stage`` marks the stage completed and, with STAGE_COMPLETION_AUTO_COMPRESS (BR-7),
  submits the compression job; it waits for the result unless asked not to. A caller who
  waits while no worker is alive to run the job fails at once (a retryable PROVIDER_ERROR,
  before the stage is touched), or, with JOBS_INLINE_WITHOUT_WORKER, has the stage compressed
  in this process; a job already queued when its workers go stays queued for the next one.
- ``compress_stage`` (the job) compresses ONE stage's raw memories (BR-8), records the model's
  cost and the compression metrics, and saves the stage memory; it is idempotent, so a job run
  twice or a stage picked up by several replicas is compressed once. Raw memories stay stored and
  linked to their stage (NFR-DR5).
- Stages that ended without a call to ``complete_stage`` (an automatic transition, or a new
  ``memory.stage.start``) are compressed by ``compress_pending``, which the service runs
  periodically.
- ``task_progress`` compresses the completed stages' summaries into the progress brief (5:1)
  when a stage was added since the last brief (a stage whose job no live worker can run is
  left out until it is compressed, rather than holding the call); ``task_context`` serves
  any of the three levels within an optional token budget.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from agentcore.domain.clock import Clock
from agentcore.domain.critical_facts import (
    CriticalFact,
    FactKind,
    Passage,
    extract_critical_facts,
    merge_duplicates,
)
from agentcore.domain.error_records import MEMORY_SOURCE as ERROR_MEMORY_SOURCE
from agentcore.domain.errors import (
    InvalidParams,
    InvalidState,
    ProviderError,
    TaskNotFound,
    error_from_code,
)
from agentcore.domain.fact_text import terse
from agentcore.domain.models import Memory
from agentcore.domain.stages import Stage, StageMemory, StageStatus, TaskContext
from agentcore.services.compass.compression import REQUIRED_KINDS, ContextCompressor
from agentcore.services.compass.drafts import (
    Aggressiveness,
    CompressionItem,
    CompressionResult,
    StageSummary,
)
from agentcore.services.compass.metrics import CompressionMetricsRecorder
from agentcore.services.compass.stages import StageManager
from agentcore.services.costs import COMPRESSION_STAGE, COMPRESSION_TASK, CostTracker
from agentcore.services.jobs import (
    JobQueue,
    JobState,
    has_live_worker,
    is_no_live_worker,
    no_live_worker,
    wait_served,
)
from agentcore.services.ports import UnitOfWorkFactory
from agentcore.services.working_memory import TokenCounter

log = logging.getLogger(__name__)

COMPRESS_STAGE = "compass.compress_stage"  # job kind
RESUBMIT_SECONDS = 60.0  # a pending stage's job is submitted again only after this long
Level = Literal["raw", "stage", "task"]
_PINNED = ("critical_constraints", "task_brief")  # kept first when a budget cuts the context
_WHAT = "the stage compression"


@dataclass(frozen=True, slots=True)
class CompassSettings:
    auto_compress: bool = True
    stage_target_ratio: float = 10.0
    task_target_ratio: float = 5.0
    wait_seconds: float = 60.0  # how long complete_stage waits for its job
    paid_model: str | None = None  # the compression model when an LLM engine compresses
    inline_without_worker: bool = False  # a waited-for job no worker can run runs here


@dataclass(frozen=True, slots=True)
class Completion:
    stage: Stage
    stage_memory: StageMemory | None = None
    job_id: str | None = None  # set when the caller did not wait, or the job is still running


@dataclass(frozen=True, slots=True)
class ContextView:
    """The task's context at one level: ``text`` within ``max_tokens`` when a budget was given."""

    task_id: str
    level: Level
    text: str
    token_count: int
    truncated: bool
    items: list[dict[str, Any]]


class CompassService:
    def __init__(
        self,
        stages: StageManager,
        uow_factory: UnitOfWorkFactory,
        compressor: ContextCompressor,
        costs: CostTracker,
        metrics: CompressionMetricsRecorder,
        jobs: JobQueue,
        tokens: TokenCounter,
        clock: Clock,
        settings: CompassSettings,
    ) -> None:
        self._stages = stages
        self._uow_factory = uow_factory
        self._compressor = compressor
        self._costs = costs
        self._metrics = metrics
        self._jobs = jobs
        self._tokens = tokens
        self._clock = clock
        self._settings = settings
        # stage id → (when this process submitted its job, the job's id), for RESUBMIT_SECONDS
        self._submitted: dict[str, tuple[float, str]] = {}

    async def complete_stage(self, task_id: str, stage_id: str, *, wait: bool = True) -> Completion:
        # Decided before the stage is touched, so that a refusal changes nothing.
        needs_job = wait and self._settings.auto_compress
        if needs_job and await self._stages.stage_memory(stage_id) is not None:
            needs_job = False  # compressed already (a retry after the job ran)
        inline = needs_job and not await self._job_runs()
        stage = await self._stages.complete(task_id, stage_id)
        existing = await self._stages.stage_memory(stage.id)
        if existing is not None or not self._settings.auto_compress:
            return Completion(stage, existing)
        if inline:
            return Completion(stage, await self.compress_stage(stage.id))
        job_id = await self._submit(stage.id)
        if not wait:
            return Completion(stage, job_id=job_id)
        status = await wait_served(self._jobs, job_id, self._settings.wait_seconds, _WHAT)
        if status.state is JobState.FAILED:
            error = status.error or {}
            raise error_from_code(
                str(error.get("code", "INTERNAL_ERROR")),
                str(error.get("message", "stage compression failed")),
            )
        if status.state is not JobState.SUCCEEDED:
            return Completion(stage, job_id=job_id)
        return Completion(stage, await self._stages.stage_memory(stage.id), job_id)

    async def _job_runs(self) -> bool:
        """Whether a job submitted now will run: True when something runs jobs; False when
        none does and JOBS_INLINE_WITHOUT_WORKER has the caller's job run here; else raises
        the retryable ``no_live_worker``."""
        if await has_live_worker(self._jobs):
            return True
        if self._settings.inline_without_worker:
            return False
        raise no_live_worker(_WHAT)

    async def compress_stage(self, stage_id: str) -> StageMemory:
        """The stage memory of a completed stage, compressing it first if it has none."""
        stage = await self._stages.get(stage_id)
        if stage.status is not StageStatus.COMPLETED:
            raise InvalidState(f"stage {stage_id} is still active; complete it first")
        existing = await self._stages.stage_memory(stage_id)
        if existing is not None:
            return existing
        async with self._uow_factory(read_only=True) as uow:
            raw = await uow.memories.in_stage(stage_id)
        items = [
            CompressionItem(m.id, m.content, _flagged(m), m.created_at, m.metadata, m.stage_id)
            for m in raw
        ]
        await self._check_budget(sum(self._tokens.count(i.content) for i in items))
        result = await self._compressor.compress_stage(
            items,
            target_ratio=self._settings.stage_target_ratio,
            aggressiveness=await self._signals(stage, items),
        )
        cost = await self._record_cost(result, COMPRESSION_STAGE, stage.agent_id, stage.task_id)
        memory = _stage_memory(stage, result, [m.id for m in raw], cost, self._clock())
        stored = await self._stages.save_stage_memory(memory)
        if stored is memory:  # else compressed meanwhile by another job: that one stands
            await self._record_metrics("stage", stage.task_id, stage.id, result, cost)
        return stored

    async def compress_pending(self, limit: int = 20) -> int:
        """Submit compression jobs for completed stages without a stage memory whose job nobody
        submitted, or (with a live worker) submitted over ``RESUBMIT_SECONDS`` ago: a job lost
        with its worker is submitted again, and a job that waits for a worker stays the one.
        The claim is in the database, so of the processes sweeping, one submits a stage's job."""
        if not self._settings.auto_compress:
            return 0
        resubmit_before: datetime | None = self._resubmit_before()
        candidates = await self._stages.pending_compression(limit, resubmit_before)
        if candidates and not await has_live_worker(self._jobs):
            resubmit_before = None  # the job submitted before is still queued
        submitted = 0
        for stage in candidates:
            if await self._stages.claim_compression(stage.id, resubmit_before):
                await self._submit(stage.id)
                submitted += 1
        return submitted

    async def _submit(self, stage_id: str) -> str:
        """Submit the stage's compression job (its compression claimed by this process)."""
        job_id = await self._jobs.submit(COMPRESS_STAGE, {"stage_id": stage_id})
        now = time.monotonic()
        self._submitted = {
            k: v for k, v in self._submitted.items() if now - v[0] < RESUBMIT_SECONDS
        }
        self._submitted[stage_id] = (now, job_id)
        return job_id

    async def run_compress_job(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The job handler of ``COMPRESS_STAGE``: the record ``memory.stage.complete`` returns
        when it waits (the stage and its stage memory)."""
        stage_id = payload.get("stage_id")
        if not isinstance(stage_id, str):
            raise InvalidParams("the job needs a stage_id")
        memory = await self.compress_stage(stage_id)
        stage = await self._stages.get(stage_id)
        return {"stage": stage.to_dict(), "stage_memory": memory.to_dict()}

    async def task_progress(self, task_id: str) -> TaskContext:
        """The task's progress brief over its completed stages (compressing any that wait for
        their job first), refreshed when a stage was compressed since the last brief. Its
        critical constraints are those of every stage, the active one's included."""
        stages = await self._stages.stages_of(task_id)
        if not stages:
            raise TaskNotFound(f"task {task_id} has no stages")
        await self._compress_waiting(stages)
        memories = {m.stage_id: m for m in await self._stages.stage_memories_of(task_id)}
        done = [s for s in stages if s.id in memories]
        active = next((s for s in stages if s.status is StageStatus.ACTIVE), None)
        current = None if active is None else active.id
        summaries = [_stage_summary(s, memories[s.id]) for s in done]
        facts = [f for s in summaries for f in s.critical_facts if f.kind in REQUIRED_KINDS]
        merged = merge_duplicates([*facts, *await self._ongoing(active)])
        constraints = tuple(f.content for f in merged)
        known = await self._stages.task_context(task_id)
        done_ids = tuple(s.id for s in done)
        if known is not None and known.completed_stage_ids == done_ids:
            if (known.current_stage_id, known.critical_constraints) == (current, constraints):
                return known
            return await self._save_context(known, current, constraints)
        brief, figures = "", {}
        if summaries:
            result = await self._compressor.compress_task(
                summaries, target_ratio=self._settings.task_target_ratio
            )
            cost = await self._record_cost(result, COMPRESSION_TASK, None, task_id)
            brief = result.summary
            figures = _brief_figures(result)
            await self._record_metrics("task", task_id, None, result, cost)
        performance: dict[str, Any] = (await self._metrics.summary(task_id)).as_metrics()
        performance.update({"stages": len(stages), "completed_stages": len(done), **figures})
        context = TaskContext(
            task_id=task_id,
            progress_summary=brief,
            current_stage_id=current,
            completed_stage_ids=done_ids,
            critical_constraints=constraints,
            performance_metrics=performance,
            updated_at=self._clock(),
        )
        await self._stages.save_task_context(context)
        return context

    async def _compress_waiting(self, stages: list[Stage]) -> None:
        """Compress the completed stages that have no stage memory yet (ended by a new start
        or a detected transition, their job not run yet), through the job queue as any
        compression, waiting up to ``wait_seconds``; a stage whose job another process
        submitted is left to it."""
        if not self._settings.auto_compress:
            return
        waiting = [s for s in stages if s.status is StageStatus.COMPLETED]
        compressed = {m.stage_id for m in await self._stages.stage_memories_of(stages[0].task_id)}
        waiting = [s for s in waiting if s.id not in compressed]
        if not waiting:
            return
        try:
            if not await self._job_runs():
                for stage in waiting:
                    await self.compress_stage(stage.id)
                return
            jobs = [job for s in waiting if (job := await self._job_of(s.id)) is not None]
            for job_id in jobs:
                await wait_served(self._jobs, job_id, self._settings.wait_seconds, _WHAT)
        except ProviderError as exc:
            if not is_no_live_worker(exc):
                raise
            # No worker: their jobs wait in the queue, the brief covers the stages compressed.

    async def _job_of(self, stage_id: str) -> str | None:
        """The job compressing a pending stage: the one this process submitted lately, or a
        new one when nobody claimed its compression lately; None when another process did
        (its job is not this process's to wait for)."""
        known = self._submitted.get(stage_id)
        if known is not None and time.monotonic() - known[0] < RESUBMIT_SECONDS:
            return known[1]
        if await self._stages.claim_compression(stage_id, self._resubmit_before()):
            return await self._submit(stage_id)
        return None

    def _resubmit_before(self) -> datetime:
        """A claim taken before this may be taken again (its job may be lost)."""
        return self._clock() - timedelta(seconds=RESUBMIT_SECONDS)

    async def _ongoing(self, active: Stage | None) -> list[CriticalFact]:
        """The flagged memories and stated constraints of the active stage, so far."""
        if active is None:
            return []
        async with self._uow_factory(read_only=True) as uow:
            raw = await uow.memories.in_stage(active.id)
        passages = [Passage(m.id, m.content, _flagged(m)) for m in raw]
        return [f for f in extract_critical_facts(passages) if f.kind in REQUIRED_KINDS]

    async def task_context(
        self, task_id: str, level: Level, max_tokens: int | None = None
    ) -> ContextView:
        """Level ``raw``: the memories of every stage; ``stage``: the stage summaries plus the
        active stage's raw memories; ``task``, the most compact: the task's critical
        constraints as the stage summaries keep them (``terse``: no articles or filler), the
        progress brief over the rest of the summaries, and the active stage's raw memories.
        When ``max_tokens`` cuts, the constraints and the brief are kept first, then the
        newest material."""
        context = await self.task_progress(task_id)
        stages = await self._stages.stages_of(task_id)
        memories = {m.stage_id: m for m in await self._stages.stage_memories_of(task_id)}
        items: list[dict[str, Any]] = []
        if level == "task" and context.critical_constraints:
            listed = "\n".join(f"- {terse(c) or c}" for c in context.critical_constraints)
            items.append({"kind": "critical_constraints", "text": f"Constraints:\n{listed}"})
        if level == "task" and context.progress_summary:
            items.append({"kind": "task_brief", "text": context.progress_summary})
        for stage in stages:
            summary = memories.get(stage.id)
            if level != "raw" and summary is not None:
                if level == "stage":
                    items.append(_item("stage_summary", stage, summary.summary))
                continue
            if level != "raw" and stage.status is not StageStatus.ACTIVE:
                continue  # completed but not compressed yet: its summary follows
            async with self._uow_factory(read_only=True) as uow:
                raw = await uow.memories.in_stage(stage.id)
            items += [_item("memory", stage, m.content, memory_id=m.id) for m in raw]
        return self._fit(task_id, level, items, max_tokens)

    def _fit(
        self, task_id: str, level: Level, items: list[dict[str, Any]], max_tokens: int | None
    ) -> ContextView:
        pinned = [i for i in items if i["kind"] in _PINNED]
        kept: list[dict[str, Any]] = []
        used = 0
        for item in [*pinned, *reversed([i for i in items if i["kind"] not in _PINNED])]:
            cost = self._tokens.count(item["text"])
            if max_tokens is not None and used + cost > max_tokens:
                break
            kept.append(item)
            used += cost
        kept.sort(key=items.index)
        text = "\n\n".join(item["text"] for item in kept)
        return ContextView(task_id, level, text, used, len(kept) < len(items), kept)

    async def _save_context(
        self, known: TaskContext, current_stage_id: str | None, constraints: tuple[str, ...]
    ) -> TaskContext:
        updated = replace(
            known,
            current_stage_id=current_stage_id,
            critical_constraints=constraints,
            updated_at=self._clock(),
        )
        await self._stages.save_task_context(updated)
        return updated

    async def _record_metrics(
        self,
        level: Literal["stage", "task"],
        task_id: str,
        stage_id: str | None,
        result: CompressionResult,
        cost: float,
    ) -> None:
        await self._metrics.record(
            level=level,
            task_id=task_id,
            stage_id=stage_id,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            ratio=result.ratio,
            retention=result.retention,
            engine=result.engine,
            fallback=result.fallback,
            cost_usd=cost,
        )

    async def _check_budget(self, input_tokens: int) -> None:
        model = self._settings.paid_model
        if model is None:
            return
        output = int(input_tokens / self._settings.stage_target_ratio) + 200
        await self._costs.check_budget(self._costs.estimate(model, input_tokens + 400, output))

    async def _record_cost(
        self, result: CompressionResult, operation: str, agent_id: str | None, task_id: str
    ) -> float:
        if result.usage is None:
            return 0.0
        record = await self._costs.record(result.usage, operation, agent_id, task_id)
        return record.cost_usd

    async def _signals(self, stage: Stage, items: list[CompressionItem]) -> Aggressiveness:
        """FR-3.4 inputs: complexity as the agent declared it when starting the stage
        (``metadata.complexity``, 0-1), the share of the stage's memories that record errors,
        the month's budget use, and the task's average stage retention so far."""
        complexity = stage.metadata.get("complexity", 0.0)
        errors = sum(1 for i in items if i.metadata.get("kind") == "error")
        budget = await self._costs.budget_status()
        summary = await self._metrics.summary(stage.task_id)
        return Aggressiveness(
            complexity=min(max(float(complexity), 0.0), 1.0)
            if isinstance(complexity, int | float)
            else 0.0,
            error_rate=errors / len(items) if items else 0.0,
            budget_used=min(budget.used_pct / 100, 1.0),
            recent_retention=None if summary.stage is None else summary.stage.avg_retention,
        )


def _stage_memory(
    stage: Stage, result: CompressionResult, raw_ids: list[str], cost: float, now: datetime
) -> StageMemory:
    quality = result.quality_metrics()
    quality["critical_fact_kinds"] = [f.kind.value for f in result.critical_facts]
    quality["error_patterns"] = [p.to_dict() for p in result.error_patterns]
    return StageMemory(
        stage_id=stage.id,
        task_id=stage.task_id,
        summary=result.summary,
        insights=tuple(result.insights),
        critical_facts=tuple(f.content for f in result.critical_facts),
        raw_memory_ids=tuple(raw_ids),
        compression_ratio=round(result.ratio, 3),
        quality_metrics=quality,
        engine=result.engine,
        fallback=result.fallback,
        cost_usd=cost,
        tokens_in=result.input_tokens,
        tokens_out=result.output_tokens,
        created_at=now,
    )


def _stage_summary(stage: Stage, memory: StageMemory) -> StageSummary:
    kinds = memory.quality_metrics.get("critical_fact_kinds", [])
    facts = []
    for index, content in enumerate(memory.critical_facts):
        kind = kinds[index] if index < len(kinds) else FactKind.CONSTRAINT.value
        facts.append(CriticalFact(content, FactKind(kind), (stage.id,), (index, 0)))
    return StageSummary(
        stage.id, stage.stage_type.value, memory.summary, tuple(facts), stage.completed_at
    )


def _flagged(memory: Memory) -> bool:
    """Whether every sentence of a memory is a critical fact of its stage: the agent flagged
    it. A memory that is critical because it states a requirement gives its requirement
    sentences as constraints, not its other sentences. The error tracker's memories are
    critical for retrieval but state no rule of the task; their errors reach the summary as
    sentences and error patterns."""
    return memory.flagged and memory.source != ERROR_MEMORY_SOURCE


def _brief_figures(result: CompressionResult) -> dict[str, Any]:
    return {
        "brief_compression_ratio": round(result.ratio, 3),
        "brief_retention": round(result.retention, 4),
        "brief_tokens_in": result.input_tokens,
        "brief_tokens_out": result.output_tokens,
        "brief_engine": result.engine,
    }


def _item(kind: str, stage: Stage, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "stage_id": stage.id,
        "stage_type": stage.stage_type.value,
        "text": text,
        **extra,
    }
