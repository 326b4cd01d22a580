"""ErrorTracker on the real stack (SQLite + qdrant-edge, and PostgreSQL + Qdrant local mode, both
migrated by Alembic, real MiniLM embedder): records linked to real stages, history filters (stage
type through the ``stages`` table), patterns, the error memories and error-aware signals."""

from __future__ import annotations

from typing import Self

from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.error_records import SqlErrorRecordRepository
from agentcore.adapters.db.uow import SqlUnitOfWork, SqlUnitOfWorkFactory
from agentcore.bootstrap import Container
from agentcore.domain.clock import utcnow
from agentcore.domain.error_records import ErrorType, PatternType
from agentcore.domain.models import Layer, ScopeIds, ScopeLevel, StageType
from agentcore.services.errors import ErrorTracker, NewError
from agentcore.services.retrieval import SearchQuery


class _ErrorUnitOfWork(SqlUnitOfWork):
    """The SQL unit of work plus ``errors`` (until the composition root's carries it)."""

    async def __aenter__(self) -> Self:
        await super().__aenter__()
        session = self._session
        assert session is not None
        self.errors = SqlErrorRecordRepository(session, session.get_bind().dialect.name)
        return self


class _ErrorUnitOfWorkFactory(SqlUnitOfWorkFactory):
    def __call__(self, *, read_only: bool = False) -> _ErrorUnitOfWork:
        return _ErrorUnitOfWork(self._read_sessions if read_only else self._sessions)


def tracker(stack: Container, engine: AsyncEngine) -> ErrorTracker:
    return ErrorTracker(
        _ErrorUnitOfWorkFactory(engine),
        stack.memory,
        utcnow,
        enabled=True,
        threshold=2,
        max_content_length=stack.settings.memory_max_context_length,
    )


STALE = "The inventory lookup returned a stale stock count for warehouse {}"
CONTEXT = {"tool": "inventory_api", "operation": "lookup"}


async def test_record_history_and_patterns(stack: Container) -> None:
    errors = tracker(stack, stack.engine)
    planning = await stack.stages.start("t1", StageType.PLANNING, agent_id="a1")
    vague = await errors.record(
        NewError("t1", "missing_info", "The goal did not say which region", 0.4, agent_id="a1")
    )
    execution = await stack.stages.start("t1", StageType.EXECUTION, agent_id="a1")
    stale = [
        await errors.record(
            NewError(
                "t1",
                "incorrect_action",
                STALE.format(n),
                0.6 + n / 10,
                agent_id="a1",
                context={**CONTEXT, "warehouse": f"w{n}"},
            )
        )
        for n in range(3)
    ]
    other = await errors.record(
        NewError("t2", "hallucination", "Invented a delivery date", 0.9, agent_id="a2")
    )

    assert vague.record.stage_id == planning.id
    assert {s.record.stage_id for s in stale} == {execution.id}
    ids = [r.id for r in await errors.history(task_id="t1")]
    assert ids == [s.record.id for s in reversed(stale)] + [vague.record.id]
    in_planning = await errors.history(task_id="t1", stage_type="planning")
    assert [(r.id, r.stage_type) for r in in_planning] == [(vague.record.id, StageType.PLANNING)]
    severe = await errors.history(agent_id="a1", min_severity=0.7)
    assert [r.id for r in severe] == [stale[2].record.id, stale[1].record.id]
    assert [r.id for r in await errors.history(agent_id="a2")] == [other.record.id]
    [stored] = await errors.history(task_id="t1", limit=1)
    assert stored.context == {**CONTEXT, "warehouse": "w2"}
    assert stored.error_type is ErrorType.INCORRECT_ACTION

    report = await errors.patterns(task_id="t1")
    kinds = {(p.pattern_type, p.error_types) for p in report.patterns}
    assert (PatternType.FREQUENCY, (ErrorType.INCORRECT_ACTION,)) in kinds
    [context] = [p for p in report.patterns if p.pattern_type is PatternType.CONTEXT]
    assert set(context.error_ids) == {s.record.id for s in stale}
    assert "tool=inventory_api" in context.description
    assert report.analysed_errors == 4
    assert stale[-1].patterns == report.patterns
    assert (await errors.patterns(agent_id="a2")).patterns == []


async def test_error_memories_are_found_and_boosted(stack: Container) -> None:
    errors = tracker(stack, stack.engine)
    await stack.stages.start("t0", StageType.EXECUTION, agent_id="a1")
    fixed = await errors.record(
        NewError("t0", "incorrect_action", STALE.format("w7"), 0.7, agent_id="a1",
                 context=CONTEXT, recovery_action="Refresh the warehouse cache first.")
    )  # fmt: skip
    error_memory = await stack.memory.get(fixed.memory_ids[0], ScopeIds(task_id="t0"))
    assert (error_memory.layer, error_memory.critical) == (Layer.EPISODIC, True)
    assert error_memory.metadata["error_id"] == fixed.record.id

    # Another task of the agent meets the same situation: the recovery is retrieved ...
    await errors.record(NewError("t1", "incorrect_action", STALE.format("w9"), 0.5,
                                 agent_id="a1", context=CONTEXT))  # fmt: skip
    found = await stack.memory.search(
        SearchQuery("stale stock count from the inventory lookup", ScopeIds(agent_id="a1"))
    )
    [recovery] = [r.memory for r in found.results]
    assert recovery.id == fixed.memory_ids[1]
    assert (recovery.layer, recovery.scope_level) == (Layer.PROCEDURAL, ScopeLevel.AGENT)
    # ... and counts as error-correcting knowledge for it.
    signals = await errors.error_signals("t1", [recovery])
    assert signals == {recovery.id: 1.0}
