"""The screenshots of docs/ui.md, made from a seeded store so that they show the pages as they
are: a fresh embedded ``agentcore serve`` with API keys, a user's memories (one superseded, one
critical, one hostile), a task with a compressed planning stage, an execution stage and an
error, then each page in headless Chromium (the system's) at 1280x800, and the scope page at
a phone's width. Written to docs/ui/.

    .venv/bin/python scripts/ui_screenshots.py [--out docs/ui]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from serving import embedded_env, free_port, serve, wait_ready

from agentcore.client import MemoryClient

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
USER = "maya"
TASK = "billing-migration"


def make_key(keys_file: Path, *args: str) -> str:
    argv = [sys.executable, "-m", "agentcore.cli", "keys", "create", "--file", str(keys_file)]
    done = subprocess.run([*argv, *args], check=True, capture_output=True, text=True)
    return done.stdout.split()[-1]


def seed(memory: MemoryClient) -> dict[str, str]:
    """What an assistant and a coding agent would have written; the ids worth a screenshot."""
    user = {"user_id": USER}
    memory.add("Maya is allergic to penicillin", critical=True, tags=["health"], **user)
    memory.add("Maya prefers short answers with code first", tags=["style"], **user)
    home = memory.add("Maya lives in Lisbon", **user)["memory_id"]
    memory.add("Maya moved to Porto in October", **user)
    memory.add("Maya's team ships on Thursdays; no deploys on Fridays", tags=["work"], **user)
    memory.add(
        "<script>alert('hi')</script> pasted from a web page: shown as text", layer="episodic",
        **user,
    )  # fmt: skip
    task = {"task_id": TASK, "user_id": USER, "scope": "task"}
    planning = memory.stage_start(TASK, "planning")["stage_id"]
    for text, critical in (
        ("Plan: move invoices from the legacy billing tables to the ledger service", False),
        ("The migration must not lock the invoices table for more than a second", True),
        ("Run the dry run against last month's snapshot before touching production", False),
        ("Customers in the EU keep their data in eu-west-1", True),
    ):
        memory.add(text, layer="episodic", critical=critical, **task)
    memory.stage_complete(TASK, planning)
    memory.stage_start(TASK, "execution")
    step = memory.add("Copied 1.2M invoices to the ledger in 14 batches", layer="episodic", **task)[
        "memory_id"
    ]
    memory.error_record(
        TASK,
        "incorrect_action",
        "The ledger API timed out on batch 9 (504 after 30 s)",
        recovery_action="Retried batch 9 with half the batch size",
        severity=0.6,
    )
    return {"home": home, "step": step}


def shoot(base: str, key: str, ids: dict[str, str], out: Path) -> None:
    from playwright.sync_api import sync_playwright

    scope, task = quote(f"user:{USER}"), quote(f"task:{TASK}")
    shots = {
        "scopes": "/ui/",
        "scope": f"/ui/scope?scope={scope}",
        "search": f"/ui/search?scope={scope}&q={quote('Where does Maya live?')}",
        "memory": f"/ui/memory?scope={scope}&id={ids['home']}",
        "task": f"/ui/task?scope={task}",
    }
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        for width, height, names in ((1280, 800, list(shots)), (390, 844, ["scope"])):
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            page.goto(base + "/ui/")
            page.fill("#key-input", key)
            page.press("#key-input", "Enter")
            page.wait_for_selector("#key-form", state="hidden")
            for name in names:
                page.goto(base + shots[name])
                page.wait_for_selector("main[aria-busy]", state="detached")
                if "data-live" in (page.inner_html("main") or ""):
                    page.wait_for_selector("#live:text('Live')")
                suffix = "" if width > 700 else "-phone"
                page.screenshot(path=str(out / f"{name}{suffix}.png"), full_page=True)
                print(out / f"{name}{suffix}.png")
            context.close()
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("docs/ui"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as data_dir:
        keys_file = Path(data_dir) / "keys.json"
        admin = make_key(keys_file, "--id", "seed", "--access", "admin")
        key = make_key(keys_file, "--id", "maya-write", "--access", "write", "--user-id", USER,
                       "--task-id", TASK)  # fmt: skip
        env = {**embedded_env(data_dir), "AGENTCORE_API_KEYS_FILE": str(keys_file)}
        migrate = [sys.executable, "-m", "agentcore.cli", "migrate"]
        subprocess.run(migrate, env=env, check=True, stdout=subprocess.DEVNULL)
        port = free_port()
        server = serve(env, port)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base)
            with MemoryClient(base, api_key=admin) as memory:
                ids = seed(memory)
            shoot(base, key, ids, args.out)
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(json.dumps({"written": str(args.out)}))


if __name__ == "__main__":
    main()
