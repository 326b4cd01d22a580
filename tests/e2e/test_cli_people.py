"""The ``agentcore`` console script against a running ``agentcore serve``: tables for people,
``--json`` for scripts, a closed pipe, bad input, quiet stderr, settings from the environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcore.client import MemoryClient
from tests.server_process import Server, free_port

AGENTCORE = str(Path(sys.executable).parent / "agentcore")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("data"), command=[AGENTCORE])
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[MemoryClient]:
    with MemoryClient(server.base) as c:
        yield c


def agentcore(server: Server, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The console script with the service's address in the environment, logs at INFO (what
    a client command must not show)."""
    environment = {**server.env, "AGENTCORE_URL": server.base, "LOG_LEVEL": "INFO", **env}
    return subprocess.run(
        [AGENTCORE, *argv], env=environment, capture_output=True, text=True, timeout=120
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    assert "INFO" not in done.stderr, done.stderr
    assert "HTTP Request" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def test_tables_show_what_was_stored(server: Server) -> None:
    added = ok(
        agentcore(
            server,
            "memory",
            "add",
            "Grace flies to Lisbon on May 3rd",
            "--user-id",
            "grace",
            "--tags",
            "travel,trips",
            "--metadata",
            '{"src": "cli"}',
        )
    )
    memory_id = next(line.split()[1] for line in added.splitlines() if line.startswith("memory_id"))
    listed = ok(agentcore(server, "memory", "list", "--user-id", "grace")).splitlines()
    assert listed[0].split() == ["ID", "CREATED_AT", "LAYER", "SCOPE", "TAGS", "CONTENT"]
    assert memory_id in listed[1]
    assert "Grace flies to Lisbon on May 3rd" in listed[1]
    assert "  travel, trips  " in listed[1]  # a list value, joined for people
    found = ok(agentcore(server, "memory", "search", "when does grace fly", "--user-id", "grace"))
    assert "Grace flies to Lisbon" in found.splitlines()[1]
    shown = ok(agentcore(server, "memory", "get", memory_id, "--user-id", "grace"))
    assert "content" in shown
    assert "Grace flies to Lisbon on May 3rd" in shown
    assert re.search(r"^tags +travel, trips$", shown, re.MULTILINE), shown
    assert ok(agentcore(server, "memory", "delete", memory_id, "--user-id", "grace")) == (
        f"deleted {memory_id}\n"
    )


def test_long_content_is_cut_in_a_table_and_whole_in_a_document(server: Server) -> None:
    text = "Henry's runbook: " + "restart the indexer, then check the queue; " * 10
    ok(agentcore(server, "memory", "add", text, "--user-id", "henry"))
    row = ok(agentcore(server, "memory", "list", "--user-id", "henry")).splitlines()[1]
    assert row.endswith("…")
    assert len(row) < len(text)
    memory_id = row.split()[0]
    assert text.strip() in ok(agentcore(server, "memory", "get", memory_id, "--user-id", "henry"))


def test_json_is_the_exact_result(server: Server, client: MemoryClient) -> None:
    client.add_batch([{"content": f"Ivy's note {n}", "user_id": "ivy"} for n in range(3)])
    listed = agentcore(server, "memory", "list", "--user-id", "ivy", "--json")
    lines = ok(listed).splitlines()  # a list command: one record per line
    assert [json.loads(line) for line in lines] == client.list(user_id="ivy")["memories"]
    assert listed.stderr == "3 of 3\n"
    called = ok(
        agentcore(server, "call", "memory.list", '{"user_id": "ivy", "limit": 2}', "--json")
    )
    assert json.loads(called) == client.list(user_id="ivy", limit=2)
    # Before the search below: a search counts its hits' accesses behind its reply, and a
    # listing taken across that write would differ from the next in access counts.
    found = ok(agentcore(server, "memory", "search", "ivy's note", "--user-id", "ivy", "--json"))
    hits = [json.loads(line) for line in found.splitlines()]
    assert {hit["memory"]["id"] for hit in hits} == {
        m["id"] for m in client.list(user_id="ivy")["memories"]
    }
    client.stage_start("task-ivy", "execution")
    current = ok(agentcore(server, "stage", "current", "task-ivy", "--json"))
    assert json.loads(current) == client.stage_current("task-ivy")


def test_stages_task_progress_errors_costs_and_health(server: Server) -> None:
    started = json.loads(ok(agentcore(server, "stage", "start", "task-jo", "planning", "--json")))
    stage_id = started["stage_id"]
    ok(
        agentcore(
            server,
            "memory",
            "add",
            "Never touch the prod database",
            "--task-id",
            "task-jo",
            "--critical",
        )
    )
    assert "planning" in ok(agentcore(server, "stage", "current", "task-jo"))
    completed = ok(agentcore(server, "stage", "complete", "task-jo", stage_id))
    assert "completed" in completed
    assert "Never touch the prod database" in completed
    assert "no active stage" in ok(agentcore(server, "stage", "current", "task-jo"))
    assert stage_id in ok(agentcore(server, "stage", "get", stage_id))
    progress = ok(agentcore(server, "task", "progress", "task-jo"))
    assert "critical_constraints" in progress
    assert "Never touch the prod database" in progress

    for description in ("the schema was not given", "the schema was not given again"):
        ok(
            agentcore(
                server,
                "error",
                "record",
                "task-jo",
                "missing_info",
                description,
                "--severity",
                "0.6",
            )
        )
    history = ok(agentcore(server, "error", "history", "--task-id", "task-jo")).splitlines()
    assert history[0].split()[:3] == ["CREATED_AT", "ERROR_TYPE", "SEVERITY"]
    assert len(history) == 3
    assert "the schema was not given again" in history[1]
    assert "missing_info" in ok(agentcore(server, "error", "patterns", "--task-id", "task-jo"))
    assert "budget_usd" in ok(agentcore(server, "costs"))
    health = ok(agentcore(server, "health"))
    assert health.splitlines()[0].split() == ["status", "ok"]


def test_a_closed_pipe_ends_quietly(server: Server, client: MemoryClient) -> None:
    """More output than a pipe holds, and a reader that stops after one line: the line is a
    whole record, the command stops with 141 (as SIGPIPE would) and says nothing more."""
    items = [
        {"content": f"Kim's log line {n}: " + "x" * 1000, "user_id": "kim"} for n in range(100)
    ]
    client.add_batch(items)
    environment = {**server.env, "AGENTCORE_URL": server.base}
    for argv, stderr in (
        ("memory list --user-id kim --limit 100 --json", "100 of 100\n"),
        ("memory search log --user-id kim --limit 100 --json", ""),
        ("export --user-id kim", None),  # its progress bar
    ):
        with subprocess.Popen(
            [AGENTCORE, *argv.split()],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as reader:
            assert reader.stdout is not None
            assert reader.stderr is not None
            record = json.loads(reader.stdout.readline())
            reader.stdout.close()
            assert reader.wait(timeout=60) == 141, argv
            said = reader.stderr.read().decode()
        assert "kim" in json.dumps(record)
        assert "Traceback" not in said, said
        assert "Error" not in said, said
        assert stderr is None or said == stderr, said
    done = subprocess.run(  # what docs/cli.md shows, in a shell
        ["bash", "-c", f"set -o pipefail; {AGENTCORE} memory list --user-id kim --json | head -1"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(done.stdout)["user_id"] == "kim"
    assert done.stderr == "20 of 100; next page: --cursor " + done.stderr.split()[-1] + "\n"
    assert done.returncode in (0, 141)  # 0 when every line was in the pipe before head left


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["memory", "add", "x", "--user-id", "a", "--metadata", "{bad"], "--metadata: not JSON"),
        (["memory", "add", "x", "--user-id", "a", "--metadata", "[1]"], "not a JSON object"),
        (["memory", "add"], "required: content"),
        (
            ["memory", "add", "x", "--user-id", "a", "--foo"],
            "agentcore memory add: unrecognized arguments: --foo",
        ),
        (["stage", "current", "t", "--bar", "1"], "agentcore stage current: unrecognized"),
        (
            ["memory", "search", "", "--user-id", "a", "--limit", "0"],
            "INVALID_PARAMS: Invalid params: query: String should have at least 1 character; "
            "limit: Input should be greater than or equal to 1",
        ),
        (["memory", "get", "no-such-id", "--user-id", "a"], "agentcore: MEMORY_NOT_FOUND: "),
        (["error", "record", "t", "bogus", "d", "--severity", "0.5"], "INVALID_PARAMS"),
        (["memory", "add", "x"], "MISSING_IDENTIFIER"),
        (["call", "memory.nope"], "METHOD_NOT_FOUND"),
    ],
)
def test_bad_input_is_one_line_on_stderr(server: Server, argv: list[str], expected: str) -> None:
    done = agentcore(server, *argv)
    assert done.returncode != 0
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert expected in done.stderr
    assert done.stdout == ""


def test_an_unreachable_service_is_one_line(server: Server) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    done = agentcore(server, "memory", "list", "--user-id", "a", "--url", nowhere)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"agentcore: cannot reach {nowhere}: [Errno 111] Connection refused"
    ]


