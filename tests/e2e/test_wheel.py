"""A wheel built from the checkout serves on its own: built with `python -m build`, installed
with pip into a fresh virtual environment (dependencies from the package index, nothing from
this checkout), then `agentcore serve` answers memory.add and memory.search."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.server_process import Server

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "agentcore")


def run(*argv: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


@pytest.mark.timeout(1200)
def test_a_wheel_installed_in_a_fresh_venv_serves(tmp_path: Path) -> None:
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
    finally:
        server.stop()
    memory_id = added["result"]["memory_id"]
    assert found["result"]["results"][0]["memory"]["id"] == memory_id
