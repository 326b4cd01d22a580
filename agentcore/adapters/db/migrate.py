"""Schema migrations: ``upgrade(url)`` runs ``alembic upgrade head`` in-process, and
``SchemaCheck`` holds the service back until its database is at that head.

The Alembic scripts live in ``alembic/`` at the top of the repository; the wheel carries them
inside the package as ``agentcore/_alembic`` (pyproject.toml maps the folder there), so an
installed copy migrates as a checkout does, from any working directory. ``alembic.ini`` only
serves the ``alembic`` command line in a checkout. Call ``upgrade`` before the event loop starts
or through ``asyncio.to_thread``: the Alembic environment runs its own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.outages import DATABASE, names_outages
from agentcore.domain.errors import ConfigurationError, ProviderError

log = logging.getLogger(__name__)

_PACKAGE = Path(__file__).resolve().parents[2]


def _script_location() -> Path:
    # An installed wheel: inside the package. A checkout (an editable install too): the
    # repository's alembic/ beside the package.
    for candidate in (_PACKAGE / "_alembic", _PACKAGE.parent / "alembic"):
        if (candidate / "env.py").is_file():
            return candidate
    return _PACKAGE / "_alembic"


SCRIPT_LOCATION = _script_location()


def alembic_config(url: str) -> Config:
    """The Alembic configuration for ``url``, independent of the working directory."""
    if not (SCRIPT_LOCATION / "env.py").is_file():
        raise ConfigurationError(
            f"database migrations not found at {SCRIPT_LOCATION}; reinstall agentcore-memory"
        )
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION).replace("%", "%%"))
    config.attributes["url"] = url
    # The application owns logging (alembic.ini's logging section is for the alembic CLI).
    config.attributes["configure_logging"] = False
    return config


def upgrade(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (a no-op when it is already there).

    Logs one line, e.g. ``database schema at 0011 (was empty; applied 11 migrations in
    0.42 s)`` or ``database schema at 0011, up to date``; Alembic's own lines (one per
    migration) are held back to warnings."""
    config = alembic_config(url)
    applied: list[tuple[str, str]] = []  # (from, to) per migration, filled in by env.py
    config.attributes["applied"] = applied
    started = time.perf_counter()
    with _alembic_quiet():
        command.upgrade(config, "head")
    head = head_revision()
    if not applied:
        log.info("database schema at %s, up to date", head)
        return
    was = applied[0][0] or "empty"
    log.info(
        "database schema at %s (was %s; applied %d migration%s in %.2f s)",
        head,
        was if was == "empty" else f"at {was}",
        len(applied),
        "" if len(applied) == 1 else "s",
        time.perf_counter() - started,
    )


@contextlib.contextmanager
def _alembic_quiet() -> Iterator[None]:
    logger = logging.getLogger("alembic")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


@cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(""))


def head_revision() -> str:
    """The newest schema revision this release knows."""
    head = _scripts().get_current_head()
    assert head is not None, "the migrations have one head"
    return head


def _revision(connection: Connection) -> str | None:
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


class SchemaCheck:
    """Start-up work: the database must be at this release's head before calls are taken.

    Behind (a fresh database, or one an older release migrated): with ``migrate`` the service
    upgrades it itself, else it waits, not ready, saying that ``agentcore migrate`` is needed,
    and looks again every retry (a migration Job that finishes meanwhile is seen). A revision
    this release does not know (a newer release migrated it) refuses every call for good."""

    def __init__(self, engine: AsyncEngine, url: str, *, migrate: bool) -> None:
        self._engine = engine
        self._url = url
        self._migrate = migrate

    @names_outages(DATABASE)
    async def __call__(self) -> None:
        async with self._engine.connect() as connection:
            current = await connection.run_sync(_revision)
        head = head_revision()
        if current == head:
            return
        if current is not None and not _known(current):
            raise ConfigurationError(
                f"the database schema is at revision {current}, which this release does not "
                f"know (its newest is {head}): a newer release migrated it; run that release"
            )
        said = "empty" if current is None else f"at revision {current}"
        if not self._migrate:
            raise ProviderError(
                f"the database schema is {said} and this release needs {head}: run "
                "`agentcore migrate` (or serve with AGENTCORE_MIGRATE_ON_START=true)",
                store=DATABASE,
            )
        await asyncio.to_thread(upgrade, self._url)  # logs the one line of what it did


def _known(revision: str) -> bool:
    try:
        return _scripts().get_revision(revision) is not None
    except CommandError:  # an unknown or malformed id
        return False
