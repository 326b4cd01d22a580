"""``memory.context``: what an agent should know right now, as one prompt-ready block within a
token budget (the packing and its policy: ``agentcore.domain.context_block``).

Each section's candidates come from the service that owns them, with the caller's scope ids,
so the block shows exactly what those services would show the caller:

- **critical**: with ``task_id``, the task's critical constraints (``memory.task.progress``:
  every stage's, the active one's included), each traced to the task memory that states it
  when one of the newest ``ATTRIBUTION_PAGES`` pages holds it (else it carries the task id);
  and the memories the caller flagged critical among the relevant memories below. Flagged
  memories first, then by importance, then in the task's order.
- **stage**: with ``task_id``, the current stage (or the last one), its summary once
  compressed, the task's progress brief, then the earlier stages' summaries, newest first.
- **working**: with ``session_id``, the session's working memory, newest items first.
- **memories**: episodic and semantic memories: ``memory.search`` of the query (the full
  score, ``current_stage`` defaulting to the task's active stage), those whose relevance to
  the query is at least ``RELEVANCE_FLOOR`` of the best match's (and a slot's current value
  the search put first); or without a query the newest ``RECENT`` of each layer ranked by
  recency and importance alike. The error tracker's
  memories go to the error lessons instead; a result a newer memory superseded is marked.
- **procedures**: ``memory.procedure.search`` of the query (the relevant ones), or without a
  query the newest procedures.
- **errors**: with ``task_id`` (else ``agent_id``), the error patterns (most severe first)
  and the newest errors with their recoveries.

``layers`` leaves out what it does not name: ``working`` the working memory, ``episodic`` and
``semantic`` the memories searched, ``procedural`` the procedures. A task without stages is
no error (agents ask for context before they start one): its stage section is empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcore.domain.clock import Clock
from agentcore.domain.context_block import (
    MAX_TOKENS,
    MIN_TOKENS,
    Candidate,
    ContextBlock,
    Section,
    one_line,
    pack,
)
from agentcore.domain.error_records import MEMORY_SOURCE as ERROR_SOURCE
from agentcore.domain.error_records import ErrorPattern, ErrorRecord
from agentcore.domain.errors import InvalidParams
from agentcore.domain.fact_checks import covered
from agentcore.domain.fact_text import terms
from agentcore.domain.importance import CRITICAL as REQUIREMENT
from agentcore.domain.models import Layer, Memory, ScopeIds
from agentcore.domain.records import parse_layer
from agentcore.domain.scopes import visible_scope_keys
from agentcore.domain.scoring import criticality, recency
from agentcore.domain.stages import Stage, StageMemory, StageStatus, TaskContext
from agentcore.services.compass.orchestration import CompassService
from agentcore.services.compass.stages import StageManager
from agentcore.services.errors import ErrorTracker
from agentcore.services.memory_manager import ListRequest, MemoryManager
from agentcore.services.procedural import PROCEDURE, ProceduralMemoryService
from agentcore.services.retrieval import SearchQuery
from agentcore.services.working_memory import TokenCounter, WorkingItem, WorkingMemoryService

ALL_LAYERS = tuple(layer.value for layer in Layer)
_SEARCHED = (Layer.EPISODIC, Layer.SEMANTIC)
RECENT = 50  # memories of each layer read, without a query
PROCEDURES = 5
ERRORS = 10  # newest errors of the task (or agent)
PATTERNS = 3  # most severe error patterns
ATTRIBUTION_PAGES = 5  # pages of 100 task memories searched for a constraint's source
_PAGE = 100
_TOKENS_PER_HIT = 20  # search results asked for per budget token: enough to fill it
# A searched memory is shown only when its relevance to the query is at least this share of
# the best match's: budget left over is not filled with memories about something else (whose
# calibrated relevance is a few hundredths of the best match's, where a weaker match of the
# same matter keeps a tenth or more).
RELEVANCE_FLOOR = 0.2


@dataclass(frozen=True, slots=True)
class ContextRequest:
    scope: ScopeIds
    max_tokens: int
    query: str | None = None
    layers: Sequence[str] | None = None  # None: all four
    current_stage: str | None = None  # a stage type; None: the task's active stage


@dataclass(frozen=True, slots=True)
class Context:
    block: ContextBlock
    current_stage: str | None  # the stage the memories were ranked for
    tokenizer: str


@dataclass(frozen=True, slots=True)
class _Task:
    task_id: str
    stages: list[Stage]  # oldest first
    progress: TaskContext
    summaries: dict[str, StageMemory]  # by stage id

    @property
    def active(self) -> Stage | None:
        return next((s for s in self.stages if s.status is StageStatus.ACTIVE), None)


class ContextService:
    def __init__(
        self,
        memory: MemoryManager,
        working: WorkingMemoryService,
        procedural: ProceduralMemoryService,
        errors: ErrorTracker,
        stages: StageManager,
        compass: CompassService,
        tokens: TokenCounter,
        clock: Clock,
        *,
        recency_half_life_hours: float = 168.0,
    ) -> None:
        self._memory = memory
        self._working = working
        self._procedural = procedural
        self._errors = errors
        self._stages = stages
        self._compass = compass
        self._tokens = tokens
        self._clock = clock
        self._half_life = recency_half_life_hours

    async def build(self, request: ContextRequest) -> Context:
        """The block for ``request`` (module doc). ``MissingIdentifier`` without a scope id,
        ``InvalidParams`` for a budget outside ``MIN_TOKENS``..``MAX_TOKENS``."""
        scope = request.scope
        visible_scope_keys(scope)  # refuses a call without scope ids before any work
        if not MIN_TOKENS <= request.max_tokens <= MAX_TOKENS:
            raise InvalidParams(
                f"max_tokens must be {MIN_TOKENS} to {MAX_TOKENS}",
                errors=[{"field": "max_tokens", "message": f"{MIN_TOKENS} to {MAX_TOKENS}"}],
            )
        layers = {parse_layer(v, allow_working=True) for v in request.layers or ALL_LAYERS}
        stages = [] if scope.task_id is None else await self._stages.stages_of(scope.task_id)
        active = next((s for s in stages if s.status is StageStatus.ACTIVE), None)
        stage = request.current_stage or (None if active is None else active.stage_type.value)
        task, found, procedures, working, errors = await asyncio.gather(
            self._task(stages),
            self._memories(request, layers, stage),
            self._procedures(request, layers),
            self._working_items(scope, layers),
            self._error_lessons(scope),
        )
        memories = [(m, marked) for m, marked in found if m.source != ERROR_SOURCE]
        offered = {
            Section.CRITICAL: await self._critical(scope, task, [m for m, _ in memories]),
            Section.STAGE: [] if task is None else _stage_items(task),
            Section.WORKING: working,
            Section.MEMORIES: [_memory_item(m, marked) for m, marked in memories],
            Section.PROCEDURES: procedures,
            Section.ERRORS: errors,
        }
        block = pack(offered, request.max_tokens, self._tokens.count)
        return Context(block, stage, self._tokens.name)

    async def _task(self, stages: list[Stage]) -> _Task | None:
        if not stages:
            return None
        task_id = stages[0].task_id
        progress = await self._compass.task_progress(task_id)
        summaries = {m.stage_id: m for m in await self._stages.stage_memories_of(task_id)}
        # task_progress may have compressed stages that were waiting: read them after it
        return _Task(task_id, await self._stages.stages_of(task_id), progress, summaries)

    async def _memories(
        self, request: ContextRequest, layers: set[Layer], stage: str | None
    ) -> list[tuple[Memory, bool]]:
        """Ranked memories, each with whether a newer memory superseded it."""
        wanted = [layer.value for layer in _SEARCHED if layer in layers]
        if not wanted:
            return []
        if request.query is not None:
            found = await self._memory.search(
                SearchQuery(
                    query=request.query,
                    scope=request.scope,
                    layers=wanted,
                    limit=max(10, min(100, request.max_tokens // _TOKENS_PER_HIT)),
                    current_stage=stage,
                )
            )
            best = max((hit.similarity for hit in found.results), default=0.0)
            return [
                (hit.memory, hit.superseded_by is not None)
                for hit in found.results
                if hit.similarity >= RELEVANCE_FLOOR * best or hit.current_for is not None
            ]
        recent: list[Memory] = []
        for layer in wanted:
            page = await self._memory.list_page(
                ListRequest(request.scope, layer=layer, limit=RECENT)
            )
            recent += page.memories
        now = self._clock()

        def rank(m: Memory) -> float:
            return recency(m, now, self._half_life) + criticality(m)

        return [(m, m.superseded_by is not None) for m in sorted(recent, key=rank, reverse=True)]

    async def _procedures(self, request: ContextRequest, layers: set[Layer]) -> list[Candidate]:
        if Layer.PROCEDURAL not in layers:
            return []
        if request.query is not None:
            matches = await self._procedural.search(request.query, request.scope, limit=PROCEDURES)
            found = [m.procedure for m in matches if m.relevant]
        else:
            page = await self._memory.list_page(
                ListRequest(
                    request.scope,
                    layer=Layer.PROCEDURAL.value,
                    metadata={"kind": PROCEDURE},
                    limit=PROCEDURES,
                )
            )
            found = page.memories
        return [Candidate(m.id, "memory", one_line(m.content)) for m in found]

    async def _working_items(self, scope: ScopeIds, layers: set[Layer]) -> list[Candidate]:
        if Layer.WORKING not in layers or scope.session_id is None:
            return []
        view = await self._working.get(scope.session_id)
        return [_working_item(item) for item in reversed(view.items)]

    async def _error_lessons(self, scope: ScopeIds) -> list[Candidate]:
        """The task's error patterns and newest errors (else the agent's, across its tasks)."""
        if scope.task_id is None and scope.agent_id is None:
            return []
        task_id = scope.task_id
        agent_id = None if task_id is not None else scope.agent_id
        records = await self._errors.history(task_id=task_id, agent_id=agent_id, limit=ERRORS)
        if not records:
            return []
        report = await self._errors.patterns(task_id=task_id, agent_id=agent_id)
        patterns = [p for p in report.patterns if p.error_ids][:PATTERNS]
        return [_pattern_item(p) for p in patterns] + [_error_item(r) for r in records]

    async def _critical(
        self, scope: ScopeIds, task: _Task | None, relevant: list[Memory]
    ) -> list[Candidate]:
        """Flagged memories first, then by importance, then in the task's order (module doc)."""
        ranked: list[tuple[tuple[bool, float, int], Candidate]] = []
        constraints = () if task is None else task.progress.critical_constraints
        sources = await self._sources(scope, constraints) if constraints else {}
        stated: dict[str, tuple[Memory, list[str]]] = {}  # a memory's constraints, together
        for constraint in constraints:
            source = sources.get(constraint)
            if source is not None:
                stated.setdefault(source.id, (source, []))[1].append(one_line(constraint))
            else:  # a requirement of the task whose memory is older than the pages read
                assert task is not None
                item = Candidate(task.task_id, "task", one_line(constraint))
                ranked.append(((True, -REQUIREMENT, len(ranked)), item))
        for memory, texts in stated.values():
            item = Candidate(memory.id, "memory", " ".join(texts))
            ranked.append(((not memory.flagged, -memory.importance, len(ranked)), item))
        for memory in relevant:
            if memory.flagged:
                item = Candidate(memory.id, "memory", one_line(memory.content))
                ranked.append(((False, -memory.importance, len(ranked)), item))
        ranked.sort(key=lambda pair: pair[0])
        return [candidate for _, candidate in ranked]

    async def _sources(self, scope: ScopeIds, constraints: Sequence[str]) -> dict[str, Memory]:
        """The task memory stating each constraint, where one of the newest pages holds it."""
        wanted = {c: terms(c) for c in constraints}
        found: dict[str, Memory] = {}
        after: tuple[datetime, str] | None = None
        for _ in range(ATTRIBUTION_PAGES):
            page = await self._memory.list_page(
                ListRequest(scope, scope_level="task", after=after, limit=_PAGE)
            )
            # requirement-stating memories first: constraints come from them
            memories = sorted(page.memories, key=lambda m: not m.critical)
            for memory in memories:
                if memory.source == ERROR_SOURCE or not wanted:
                    continue
                stated = terms(memory.content)
                for constraint, needed in list(wanted.items()):
                    if covered(needed, stated):
                        found[constraint] = memory
                        del wanted[constraint]
            after = page.next_after
            if not wanted or after is None:
                break
        return found


