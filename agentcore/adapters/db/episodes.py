"""Episodes in SQL: the ``episodes`` table (revision 0002) and its repository.

An episode row lists the ids of the memories it holds (``memory_ids``), which keeps the trace of
items whose memories were later pruned into a summary. The memories point back through their
``metadata.episode_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Index, Integer, Select, String, Table, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from agentcore.adapters.db.dialect import chunks, upsert
from agentcore.adapters.db.tables import ID_LEN, UUID_LEN, Base
from agentcore.adapters.db.types import UTCDateTime, json_type
from agentcore.domain.episodes import Episode, EpisodeStatus
from agentcore.services.ports import EpisodeQuery


class EpisodeRow(Base):
    __tablename__ = "episodes"

    id: Mapped[str] = mapped_column(String(UUID_LEN), primary_key=True)
    scope_key: Mapped[str] = mapped_column(String(ID_LEN + 16))
    session_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    task_id: Mapped[str | None] = mapped_column(String(ID_LEN), index=True)
    stage_id: Mapped[str | None] = mapped_column(String(ID_LEN))
    status: Mapped[str] = mapped_column(String(16))  # open | closed | summarized
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime] = mapped_column(UTCDateTime())
    item_count: Mapped[int] = mapped_column(Integer)
    memory_ids: Mapped[list[str]] = mapped_column(json_type(), nullable=False)
    summary_memory_id: Mapped[str | None] = mapped_column(String(UUID_LEN))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        # Newest-first pages and the cap's "oldest beyond the newest N" within one scope.
        Index("ix_episodes_keyset", "scope_key", "started_at", "id"),
        # The open episode of a session.
        Index("ix_episodes_open", "scope_key", "session_id", "status"),
    )


_TABLE = cast(Table, EpisodeRow.__table__)


def _values(episode: Episode) -> dict[str, Any]:
    return {
        "id": episode.id,
        "scope_key": episode.scope_key,
        "session_id": episode.session_id,
        "task_id": episode.task_id,
        "stage_id": episode.stage_id,
        "status": episode.status.value,
        "started_at": episode.started_at,
        "ended_at": episode.ended_at,
        "item_count": len(episode.memory_ids),
        "memory_ids": list(episode.memory_ids),
        "summary_memory_id": episode.summary_memory_id,
        "created_at": episode.created_at,
        "updated_at": episode.updated_at,
    }


def _episode(row: EpisodeRow) -> Episode:
    return Episode(
        id=row.id,
        scope_key=row.scope_key,
        session_id=row.session_id,
        task_id=row.task_id,
        stage_id=row.stage_id,
        status=EpisodeStatus(row.status),
        started_at=row.started_at,
        ended_at=row.ended_at,
        memory_ids=tuple(row.memory_ids or ()),
        created_at=row.created_at,
        updated_at=row.updated_at,
        summary_memory_id=row.summary_memory_id,
    )


def _select() -> Select[EpisodeRow]:
    # populate_existing: a row re-read in the same transaction reflects updates made since.
    return select(EpisodeRow).execution_options(populate_existing=True)


def _newest_first() -> tuple[ColumnElement[Any], ...]:
    return (EpisodeRow.started_at.desc(), EpisodeRow.id.desc())


class SqlEpisodeRepository:
    """``EpisodeRepository`` over one ``AsyncSession`` (the unit of work's)."""

    def __init__(self, session: AsyncSession, dialect: str) -> None:
        self._session = session
        self._dialect = dialect

    async def get_many(self, episode_ids: Sequence[str], *, lock: bool = False) -> list[Episode]:
        """Found episodes only. ``lock`` takes row locks until commit (Postgres; SQLite's
        write transactions already hold the database lock)."""
        found: list[Episode] = []
        for part in chunks(list(dict.fromkeys(episode_ids))):
            stmt = _select().where(EpisodeRow.id.in_(part))
            if lock:
                stmt = stmt.with_for_update()
            found.extend(_episode(row) for row in await self._session.scalars(stmt))
        return found

    async def open_for(self, scope_key: str, session_id: str | None) -> Episode | None:
        session_match = (
            EpisodeRow.session_id.is_(None)
            if session_id is None
            else EpisodeRow.session_id == session_id
        )
        stmt = (
            _select()
            .where(
                EpisodeRow.scope_key == scope_key,
                session_match,
                EpisodeRow.status == EpisodeStatus.OPEN.value,
            )
            .order_by(*_newest_first())
            .limit(1)
        )
        row = (await self._session.scalars(stmt)).first()
        return None if row is None else _episode(row)

    async def overlapping(self, scope_key: str, since: datetime, until: datetime) -> list[Episode]:
        stmt = _select().where(
            EpisodeRow.scope_key == scope_key,
            EpisodeRow.started_at <= until,
            EpisodeRow.ended_at >= since,
        )
        return [_episode(row) for row in await self._session.scalars(stmt)]

    async def save(self, episode: Episode) -> None:
        await self._session.execute(upsert(self._dialect, _TABLE, _values(episode), key="id"))

    async def page(self, query: EpisodeQuery) -> tuple[list[Episode], int]:
        if not query.scope_keys:
            return [], 0
        conditions = _filters(query)
        if query.after is not None:
            started_at, episode_id = query.after
            conditions.append(
                (EpisodeRow.started_at < started_at)
                | ((EpisodeRow.started_at == started_at) & (EpisodeRow.id < episode_id))
            )
        stmt = _select().where(*conditions).order_by(*_newest_first()).limit(max(query.limit, 0))
        episodes = [_episode(row) for row in await self._session.scalars(stmt)]
        count = select(func.count()).select_from(_TABLE).where(*_filters(query))
        return episodes, int((await self._session.execute(count)).scalar_one())

    async def closed_since(self, since: datetime | None, limit: int) -> list[Episode]:
        stmt = _select().where(EpisodeRow.status == EpisodeStatus.CLOSED.value)
        if since is not None:
            stmt = stmt.where(EpisodeRow.updated_at > since)
        stmt = stmt.order_by(EpisodeRow.updated_at, EpisodeRow.id).limit(limit)
        return [_episode(row) for row in await self._session.scalars(stmt)]

    async def beyond_cap(self, scope_key: str, keep: int) -> list[Episode]:
        stmt = (
            _select()
            .where(
                EpisodeRow.scope_key == scope_key,
                EpisodeRow.status != EpisodeStatus.SUMMARIZED.value,
            )
            .order_by(*_newest_first())
            .offset(keep)
        )
        rows = [_episode(row) for row in await self._session.scalars(stmt)]
        return rows[::-1]


def _filters(query: EpisodeQuery) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [EpisodeRow.scope_key.in_(list(query.scope_keys))]
    if query.session_id is not None:
        conditions.append(EpisodeRow.session_id == query.session_id)
    if query.task_id is not None:
        conditions.append(EpisodeRow.task_id == query.task_id)
    if query.stage_id is not None:
        conditions.append(EpisodeRow.stage_id == query.stage_id)
    if query.status is not None:
        conditions.append(EpisodeRow.status == query.status.value)
    # Overlap of [started_at, ended_at] with [since, until].
    if query.since is not None:
        conditions.append(EpisodeRow.ended_at >= query.since)
    if query.until is not None:
        conditions.append(EpisodeRow.started_at <= query.until)
    return conditions
