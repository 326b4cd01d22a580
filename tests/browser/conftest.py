"""The memory browser in a real browser: the system's Chromium (Debian's ``chromium``),
driven by Playwright, against ``agentcore serve`` on both backends with API keys on.

Without a Chromium these tests are skipped, unless ``CI`` is true: then they fail (CI installs
one: ``.ci/run``). Every page a test opens is watched: a console error, an uncaught exception,
a dialog (a script that ran) or a Content-Security-Policy violation fails the test; the
browser's note of a 401, 403 or 404 answer is no error (those are pages: key, refused, not
found)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentcore.client import MemoryClient
from tests.e2e.conftest import BOTH, served
from tests.server_process import Server
from tests.worker_process import celery_worker

EXPECTED_STATUS = re.compile(r"Failed to load resource: .* status of (401|403|404) ")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The system's Chromium (``CHROMIUM`` names another)."""
    for candidate in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one module: Playwright's sync API runs an event loop on this thread while
    it is open, which the rest of the suite's ``asyncio.run`` must not meet."""
    executable = chromium_path()
    if executable is None:
        message = "no Chromium: apt-get install -y chromium (or set CHROMIUM)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"browser tests cannot run in CI: {message}")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


def make_key(keys_file: Path, key_id: str, access: str, *scopes: str) -> str:
    argv = [sys.executable, "-m", "agentcore.cli", "keys", "create", "--id", key_id]
    argv += ["--access", access, "--file", str(keys_file), *scopes]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    return done.stdout.split()[-1]


@dataclass
class Service:
    server: Server
    keys: dict[str, str]
    seeded: dict[str, str] = field(default_factory=dict)

    def client(self, key: str = "admin") -> MemoryClient:
        return MemoryClient(self.server.base, api_key=self.keys[key])


@pytest.fixture(scope="module", params=BOTH)
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """A served store with keys (admin; alice: write, user alice and task ui-t1; alice-read:
    read, the same scopes); in production with a worker."""
    keys_file = tmp_path_factory.mktemp("keys") / "keys.json"
    alice = ("--user-id", "alice", "--task-id", "ui-t1")
    keys = {
        "admin": make_key(keys_file, "admin", "admin"),
        "alice": make_key(keys_file, "alice", "write", *alice),
        "alice-read": make_key(keys_file, "alice-read", "read", *alice),
    }
    with served(request, tmp_path_factory, {"AGENTCORE_API_KEYS_FILE": str(keys_file)}) as s:
        if request.param == "embedded":
            yield Service(s, keys)
            return
        env = s.env  # production: a worker compresses the stages
        with celery_worker(
            tmp_path_factory.mktemp("worker"),
            env["DATABASE_URL"],
            env["REDIS_URL"],
            REDIS_MEMORY_DB=env["REDIS_MEMORY_DB"],
        ):
            yield Service(s, keys)


class Watched:
    """A tab whose console errors, page errors and dialogs are collected."""

    def __init__(self, page: Any, base: str) -> None:
        self.page = page
        self.base = base
        self.problems: list[str] = []
        self.navigations = 0
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("dialog", self._dialog)
        page.on("framenavigated", self._navigated)

    def _console(self, message: Any) -> None:
        # Chromium logs each answer of 401, 403 or 404 as "Failed to load resource": those are
        # the pages' own answers (key needed, refused, not found), not errors of the page.
        if message.type == "error" and not EXPECTED_STATUS.match(message.text):
            self.problems.append(f"console: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    def _navigated(self, frame: Any) -> None:
        if frame == self.page.main_frame:
            self.navigations += 1

    def open(self, path: str, key: str | None = None) -> None:
        """Load ``path``; with ``key``, enter it in the key form first (as a person does)."""
        self.page.goto(self.base + path)
        self.page.wait_for_selector("body[data-shown-at]", state="attached")
        if key is not None and self.page.locator("#key-form").is_visible():
            self.page.fill("#key-input", key)
            self.page.press("#key-input", "Enter")
            self.page.wait_for_selector("#key-form", state="hidden")
        self.page.wait_for_selector("main[aria-busy]", state="detached")

    def shown(self) -> None:
        """Wait until the page shown last has its part in place."""
        self.page.wait_for_selector("main[aria-busy]", state="detached")


@pytest.fixture
def tab(browser: Any, service: Service) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page(), service.server.base)
    yield watched
    context.close()
    assert watched.problems == []