def test_migrate_prints_no_library_logs(tmp_path: Path) -> None:
    environment = {**os.environ, "AGENTCORE_DATA_DIR": str(tmp_path), "LOG_LEVEL": "INFO"}
    environment.pop("DATABASE_URL", None)
    done = subprocess.run(
        [AGENTCORE, "migrate"], env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "database is at the newest schema\n"
    assert done.stderr == ""


def test_serve_listens_where_the_environment_says(tmp_path: Path) -> None:
    port = free_port()
    environment: dict[str, Any] = {
        **os.environ,
        "AGENTCORE_DATA_DIR": str(tmp_path),
        "AGENTCORE_PORT": str(port),
        "AGENTCORE_HOST": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
    }
    for name in ("DATABASE_URL", "QDRANT_URL", "REDIS_URL", "AGENTCORE_API_KEYS_FILE"):
        environment.pop(name, None)
    process = subprocess.Popen([AGENTCORE, "serve"], env=environment)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, "the server did not answer"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/livez", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        health = subprocess.run(
            [AGENTCORE, "health"],
            env={**environment, "AGENTCORE_URL": f"http://127.0.0.1:{port}"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert health.returncode == 0, health.stderr
        assert health.stdout.startswith("status")
    finally:
        process.terminate()
        process.wait(timeout=30)
