"""The init container's script (k8s/wait-for-schema.yaml), run as the pods run it, against a
SQLite database at, behind and beyond this release's head."""

from __future__ import annotations

import runpy
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentcore.adapters.db.migrate import upgrade
from tests.deploy.manifests import find, rendered


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    configmap = find(rendered(), "ConfigMap", "agentcore-wait-for-schema")
    path = tmp_path_factory.mktemp("init") / "wait_for_schema.py"
    path.write_text(configmap["data"]["wait_for_schema.py"])
    return path


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "agentcore.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def _wait(
    capsys: pytest.CaptureFixture[str], script: Path, database: Path | None, *args: str
) -> Done:
    """The script as ``python wait_for_schema.py ARGS`` runs it (in this process: quicker)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DATABASE_URL", raising=False)
        if database is not None:
            patch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{database}")
        patch.setattr("sys.argv", [str(script), *args])
        with pytest.raises(SystemExit) as exited:
            runpy.run_path(str(script), run_name="__main__")
    return Done(int(exited.value.code or 0), *capsys.readouterr())


def _copy_at(source: Path, target: Path, revision: str) -> Path:
    target.write_bytes(source.read_bytes())
    with closing(sqlite3.connect(target)) as db, db:
        db.execute("UPDATE alembic_version SET version_num = ?", (revision,))
    return target


def test_a_database_at_head_lets_the_pod_start(
    capsys: pytest.CaptureFixture[str], script: Path, migrated: Path
) -> None:
    done = _wait(capsys, script, migrated, "--timeout", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the database schema is at" in done.stdout


def test_an_empty_database_holds_the_pod_back(
    capsys: pytest.CaptureFixture[str], script: Path, tmp_path: Path
) -> None:
    done = _wait(capsys, script, tmp_path / "empty.db", "--timeout", "0.3", "--interval", "0.1")
    assert done.returncode == 1
    assert "empty (the migration Job has not run yet)" in done.stdout
    assert "gave up after 0.3 s" in done.stdout


def test_a_database_behind_holds_the_pod_back(
    capsys: pytest.CaptureFixture[str], script: Path, migrated: Path, tmp_path: Path
) -> None:
    behind = _copy_at(migrated, tmp_path / "behind.db", "0001")
    done = _wait(capsys, script, behind, "--timeout", "0")
    assert done.returncode == 1
    assert "at 0001, behind this image" in done.stdout


def test_a_database_a_newer_release_migrated_holds_the_pod_back(
    capsys: pytest.CaptureFixture[str], script: Path, migrated: Path, tmp_path: Path
) -> None:
    newer = _copy_at(migrated, tmp_path / "newer.db", "9999_from_the_future")
    done = _wait(capsys, script, newer, "--timeout", "0")
    assert done.returncode == 1
    assert "newer than this image" in done.stdout


def test_no_database_url_is_refused(capsys: pytest.CaptureFixture[str], script: Path) -> None:
    done = _wait(capsys, script, None, "--timeout", "0")
    assert done.returncode == 1
    assert "DATABASE_URL is not set" in done.stderr
