"""The SQL unit of work: one ``AsyncSession`` per ``async with``, rolled back unless committed."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from agentcore.adapters.db.costs import SqlCompressionMetricsRepository, SqlCostRepository
from agentcore.adapters.db.engine import READ_ONLY
from agentcore.adapters.db.episodes import SqlEpisodeRepository
from agentcore.adapters.db.error_records import SqlErrorRecordRepository
from agentcore.adapters.db.interventions import SqlInterventionRepository
from agentcore.adapters.db.repositories import (
    SqlHistoryRepository,
    SqlMemoryRepository,
    SqlOutboxRepository,
    SqlSettingsRepository,
)
from agentcore.adapters.db.stages import (
    SqlStageMemoryRepository,
    SqlStageRepository,
    SqlTaskContextRepository,
)
from agentcore.adapters.outages import as_provider_error
from agentcore.services.ports import (
    CompressionMetricsRepository,
    CostRepository,
    EpisodeRepository,
    ErrorRecordRepository,
    HistoryRepository,
    InterventionRepository,
    MemoryRepository,
    OutboxRepository,
    SettingsRepository,
    StageMemoryRepository,
    StageRepository,
    TaskContextRepository,
)


class SqlUnitOfWork:
    """``UnitOfWork`` over SQLAlchemy. The repositories exist only inside ``async with``."""

    memories: MemoryRepository
    history: HistoryRepository
    outbox: OutboxRepository
    store_settings: SettingsRepository
    episodes: EpisodeRepository
    costs: CostRepository
    stages: StageRepository
    stage_memories: StageMemoryRepository
    task_contexts: TaskContextRepository
    errors: ErrorRecordRepository
    compression_metrics: CompressionMetricsRepository
    interventions: InterventionRepository

    def __init__(self, session_factory: async_sessionmaker[AsyncSession]) -> None:
        self._session_factory = session_factory
        self._session: AsyncSession | None = None

    async def __aenter__(self) -> Self:
        if self._session is not None:
            raise RuntimeError("this unit of work is already open")
        session = self._session_factory()
        dialect = session.get_bind().dialect.name
        self._session = session
        self.memories = SqlMemoryRepository(session, dialect)
        self.history = SqlHistoryRepository(session)
        self.outbox = SqlOutboxRepository(session)
        self.store_settings = SqlSettingsRepository(session, dialect)
        self.episodes = SqlEpisodeRepository(session, dialect)
        self.costs = SqlCostRepository(session, dialect)
        self.stages = SqlStageRepository(session, dialect)
        self.stage_memories = SqlStageMemoryRepository(session, dialect)
        self.task_contexts = SqlTaskContextRepository(session, dialect)
        self.errors = SqlErrorRecordRepository(session, dialect)
        self.compression_metrics = SqlCompressionMetricsRepository(session, dialect)
        self.interventions = SqlInterventionRepository(session)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session, self._session = self._session, None
        if session is not None:
            # close() rolls back whatever was not committed and returns the connection.
            try:
                await session.close()
            except Exception as closing:
                if exc is None:
                    raise _named(closing) from closing
        if exc is not None and (outage := as_provider_error(exc)) is not None:
            raise outage from exc  # the database is out of reach: a retryable, named error

    async def commit(self) -> None:
        if self._session is None:
            raise RuntimeError("commit() outside `async with` of the unit of work")
        await self._session.commit()


class SqlUnitOfWorkFactory:
    """``UnitOfWorkFactory``: each call is a new, unopened ``SqlUnitOfWork`` on ``engine``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._sessions = async_sessionmaker(
            engine, class_=AsyncSession, expire_on_commit=False, autoflush=False
        )
        self._read_sessions = async_sessionmaker(
            engine.execution_options(**{READ_ONLY: True}),
            class_=AsyncSession,
            expire_on_commit=False,
            autoflush=False,
        )

    def __call__(self, *, read_only: bool = False) -> SqlUnitOfWork:
        return SqlUnitOfWork(self._read_sessions if read_only else self._sessions)


def _named(exc: Exception) -> Exception:
    return as_provider_error(exc) or exc


async def ping(engine: AsyncEngine) -> None:
    """Round trip to the database; raises if it cannot be reached."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
