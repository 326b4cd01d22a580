"""A wheel built from the checkout carries what it needs: the Alembic migrations (alembic/ at the
top of the repository, in the wheel as agentcore/_alembic) and every package of agentcore/; the
migrations run from an unpacked wheel. The full check: built with `python -m build`, installed
with pip into a fresh virtual environment (dependencies from the package index, nothing from
this checkout), then `agentcore serve` answers memory.add and memory.search."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.server_process import Server

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "agentcore", "alembic")


def run(*argv: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"  # a copy, so the build leaves the checkout as it was
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--outdir",
        tmp_path / "dist",
        source,
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("agentcore_memory-*.whl")
    return wheel


# Run with -I (no PYTHONPATH, no working directory on sys.path) and the unpacked wheel first on
# sys.path, ahead of the checkout's editable install.
MIGRATE_FROM_THE_WHEEL = """
import sys
sys.path.insert(0, sys.argv[1])
import agentcore
from agentcore.adapters.db.migrate import SCRIPT_LOCATION, upgrade
print(agentcore.__file__)
print(SCRIPT_LOCATION)
upgrade(sys.argv[2])
"""


@pytest.mark.timeout(300)
def test_the_wheel_carries_the_migrations_and_migrates_from_them(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(unpacked)

    scripts = [p for p in (ROOT / "alembic").rglob("*") if p.is_file() and p.suffix != ".pyc"]
    carried = {f"agentcore/_alembic/{p.relative_to(ROOT / 'alembic').as_posix()}" for p in scripts}
    assert "agentcore/_alembic/versions/0001_initial.py" in carried
    assert carried <= names, sorted(carried - names)
    assert not any(name.startswith("alembic/") for name in names)  # never beside the library
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "agentcore").rglob("*.py")}
    missing = sorted(p for p in packages if f"{p}/__init__.py" not in names)
    assert not missing, f"not in the wheel: {missing}; list them in pyproject.toml"

    database = tmp_path / "from-the-wheel.db"
    where = run(
        sys.executable,
        "-I",
        "-c",
        MIGRATE_FROM_THE_WHEEL,
        unpacked,
        f"sqlite+aiosqlite:///{database}",
        cwd=tmp_path,
    ).splitlines()
    assert where == [
        str(unpacked / "agentcore" / "__init__.py"),
        str(unpacked / "agentcore" / "_alembic"),
    ]
    with sqlite3.connect(database) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        (revision,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
    assert {"memories", "memory_history", "episodes", "stages"} <= tables
    newest = max(p.name for p in (ROOT / "alembic" / "versions").glob("[0-9]*.py"))
    assert newest.startswith(f"{revision}_")


@pytest.mark.timeout(1200)
def test_a_wheel_installed_in_a_fresh_venv_serves(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)
    where = run(
        venv / "bin" / "python",
        "-I",
        "-c",
        "import agentcore; print(agentcore.__file__)",
        cwd=tmp_path,
    )
    assert where.startswith(str(venv)), where
    for extra, package in (("langgraph", "langgraph"), ("langchain", "langchain_core")):
        # The plain install pulls no framework; an integration says which extra it needs.
        probe = f"import importlib.util; print(importlib.util.find_spec({package!r}))"
        assert run(venv / "bin" / "python", "-I", "-c", probe, cwd=tmp_path).strip() == "None"
        refused = subprocess.run(
            [venv / "bin" / "python", "-I", "-c", f"import agentcore.integrations.{extra}"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert f"pip install 'agentcore-memory[{extra}]'" in refused.stderr, refused.stderr

    server = Server(tmp_path / "data", command=[str(venv / "bin" / "agentcore")], cwd=tmp_path)
    server.start(timeout=120)
    try:

        def call(method: str, **params: object) -> dict[str, object]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            reply: dict[str, object] = httpx.post(server.url, json=body, timeout=60).json()
            assert "error" not in reply, reply
            return reply

        added = call("memory.add", content="The deploy key rotates on Mondays", user_id="w")
        found = call("memory.search", query="when does the deploy key rotate", user_id="w")
        # the memory browser's templates and static files are in the wheel
        page = httpx.get(f"{server.base}/ui/scope?scope=user:w", timeout=30)
        script = httpx.get(f"{server.base}/ui/static/ui.js", timeout=30)
        part = httpx.get(f"{server.base}/ui/part/scope?scope=user:w", timeout=30)
    finally:
        server.stop()
    assert page.status_code == script.status_code == part.status_code == 200
    assert '<script type="module" src="/ui/static/ui.js">' in page.text
    assert "The deploy key rotates on Mondays" in part.text
    memory_id = added["result"]["memory_id"]
    assert found["result"]["results"][0]["memory"]["id"] == memory_id
