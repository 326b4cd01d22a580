"""Schema migrations: ``upgrade(url)`` runs ``alembic upgrade head`` in-process.

The Alembic scripts live in the project checkout (``alembic.ini`` and ``alembic/`` beside the
``agentcore`` package); they are found from this file's location, so any working directory
works. Call it before the event loop starts or through ``asyncio.to_thread``: the Alembic
environment runs its own loop.
"""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

from agentcore.domain.errors import ConfigurationError
from alembic import command

PROJECT_ROOT = Path(__file__).resolve().parents[3]
ALEMBIC_INI = PROJECT_ROOT / "alembic.ini"
SCRIPT_LOCATION = PROJECT_ROOT / "alembic"


def alembic_config(url: str) -> Config:
    """The Alembic configuration for ``url``, independent of the working directory."""
    if not (SCRIPT_LOCATION / "env.py").is_file():
        raise ConfigurationError(
            f"database migrations not found at {SCRIPT_LOCATION}; "
            "run from a checkout of the project (pip install -e .)"
        )
    config = Config(str(ALEMBIC_INI) if ALEMBIC_INI.is_file() else None)
    config.set_main_option("script_location", str(SCRIPT_LOCATION).replace("%", "%%"))
    config.attributes["url"] = url
    # The application owns logging; alembic.ini's logging section is for the alembic CLI.
    config.attributes["configure_logging"] = False
    return config


def upgrade(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (a no-op when it is already there)."""
    command.upgrade(alembic_config(url), "head")
