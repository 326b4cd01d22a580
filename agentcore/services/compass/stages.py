"""StageManager: the COMPASS stage lifecycle of tasks (FR-2.1-2.3).

A task is a sequence of stages with at most one active stage (the database enforces it too).
Starting a stage ends the active one (status ``completed``, pending compression) unless the
active stage already has the requested type: then the call returns the active stage, so a
retried ``start`` does not split a stage. Every raw memory added under a task gets the task's
active stage (``stage_for``, the ``StageResolver`` port). A declared stage holds; with
automatic transitions on, a memory may start the task's first stage or move a detected stage
on (``agentcore.domain.stage_detection``). A memory that names its ``stage_id`` keeps it.

A stage ended by a transition records nothing else: the orchestrator finds it with
``pending_compression`` (completed, no stage memory yet, its compression unclaimed) and claims
it, and the stage that replaced it names it in ``metadata.previous_stage_id``. ``complete``
claims the compression of the stage it ends or returns (unless claimed), for its caller.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from agentcore.domain.clock import Clock
from agentcore.domain.errors import Conflict, InvalidParams, InvalidState, StageNotFound
from agentcore.domain.models import Memory, StageType, new_id
from agentcore.domain.stage_detection import StageDetector
from agentcore.domain.stages import (
    Stage,
    StageMemory,
    StageOrigin,
    StageStatus,
    TaskContext,
    parse_stage_type,
)
from agentcore.services.ports import UnitOfWork, UnitOfWorkFactory

log = logging.getLogger(__name__)

# Changes of one task's stage take turns on a lock of the task; should a writer still lose the
# race on the "one active stage per task" index, it re-reads the winner's stage and decides again.
_ATTEMPTS = 4


@dataclass(frozen=True, slots=True)
class _Move:
    """What ``_switch`` starts: the stage type, why, and how it was set."""

    stage_type: StageType
    reason: str
    metadata: dict[str, Any]
    origin: StageOrigin = StageOrigin.DECLARED
    detect_transitions: bool = False
    adopt: bool = False  # declare the active stage itself rather than start another


# Given the task's active stage (or None): the move to make, or None to stay.
_Decision = _Move | None


class StageManager:
    """Stage lifecycle and the ``StageResolver`` for MemoryManager."""

    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        clock: Clock,
        *,
        auto_transition: bool,
        default_duration_seconds: int,
    ) -> None:
        self._uow_factory = uow_factory
        self._clock = clock
        self._auto = auto_transition
        self._detector = StageDetector(default_duration_seconds)

    async def start(
        self,
        task_id: str,
        stage_type: StageType | str,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        reason: str = "explicit",
        detect_transitions: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> Stage:
        """Make a declared stage of ``stage_type`` the task's active stage, ending the active
        one; the active stage itself when it already has that type (a detected one becomes
        declared). ``detect_transitions`` lets the detector end it; ``metadata`` (e.g. the
        task's ``complexity``) is recorded on the stage."""
        wanted = _stage_type(stage_type)
        move = _Move(wanted, reason, dict(metadata or {}), detect_transitions=detect_transitions)

        def decide(active: Stage | None) -> _Decision:
            if active is None or active.stage_type is not wanted:
                return move
            if active.origin is StageOrigin.DECLARED and (
                active.detect_transitions == detect_transitions
            ):
                return None
            return replace(move, adopt=True)

        stage = await self._switch(task_id, decide, agent_id, session_id)
        assert stage is not None, "start always leaves an active stage"
        return stage

    async def current(self, task_id: str) -> Stage | None:
        async with self._uow_factory(read_only=True) as uow:
            return await uow.stages.active(task_id)

    async def get(self, stage_id: str) -> Stage:
        async with self._uow_factory(read_only=True) as uow:
            stage = await uow.stages.get(stage_id)
        if stage is None:
            raise StageNotFound("stage not found", stage_id=stage_id)
        return stage

    async def detail(
        self, stage_id: str, task_id: str | None = None
    ) -> tuple[Stage, StageMemory | None]:
        """The stage and its stage memory (None until compressed). With ``task_id``, another
        task's stage is not found."""
        async with self._uow_factory(read_only=True) as uow:
            stage = await uow.stages.get(stage_id)
            if stage is None or (task_id is not None and stage.task_id != task_id):
                raise StageNotFound("stage not found", stage_id=stage_id)
            return stage, await uow.stage_memories.get(stage_id)

    async def complete(self, task_id: str, stage_id: str) -> Stage:
        """End the task's active stage ``stage_id`` (a stage already completed is returned as
        it is) and claim its compression unless somebody has (the caller compresses it or
        submits the job). Raises ``StageNotFound``, or ``InvalidState`` for another task's
        stage."""
        async with self._uow_factory() as uow:
            await uow.stages.lock_task(task_id)
            stage = await uow.stages.get(stage_id, lock=True)
            if stage is None:
                raise StageNotFound("stage not found", stage_id=stage_id)
            if stage.task_id != task_id:
                raise InvalidState(
                    "the stage belongs to another task", stage_id=stage_id, task_id=task_id
                )
            now = self._clock()
            if stage.status is not StageStatus.COMPLETED:
                stage = replace(stage, status=StageStatus.COMPLETED, completed_at=now)
                await uow.stages.update(stage)
            await uow.stages.claim_compression(stage_id, now, None)
            await uow.commit()
        return stage

    async def stages_of(self, task_id: str) -> list[Stage]:
        """Oldest first."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.stages.of_task(task_id)

    async def pending_compression(
        self, limit: int = 100, claimed_before: datetime | None = None
    ) -> list[Stage]:
        """Completed stages without a stage memory yet, oldest completion first, whose
        compression nobody claimed (or, with a time, claimed before it)."""
        async with self._uow_factory(read_only=True) as uow:
            return await uow.stages.pending_compression(limit, claimed_before)

    async def claim_compression(self, stage_id: str, claimed_before: datetime | None) -> bool:
        """Whether this call claimed the stage's compression job (see ``pending_compression``):
        of the processes that find a stage pending, one submits its job."""
        async with self._uow_factory() as uow:
            claimed = await uow.stages.claim_compression(stage_id, self._clock(), claimed_before)
            await uow.commit()
        return claimed

    async def stage_for(self, task_id: str, memory: Memory) -> str | None:
        """``StageResolver``: the task's active stage id, after the transition ``memory``
        signals when automatic transitions are on; None when the task has no stage and the
        memory signals none."""
        async with self._uow_factory(read_only=True) as uow:
            active = await uow.stages.active(task_id)
        if not self._auto or self._decide(memory, active) is None:
            return None if active is None else active.id
        # Decided again in the write transaction, against the active stage it locked.
        stage = await self._switch(
            task_id,
            lambda current: self._decide(memory, current),
            memory.scope.agent_id,
            memory.scope.session_id,
        )
        return None if stage is None else stage.id

    async def save_stage_memory(self, memory: StageMemory) -> StageMemory:
        """Store the stage memory unless its stage has one (a concurrent compression was
        first); returns the one that stands."""
        async with self._uow_factory() as uow:
            if await uow.stage_memories.save(memory):
                await uow.commit()
                return memory
            existing = await uow.stage_memories.get(memory.stage_id)
        assert existing is not None, "a conflicting stage memory exists"
        return existing

    async def stage_memory(self, stage_id: str) -> StageMemory | None:
        async with self._uow_factory(read_only=True) as uow:
            return await uow.stage_memories.get(stage_id)

    async def stage_memories_of(self, task_id: str) -> list[StageMemory]:
        async with self._uow_factory(read_only=True) as uow:
            return await uow.stage_memories.of_task(task_id)

    async def save_task_context(self, context: TaskContext) -> None:
        async with self._uow_factory() as uow:
            await uow.task_contexts.save(context)
            await uow.commit()

    async def task_context(self, task_id: str) -> TaskContext | None:
        async with self._uow_factory(read_only=True) as uow:
            return await uow.task_contexts.get(task_id)

    def _decide(self, memory: Memory, active: Stage | None) -> _Decision:
        detection = self._detector.detect(memory, active, self._clock())
        if detection is None or (active is not None and detection.stage_type is active.stage_type):
            return None
        metadata = {"detection": {**detection.to_dict(), "trigger_memory_id": memory.id}}
        return _Move(detection.stage_type, detection.reason, metadata, detection.origin)

    async def _switch(
        self,
        task_id: str,
        decide: Callable[[Stage | None], _Decision],
        agent_id: str | None,
        session_id: str | None,
    ) -> Stage | None:
        """Apply ``decide`` to the task's active stage in one write transaction: end it and
        start the decided stage, or keep it. Returns the task's active stage afterwards."""
        for _ in range(_ATTEMPTS):
            try:
                async with self._uow_factory() as uow:
                    await uow.stages.lock_task(task_id)
                    active = await uow.stages.active(task_id, lock=True)
                    decision = decide(active)
                    if decision is None:
                        return active
                    stage = await self._apply(uow, task_id, active, decision, agent_id, session_id)
                    await uow.commit()
                    if decision.adopt:
                        return stage
            except Conflict:
                continue
            log.info(
                "task %s: stage %s -> %s (%s)",
                task_id,
                None if active is None else active.stage_type.value,
                decision.stage_type.value,
                decision.reason,
            )
            return stage
        raise Conflict("the task's stage is being changed concurrently; retry", task_id=task_id)

    async def _apply(
        self,
        uow: UnitOfWork,
        task_id: str,
        active: Stage | None,
        move: _Move,
        agent_id: str | None,
        session_id: str | None,
    ) -> Stage:
        """Declare the active stage (``adopt``), or end it and start the stage of ``move``."""
        if move.adopt and active is not None:
            adopted = replace(
                active, origin=move.origin, detect_transitions=move.detect_transitions
            )
            await uow.stages.update(adopted)
            return adopted
        now = self._clock()
        metadata = move.metadata
        if active is not None:
            metadata = {**metadata, "previous_stage_id": active.id}
            ended = replace(active, status=StageStatus.COMPLETED, completed_at=now)
            await uow.stages.update(ended)
        stage = Stage(
            id=new_id(),
            task_id=task_id,
            stage_type=move.stage_type,
            status=StageStatus.ACTIVE,
            started_at=now,
            agent_id=agent_id,
            session_id=session_id,
            reason=move.reason,
            metadata=metadata,
            origin=move.origin,
            detect_transitions=move.detect_transitions,
        )
        await uow.stages.add(stage)
        return stage


def _stage_type(value: StageType | str) -> StageType:
    parsed = parse_stage_type(value)
    if parsed is None:
        allowed = ", ".join(t.value for t in StageType)
        raise InvalidParams(
            f"unknown stage type {value!r}; expected one of: {allowed}",
            errors=[{"field": "stage_type", "message": f"one of: {allowed}"}],
        )
    return parsed