def _memory_item(memory: Memory, superseded: bool) -> Candidate:
    text = one_line(memory.content)
    return Candidate(memory.id, "memory", f"{text} (superseded)" if superseded else text)


def _working_item(item: WorkingItem) -> Candidate:
    if item.kind.value != "message":
        label = f"{item.kind.value.capitalize()}: "
    else:
        label = "" if item.role is None else f"{item.role.value}: "
    return Candidate(item.id, "working_item", one_line(item.content), label)


def _stage_items(task: _Task) -> list[Candidate]:
    """The current (else the last) stage, its summary, the brief, earlier summaries."""
    current = task.active or task.stages[-1]
    if current.status is StageStatus.ACTIVE:
        line = f"Task {task.task_id}: current stage {current.stage_type.value}, active since "
        line += _when(current.started_at)
    else:
        line = f"Task {task.task_id}: no active stage; the last, {current.stage_type.value}, "
        line += f"completed {_when(current.completed_at or current.started_at)}"
    done = [s.stage_type.value for s in task.stages if s.status is StageStatus.COMPLETED]
    if done:
        line += f"; completed stages: {', '.join(done)}"
    items = [Candidate(current.id, "stage", line)]
    if current.id in task.summaries:
        items.append(_summary(current, task.summaries[current.id]))
    if task.progress.progress_summary:
        brief = one_line(task.progress.progress_summary)
        items.append(Candidate(task.task_id, "task", brief, "Progress so far: "))
    earlier = [s for s in task.stages if s.id in task.summaries and s.id != current.id]
    items += [_summary(s, task.summaries[s.id]) for s in reversed(earlier)]
    return items


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _sentence(text: str) -> str:
    """One line ending as a sentence does, so another can follow it."""
    text = one_line(text)
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."


def _summary(stage: Stage, memory: StageMemory) -> Candidate:
    label = f"Summary of the {stage.stage_type.value} stage: "
    return Candidate(stage.id, "stage", one_line(memory.summary), label)


def _pattern_item(pattern: ErrorPattern) -> Candidate:
    label = (
        f"Recurring ({pattern.pattern_type.value}, {pattern.occurrences}x, severity "
        f"{pattern.severity:.2f}): "
    )
    text = f"{_sentence(pattern.description)} Do: {_sentence(pattern.recommendation)}"
    return Candidate(pattern.error_ids[0], "error_pattern", text, label)


def _error_item(record: ErrorRecord) -> Candidate:
    label = f"{record.error_type.value} error (severity {record.severity:.2f}): "
    text = _sentence(record.description)
    if record.recovery_action:
        text += f" Recovery: {_sentence(record.recovery_action)}"
    return Candidate(record.id, "error", text, label)
