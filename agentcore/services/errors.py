"""ErrorTracker: error memory and pattern tracking (FR-4.1-4.4).

- **record** stores an error record (the truth, table ``error_records``), linked to the stage
  it names or else to the task's active stage, and stores the error as a critical memory
  through ``MemoryManager`` so that retrieval finds it: an episodic memory of the task
  (``metadata.kind == "error"``) and, when a recovery action is given, a procedural memory
  (``metadata.kind == "recovery"``) of the agent when ``agent_id`` is given (a lesson that
  serves the agent's other tasks), else of the task. Both carry ``error_id``, ``error_type``
  and ``task_id`` in their metadata and ids derived from the error id. Should the memory write
  fail, the record is removed again and the error raised: the call did nothing.
- **history** lists records newest first by task and/or agent, stage type and minimum severity.
- **patterns** runs the detectors of ``agentcore.domain.error_patterns`` over the newest
  ``MAX_ANALYSED`` errors of a task and/or agent and, when a ``PatternExtractor`` (an LLM) is
  configured, adds its patterns (cached per set of errors; refused calls over budget or a
  failing provider leave the statistical patterns and say so in ``llm_status``).
- **error_signals** is the error-correction factor of retrieval (see
  ``error_patterns.correction_signals``). ``ErrorSignals`` keeps each task's recent errors
  for ``RECENT_SECONDS``, so the searches of a task do not read them again one after another;
  an error recorded through this process's tracker is seen by the next search at once, one
  recorded through another process (another replica) within ``RECENT_SECONDS``.

With ERROR_TRACKING_ENABLED=false, ``record`` raises ``InvalidState`` and ``error_signals``
returns zeros; records stored earlier can still be read.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from time import monotonic
from typing import Any, Protocol

from agentcore.domain.clock import Clock
from agentcore.domain.error_patterns import correction_signals, detect_patterns
from agentcore.domain.error_records import (
    MAX_CONTEXT_JSON,
    MAX_DESCRIPTION,
    MAX_RECOVERY,
    ErrorPattern,
    ErrorQuery,
    ErrorRecord,
    check_severity,
    check_text,
    error_memories,
    parse_error_type,
)
from agentcore.domain.errors import (
    AgentCoreError,
    BudgetExceeded,
    InvalidParams,
    InvalidState,
    MissingIdentifier,
    StageNotFound,
)
from agentcore.domain.models import Memory, ScopeIds, StageType, new_id
from agentcore.domain.stages import Stage, parse_stage_type
from agentcore.domain.usage import TokenUsage
from agentcore.services.costs import CostTracker
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import UnitOfWork, UnitOfWorkFactory
from agentcore.services.retrieval import ErrorCorrection

log = logging.getLogger(__name__)

MAX_ANALYSED = 500  # newest errors a pattern analysis reads
MAX_HISTORY = 100
RECENT_ERRORS = 20  # a task's newest errors that drive the error-correction factor
RECENT_SECONDS = 2.0  # how long ErrorSignals keeps a task's recent errors
_TASKS_KEPT = 1_024
ERROR_PATTERNS = "error_patterns"  # cost operation of LLM pattern extraction
_LLM_CACHE = 256


@dataclass(frozen=True, slots=True)
class ExtractedPatterns:
    patterns: list[ErrorPattern]
    usage: TokenUsage | None = None


class PatternExtractor(Protocol):
    """Finds patterns in error records with a language model. Each pattern cites at least
    ``min_errors`` of the records; its severity comes from them (``pattern_severity``), so
    the model cannot inflate it. Raises ``ProviderError`` (or a more specific
    ``AgentCoreError``) when no valid answer comes back."""

    @property
    def model_name(self) -> str: ...

    async def extract(self, records: Sequence[ErrorRecord], min_errors: int) -> ExtractedPatterns:
        """``records`` in chronological order."""
        ...


class LlmStatus(StrEnum):
    OFF = "off"  # no extractor configured
    USED = "used"  # its patterns are included (fresh or cached)
    SKIPPED = "skipped"  # too few errors to ask
    OVER_BUDGET = "over_budget"  # the monthly budget refused the call
    FAILED = "failed"  # the provider failed; the statistical patterns stand


@dataclass(frozen=True, slots=True)
class NewError:
    task_id: str
    error_type: str
    description: str
    severity: float
    stage_id: str | None = None
    agent_id: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    recovery_action: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedError:
    record: ErrorRecord
    memory_ids: tuple[str, ...]
    patterns: list[ErrorPattern]  # the task's statistical patterns after this record


@dataclass(frozen=True, slots=True)
class PatternReport:
    patterns: list[ErrorPattern]
    analysed_errors: int
    llm_status: LlmStatus


class ErrorTracker:
    def __init__(
        self,
        uows: UnitOfWorkFactory,
        memory: MemoryManager,
        clock: Clock,
        *,
        enabled: bool,
        threshold: int,
        max_content_length: int,
        extractor: PatternExtractor | None = None,
        costs: CostTracker | None = None,
        signals: ErrorSignals | None = None,
    ) -> None:
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        self._uows = uows
        self._memory = memory
        self._clock = clock
        self._enabled = enabled
        self._threshold = threshold
        self._max_content = max_content_length
        self._extractor = extractor
        self._costs = costs
        self._signals = signals or ErrorSignals(uows, enabled=enabled)
        self._llm_cache: OrderedDict[tuple[str, int, str], list[ErrorPattern]] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self._enabled

    async def record(self, new: NewError) -> RecordedError:
        """Store an error and its memories; returns them with the task's patterns.

        Raises ``InvalidState`` when tracking is disabled, ``InvalidParams`` for a bad field,
        ``StageNotFound`` for a stage that is not the task's.
        """
        if not self._enabled:
            raise InvalidState(
                "error tracking is disabled (ERROR_TRACKING_ENABLED=false); nothing was recorded"
            )
        record = self._validated(new)
        async with self._uows() as uow:
            stage = await _stage_of(uow, new.task_id, new.stage_id)
            if stage is not None:
                record = _with_stage(record, stage)
            await uow.errors.add(record)
            await uow.commit()
        self._signals.forget(record.task_id)
        try:
            memories = await self._memory.add_batch(error_memories(record, self._max_content))
        except AgentCoreError:
            async with self._uows() as uow:  # nothing is acknowledged: undo the record
                await uow.errors.delete(record.id)
                await uow.commit()
            self._signals.forget(record.task_id)
            raise
        recent = await self._query(ErrorQuery(task_id=record.task_id, limit=MAX_ANALYSED))
        patterns = detect_patterns(recent, self._threshold)
        return RecordedError(record, tuple(m.id for m in memories), patterns)

    async def history(
        self,
        *,
        task_id: str | None = None,
        agent_id: str | None = None,
        stage_type: str | None = None,
        min_severity: float | None = None,
        limit: int = 20,
    ) -> list[ErrorRecord]:
        """Errors of a task and/or an agent, newest first."""
        _require_owner(task_id, agent_id)
        if not 1 <= limit <= MAX_HISTORY:
            raise InvalidParams(
                f"limit must be 1 to {MAX_HISTORY}",
                errors=[{"field": "limit", "message": f"1 to {MAX_HISTORY}"}],
            )
        query = ErrorQuery(
            task_id=task_id,
            agent_id=agent_id,
            stage_type=None if stage_type is None else _stage_type(stage_type),
            min_severity=None
            if min_severity is None
            else check_severity(min_severity, "min_severity"),
            limit=limit,
        )
        return await self._query(query)

    async def patterns(
        self, *, task_id: str | None = None, agent_id: str | None = None
    ) -> PatternReport:
        """The patterns of the newest ``MAX_ANALYSED`` errors of a task and/or an agent (an
        agent's sequences are counted within each of its tasks), most severe first."""
        _require_owner(task_id, agent_id)
        records = await self._query(
            ErrorQuery(task_id=task_id, agent_id=agent_id, limit=MAX_ANALYSED)
        )
        found = detect_patterns(records, self._threshold)
        extra, status = await self._llm_patterns(records, task_id, agent_id)
        # sorted() is stable: on ties the statistical patterns come first
        merged = sorted([*found, *extra], key=lambda p: (-p.severity, -p.occurrences))
        return PatternReport(merged, len(records), status)

    async def error_signals(self, task_id: str, memories: Sequence[Memory]) -> dict[str, float]:
        return await self._signals.for_task(task_id, memories)

    async def _query(self, query: ErrorQuery) -> list[ErrorRecord]:
        async with self._uows(read_only=True) as uow:
            return await uow.errors.query(query)

    def _validated(self, new: NewError) -> ErrorRecord:
        serialized = json.dumps(dict(new.context), default=str)
        if len(serialized) > MAX_CONTEXT_JSON:
            raise InvalidParams(
                f"context is larger than {MAX_CONTEXT_JSON} characters as JSON",
                errors=[{"field": "context", "message": f"at most {MAX_CONTEXT_JSON} chars"}],
            )
        recovery = new.recovery_action
        return ErrorRecord(
            id=new_id(),
            task_id=new.task_id,
            error_type=parse_error_type(new.error_type),
            description=check_text(new.description, "description", MAX_DESCRIPTION),
            severity=check_severity(new.severity),
            created_at=self._clock(),
            stage_id=new.stage_id,
            agent_id=new.agent_id,
            context=json.loads(serialized),  # stored as JSON: only JSON values
            recovery_action=None
            if recovery is None
            else check_text(recovery, "recovery_action", MAX_RECOVERY),
        )

    async def _llm_patterns(
        self, records: list[ErrorRecord], task_id: str | None, agent_id: str | None
    ) -> tuple[list[ErrorPattern], LlmStatus]:
        if self._extractor is None:
            return [], LlmStatus.OFF
        if len(records) < max(2, self._threshold):
            return [], LlmStatus.SKIPPED
        digest = hashlib.blake2b(" ".join(r.id for r in records).encode(), digest_size=16)
        key = (self._extractor.model_name, self._threshold, digest.hexdigest())
        if (cached := self._llm_cache.get(key)) is not None:
            self._llm_cache.move_to_end(key)
            return cached, LlmStatus.USED
        chronological = records[::-1]
        try:
            if self._costs is not None:
                tokens_in, tokens_out = _estimated_tokens(chronological)
                model = self._extractor.model_name
                await self._costs.check_budget(self._costs.estimate(model, tokens_in, tokens_out))
            extracted = await self._extractor.extract(chronological, max(2, self._threshold))
        except BudgetExceeded:
            return [], LlmStatus.OVER_BUDGET
        except AgentCoreError as exc:
            log.warning("LLM error pattern extraction failed (%s); statistical only", exc.code)
            return [], LlmStatus.FAILED
        if self._costs is not None and extracted.usage is not None:
            await self._costs.record(extracted.usage, ERROR_PATTERNS, agent_id, task_id)
        self._llm_cache[key] = extracted.patterns
        if len(self._llm_cache) > _LLM_CACHE:
            self._llm_cache.popitem(last=False)
        return extracted.patterns, LlmStatus.USED


async def _stage_of(uow: UnitOfWork, task_id: str, stage_id: str | None) -> Stage | None:
    """The stage an error belongs to: the one named (it must be the task's), else the task's
    active stage, else none."""
    if stage_id is None:
        return await uow.stages.active(task_id)
    stage = await uow.stages.get(stage_id)
    if stage is None or stage.task_id != task_id:
        raise StageNotFound("stage not found for this task", stage_id=stage_id, task_id=task_id)
    return stage


def _with_stage(record: ErrorRecord, stage: Stage) -> ErrorRecord:
    return replace(record, stage_id=stage.id, stage_type=stage.stage_type)


def _require_owner(task_id: str | None, agent_id: str | None) -> None:
    if task_id is None and agent_id is None:
        raise MissingIdentifier("give task_id or agent_id (or both)")


def _stage_type(value: str) -> StageType:
    parsed = parse_stage_type(value)
    if parsed is None:
        allowed = ", ".join(t.value for t in StageType)
        raise InvalidParams(
            f"unknown stage type {value!r}; expected one of: {allowed}",
            errors=[{"field": "stage_type", "message": f"one of: {allowed}"}],
        )
    return parsed


def _estimated_tokens(records: Sequence[ErrorRecord]) -> tuple[int, int]:
    """A generous guess of a pattern extraction's tokens (about 4 characters a token)."""
    chars = sum(
        len(r.description) + len(json.dumps(dict(r.context), default=str)) + 80 for r in records
    )
    return chars // 4 + 800, 1_000


class ErrorSignals:
    """The error-correction factor of retrieval (FR-4.4), read-only so that retrieval can use it
    without the tracker (which writes memories through the memory manager). Each task's recent
    errors are kept for ``RECENT_SECONDS`` (at most ``_TASKS_KEPT`` tasks); the tracker calls
    ``forget`` when it records one."""

    def __init__(self, uows: UnitOfWorkFactory, *, enabled: bool) -> None:
        self._uows = uows
        self._enabled = enabled
        self._recent_by_task: OrderedDict[str, tuple[float, list[ErrorRecord]]] = OrderedDict()
        self._forgotten = 0  # how many times ``forget`` was called: a read it overlaps is not kept

    async def for_task(self, task_id: str, memories: Sequence[Memory]) -> dict[str, float]:
        """Each memory's factor (0-1) for a search made for ``task_id``
        (``error_patterns.correction_signals``); zeros when tracking is disabled."""
        if not self._enabled or not memories:
            return {m.id: 0.0 for m in memories}
        return correction_signals(task_id, await self._recent(task_id), memories)

    async def prepare(self, query: str, scope: ScopeIds) -> ErrorCorrection | None:
        """``retrieval.ErrorCorrectionSource``: only a search for a task has error signals."""
        task_id = scope.task_id
        if task_id is None or not self._enabled:
            return None
        recent = await self._recent(task_id)
        return lambda memories: correction_signals(task_id, recent, memories)

    def forget(self, task_id: str) -> None:
        """The task's errors changed: the next search reads them again."""
        self._recent_by_task.pop(task_id, None)
        self._forgotten += 1

    async def _recent(self, task_id: str) -> list[ErrorRecord]:
        now = monotonic()
        kept = self._recent_by_task.get(task_id)
        if kept is not None and now - kept[0] < RECENT_SECONDS:
            return kept[1]
        forgotten = self._forgotten
        async with self._uows(read_only=True) as uow:
            recent = await uow.errors.query(ErrorQuery(task_id=task_id, limit=RECENT_ERRORS))
        if forgotten != self._forgotten:  # an error was recorded meanwhile: read it next time
            return recent
        self._recent_by_task[task_id] = (now, recent)
        self._recent_by_task.move_to_end(task_id)
        if len(self._recent_by_task) > _TASKS_KEPT:
            self._recent_by_task.popitem(last=False)
        return recent
