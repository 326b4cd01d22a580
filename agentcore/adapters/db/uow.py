"""The SQL unit of work: one ``AsyncSession`` per ``async with``, rolled back unless committed."""

from __future__ import annotations

import asyncio
import sqlite3
from types import TracebackType
from typing import Self

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from agentcore.adapters.db.costs import SqlCompressionMetricsRepository, SqlCostRepository
from agentcore.adapters.db.engine import SQLITE_BUSY_TIMEOUT_MS, for_reads
from agentcore.adapters.db.episodes import SqlEpisodeRepository
from agentcore.adapters.db.error_records import SqlErrorRecordRepository
from agentcore.adapters.db.interventions import SqlInterventionRepository
from agentcore.adapters.db.outbox import SqlOutboxRepository
from agentcore.adapters.db.repositories import (
    SqlHistoryRepository,
    SqlMemoryRepository,
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

    def __init__(
        self,
        session_factory: async_sessionmaker[AsyncSession],
        writers: asyncio.Lock | None = None,
    ) -> None:
        self._session_factory = session_factory
        self._writers = writers
        self._writing = False
        self._session: AsyncSession | None = None

    async def __aenter__(self) -> Self:
        if self._session is not None:
            raise RuntimeError("this unit of work is already open")
        if self._writers is not None:
            await self._take_turn(self._writers)
        session = self._session_factory()
        dialect = session.get_bind().dialect.name
        self._session = session
        self.memories = SqlMemoryRepository(session, dialect)
        self.history = SqlHistoryRepository(session, dialect)
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
        try:
            if session is not None:
                # close() rolls back whatever was not committed and returns the connection.
                try:
                    await session.close()
                except Exception as closing:
                    if exc is None:
                        raise _named(closing) from closing
        finally:
            if self._writing and self._writers is not None:
                self._writing = False
                self._writers.release()
        if exc is not None and (outage := as_provider_error(exc)) is not None:
            raise outage from exc  # the database is out of reach: a retryable, named error

    async def commit(self) -> None:
        if self._session is None:
            raise RuntimeError("commit() outside `async with` of the unit of work")
        await self._session.commit()

    async def _take_turn(self, writers: asyncio.Lock) -> None:
        """SQLite writes one transaction at a time: a writing unit of work waits for its turn
        (first come, first served) before it takes a pooled connection, so the writers that
        wait never hold the connections that reads need."""
        try:
            async with asyncio.timeout(SQLITE_BUSY_TIMEOUT_MS / 1000):
                await writers.acquire()
        except TimeoutError:
            raise _named(sqlite3.OperationalError("database is locked")) from None
        self._writing = True


class SqlUnitOfWorkFactory:
    """``UnitOfWorkFactory``: each call is a new, unopened ``SqlUnitOfWork`` on ``engine``."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._writers = asyncio.Lock() if engine.dialect.name == "sqlite" else None
        self._sessions = async_sessionmaker(
            engine, class_=AsyncSession, expire_on_commit=False, autoflush=False
        )
        self._read_sessions = async_sessionmaker(
            for_reads(engine),
            class_=AsyncSession,
            expire_on_commit=False,
            autoflush=False,
        )

    def __call__(self, *, read_only: bool = False) -> SqlUnitOfWork:
        if read_only:
            return SqlUnitOfWork(self._read_sessions)
        return SqlUnitOfWork(self._sessions, self._writers)


def _named(exc: Exception) -> Exception:
    return as_provider_error(exc) or exc


async def ping(engine: AsyncEngine) -> None:
    """Round trip to the database; raises if it cannot be reached."""
    async with engine.connect() as connection:
        await connection.execute(text("SELECT 1"))
