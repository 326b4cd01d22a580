"""Schema migrations: ``upgrade(url)`` runs ``alembic upgrade head`` in-process.

The Alembic scripts ship inside the package (``migrations/`` beside this file), so an
installed wheel migrates as a checkout does, from any working directory; ``alembic.ini`` at
the project root only serves the ``alembic`` command line in a checkout. Call ``upgrade``
before the event loop starts or through ``asyncio.to_thread``: the Alembic environment runs
its own loop.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from agentcore.domain.errors import ConfigurationError

SCRIPT_LOCATION = Path(__file__).resolve().parent / "migrations"


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
    """Bring the database at ``url`` to the newest schema (a no-op when it is already there)."""
    command.upgrade(alembic_config(url), "head")
