"""Alembic environment: async engine, one transaction, SQLite batch mode.

The URL comes from ``-x url=...``, else ``config.attributes["url"]`` (set by
``agentcore.adapters.db.migrate``), else the settings (``DATABASE_URL`` or the embedded file).
Each migration run is appended, as (from, to), to ``config.attributes["applied"]`` when the
caller passed that list (``migrate.upgrade`` logs one line from it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from logging.config import fileConfig
from typing import Any

from alembic import context
from alembic.runtime.migration import MigrationContext, MigrationInfo
from sqlalchemy import text
from sqlalchemy.engine import Connection, make_url

import agentcore.adapters.db.episodes  # noqa: F401  (registers the episodes table)
from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.tables import Base
from agentcore.config import load_settings

# Postgres: concurrent upgrades (several replicas starting at once) take turns on this lock.
_PG_LOCK_KEY = 0x61676E746D656D  # "agntmem"

config = context.config
target_metadata = Base.metadata


def _not_lexical(name: str | None, kind: str, _parent: object) -> bool:
    """The lexical index's tables (FTS5 / full text) are managed by their migration only."""
    return not (kind == "table" and (name or "").startswith("memory_lexical"))


def _applied(
    ctx: MigrationContext, step: MigrationInfo, heads: Collection[Any], run_args: Mapping[str, Any]
) -> None:
    applied = config.attributes.get("applied")
    if isinstance(applied, list) and step.is_migration:
        came_from, went_to = step.source_revision_ids, step.destination_revision_ids
        applied.append((", ".join(came_from), ", ".join(went_to)))


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.attributes.get("url")
    return str(url) if url else load_settings().sqlalchemy_url


def _run_offline(url: str) -> None:
    context.configure(
        url=url,
        target_metadata=target_metadata,
        include_name=_not_lexical,
        render_as_batch=make_url(url).get_backend_name() == "sqlite",
        compare_type=True,
        on_version_apply=_applied,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_sync(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_name=_not_lexical,
        render_as_batch=sqlite,
        compare_type=True,
        on_version_apply=_applied,
        # The engine issues SQLite's BEGIN itself, so DDL there is transactional too: a
        # failed migration leaves no half-built schema.
        transactional_ddl=True if sqlite else None,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        context.run_migrations()


async def _run_online(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run_sync)
    finally:
        await engine.dispose()


def main() -> None:
    if config.config_file_name is not None and config.attributes.get("configure_logging", True):
        fileConfig(config.config_file_name, disable_existing_loggers=False)
    url = _url()
    if context.is_offline_mode():
        _run_offline(url)
    else:
        asyncio.run(_run_online(url))


main()
