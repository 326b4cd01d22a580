"""The memory browser's pages at 1k and 100k memories in one scope, in a real browser.

For each size: the store is loaded through the service's bulk path (``scale.load``: LoCoMo
turns in one user's scope, ten tags, synthetic vectors around the real ones), ``agentcore
serve`` opens it, and headless Chromium (the system's) opens each page --repeat times in a new
tab: the figure is the time from the navigation's start until the page's part is in place
(``body[data-shown-at]``, set by the page's script): the shell, its script, the part's request
with its queries on the server, and the rendering. Pages: the scopes, the scope's first page,
filtered by one tag, sorted by importance, its next page, a search, a memory, and the same
scope page after a memory was added (the live refresh is this page's request again).

    .venv/bin/python benchmarks/ui_pages.py [--sizes 1000,100000] [--mode embedded|production]
        [--repeat 10] [--data-dir DIR]  (DIR/<size> keeps a loaded store for the next run)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import USER, load
from service_latency import corpus
from serving import drop_database, embedded_env, free_port, production_env, serve, wait_ready

from agentcore.config import Settings

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
SCOPE = quote(f"user:{USER}")


def pages(base: str) -> dict[str, str]:
    """The pages timed, by name (the memory and the next page read from the store)."""
    first = httpx.post(
        f"{base}/rpc",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory.list",
            "params": {"user_id": USER, "scope": "user", "limit": 50},
        },
        timeout=60,
    ).json()["result"]
    memory_id = first["memories"][0]["id"]
    return {
        "scopes": "/ui/",
        "scope": f"/ui/scope?scope={SCOPE}",
        "scope, one tag": f"/ui/scope?scope={SCOPE}&tag=t3",
        "scope by importance": f"/ui/scope?scope={SCOPE}&sort=importance",
        "scope, next page": f"/ui/scope?scope={SCOPE}&cursor={quote(first['next_cursor'])}",
        "search": f"/ui/search?scope={SCOPE}&q={quote('What did Caroline research?')}",
        "memory": f"/ui/memory?scope={SCOPE}&id={memory_id}",
    }


def time_pages(base: str, repeat: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    report: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        for name, path in pages(base).items():
            shown: list[float] = []
            for _ in range(repeat + 1):  # the first warms the server's caches: not counted
                page = context.new_page()
                page.goto(base + path)
                page.wait_for_selector("main[aria-busy]", state="detached", timeout=60_000)
                problem = page.locator("[data-title='Not found'], [data-title='Error']")
                if problem.count():
                    raise SystemExit(f"{name}: {page.inner_text('main')}")
                shown.append(float(page.get_attribute("body", "data-shown-at") or "nan"))
                page.close()
            report[name] = summary(shown[1:])
        report["live refresh"] = live_refresh(context, base, repeat)
        browser.close()
    return report


def live_refresh(context: Any, base: str, repeat: int) -> dict[str, float]:
    """A memory added over /rpc until it shows on the open scope page."""
    page = context.new_page()
    page.goto(f"{base}/ui/scope?scope={SCOPE}")
    page.wait_for_selector("#live:text('Live')", timeout=60_000)
    seconds = []
    run = secrets.token_hex(4)  # a store kept from an earlier run holds its notes
    for i in range(repeat):
        text = f"The browser benchmark wrote note {run}-{i}"
        httpx.post(
            f"{base}/rpc",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "memory.add",
                "params": {"user_id": USER, "content": text},
            },
            timeout=60,
        ).raise_for_status()
        added = time.monotonic()
        page.wait_for_selector(f"li.memory:has-text('note {run}-{i}')", timeout=30_000)
        seconds.append((time.monotonic() - added) * 1000)
    page.close()
    return summary(seconds)


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def measure(size: int, mode: str, repeat: int, keep: Path | None) -> dict[str, Any]:
    turns, _ = corpus()
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = keep / str(size) if keep else Path(scratch)
        data_dir.mkdir(parents=True, exist_ok=True)
        database = None
        if mode == "production":
            env, database = production_env(str(data_dir))
        else:
            env = embedded_env(str(data_dir))
            migrate = [sys.executable, "-m", "agentcore.cli", "migrate"]
            subprocess.run(migrate, env=env, check=True, stdout=subprocess.DEVNULL)
        loaded = data_dir / "ui_pages.json"
        try:
            if mode == "embedded" and loaded.is_file():
                load_report = json.loads(loaded.read_text())
            else:
                settings = Settings(
                    agentcore_data_dir=data_dir,
                    database_url=env.get("DATABASE_URL"),
                    redis_url=env.get("REDIS_URL"),
                )
                load_report = uvloop.run(load(settings, turns, size, "synthetic"))
                loaded.write_text(json.dumps(load_report))
            port = free_port()
            server = serve(env, port)
            try:
                base = f"http://127.0.0.1:{port}"
                wait_ready(base, 300)
                timings = time_pages(base, repeat)
            finally:
                server.terminate()
                server.wait(timeout=60)
        finally:
            if database is not None:
                drop_database(database)
    return {"memories": size, "load": load_report, "pages": timings}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--mode", choices=["embedded", "production"], default="embedded")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    report = {
        "mode": args.mode,
        "runs": [
            measure(int(size), args.mode, args.repeat, args.data_dir)
            for size in args.sizes.split(",")
        ],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
