"""``upgrade(url)``: the scripts of a checkout (alembic/ at the top of the repository), and one
log line for what it did, Alembic's own lines (one per migration) held back."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from agentcore.adapters.db.memory_rows import memory_values
from agentcore.adapters.db.migrate import SCRIPT_LOCATION, alembic_config, head_revision, upgrade
from agentcore.adapters.db.tables import MemoryRow
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory, build_memory, content_hash

ROOT = Path(__file__).resolve().parents[2]


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(record.name, record.getMessage()) for record in caplog.records]


def test_a_checkout_migrates_from_the_top_level_alembic_folder() -> None:
    assert SCRIPT_LOCATION == ROOT / "alembic"


def test_a_fresh_database_is_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    migrations = len(list(ScriptDirectory(str(SCRIPT_LOCATION)).walk_revisions()))
    caplog.set_level(logging.DEBUG, logger="alembic")  # even when asked for all it says
    caplog.set_level(logging.INFO)

    upgrade(url)

    [(logger, message)] = _lines(caplog)
    assert logger == "agentcore.adapters.db.migrate"
    pattern = rf"database schema at {head_revision()} \(was empty; applied {migrations} "
    assert re.fullmatch(pattern + r"migrations in \d+\.\d\d s\)", message), message
    assert logging.getLogger("alembic").level == logging.DEBUG  # as the caller had set it


def test_an_older_schema_and_an_up_to_date_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'older.db'}"
    head = head_revision()
    before = ScriptDirectory(str(SCRIPT_LOCATION)).get_revision(head).down_revision
    assert isinstance(before, str)
    command.upgrade(alembic_config(url), before)  # what an older release left
    caplog.clear()
    caplog.set_level(logging.INFO)

    upgrade(url)
    upgrade(url)

    pattern = rf"database schema at {head} \(was at {before}; applied 1 migration in \d+\.\d\d s\)"
    [(_, first), (_, second)] = _lines(caplog)
    assert re.fullmatch(pattern, first), first
    assert second == f"database schema at {head}, up to date"


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_0012_hashes_the_stored_texts(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A store from before 0012 gets every memory's content hash, so that a repeat of a text
    stored then is found as one stored after."""
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'hashes.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    upgrade(url)
    texts = ["I prefer green tea.", "Deploys  go through the blue pool first.\n"]
    memories = [
        build_memory(NewMemory(text, ScopeIds(user_id="u")), datetime.now(UTC), 10_000, "m")
        for text in texts
    ]
    engine = sa.create_engine(url.replace("+aiosqlite", "").replace("+asyncpg", "+psycopg"))
    with engine.begin() as connection:
        connection.execute(MemoryRow.__table__.insert(), [memory_values(m) for m in memories])
    command.downgrade(alembic_config(url), "0011")

    upgrade(url)

    with engine.connect() as connection:
        rows = connection.execute(sa.text("SELECT content, content_hash FROM memories")).all()
    engine.dispose()
    assert sorted(rows) == sorted((text, content_hash(text)) for text in texts)
