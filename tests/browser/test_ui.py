"""The memory browser (``/ui``) in headless Chromium against ``agentcore serve`` on both backends
with API keys on: live updates, search with factors, edits, deletes and promotions from the
page, keys and scopes, hostile text, the phone width and the keyboard. ``tab`` fails a test on
any console error, page error or dialog."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from agentcore.client import RpcError
from tests.browser.conftest import Service, Watched

HOSTILE = "<script>alert('script ran')</script><img src=x onerror=\"alert('img ran')\"> tea"


@pytest.fixture(scope="module")
def seeded(service: Service) -> dict[str, str]:
    """Memories of alice, bob and task ui-t1 (a completed planning stage), added by admin."""
    ids: dict[str, str] = {}
    with service.client() as memory:

        def add(name: str, content: str, **params: Any) -> None:
            ids[name] = memory.add(content, **params)["memory_ids"][0]

        add("allergy", "Alice is allergic to penicillin", user_id="alice", critical=True,
            tags=["health"])  # fmt: skip
        add("lisbon", "Alice lives in Lisbon", user_id="alice")
        add("porto", "Alice moved to Porto last month", user_id="alice")
        add("hostile", HOSTILE, user_id="alice", layer="episodic")
        add("colour", "Alice's favourite colour is green", user_id="alice")
        add("old-note", "Alice once owned a red bicycle", user_id="alice")
        add("bob", "Bob prefers the window seat on long flights", user_id="bob")
        stage = memory.stage_start("ui-t1", "planning")["stage_id"]
        add("plan", "Plan: run the tests first, then write the migration", task_id="ui-t1",
            user_id="alice", scope="task", layer="episodic")  # fmt: skip
        add("constraint", "The migration must not lock the memories table", task_id="ui-t1",
            user_id="alice", scope="task", layer="episodic", critical=True)  # fmt: skip
        memory.stage_complete("ui-t1", stage)
    return ids


def _scope_page(tab: Watched, scope: str, key: str) -> None:
    tab.open(f"/ui/scope?scope={scope}", key)


def test_scopes_the_key_may_read(tab: Watched, service: Service, seeded: dict[str, str]) -> None:
    tab.open("/ui/", service.keys["alice-read"])
    names = tab.page.locator("table.scopes tbody th a").all_inner_texts()
    assert "user:alice" in names
    assert "task:ui-t1" in names
    assert "user:bob" not in names
    counts = tab.page.locator("tr:has(a:text-is('user:alice')) td.num").all_inner_texts()
    assert int(counts[4]) >= 6  # all layers


def test_a_memory_added_over_rpc_appears_without_a_reload(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    _scope_page(tab, "user:alice", service.keys["alice"])
    tab.page.wait_for_selector("#live:text('Live')")
    loads = tab.navigations
    with service.client() as memory:
        memory.add("Alice started learning the cello", user_id="alice")
    added = time.monotonic()
    tab.page.wait_for_selector("li.memory:has-text('learning the cello')", timeout=5000)
    seconds = time.monotonic() - added
    assert tab.navigations == loads  # the list changed in place
    assert seconds < 1.0, f"shown {seconds:.2f} s after the add was acknowledged"


def test_search_shows_the_answer_first_with_its_factors(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    _scope_page(tab, "user:alice", service.keys["alice-read"])
    tab.page.click("a:text('Search this scope')")
    tab.shown()
    tab.page.fill("#q", "What is Alice allergic to?")
    tab.page.press("#q", "Enter")
    tab.shown()
    results = tab.page.locator("ol.results li.result")
    shown = [results.nth(i).get_attribute("data-id") for i in range(results.count())]
    with service.client("alice-read") as memory:
        found = memory.search("What is Alice allergic to?", user_id="alice", scopes=["user"])
    assert shown == [hit["memory"]["id"] for hit in found["results"]]  # the service's ranking
    assert shown[0] == seeded["allergy"]  # not a newer statement of Alice's about other things
    answer = tab.page.locator(f"li.result[data-id='{seeded['allergy']}']")
    assert "critical" in answer.locator(".meta").inner_text()
    assert answer.locator("dl.factors meter").count() == 6
    similarity = answer.locator("meter[aria-label^='similarity']")
    expected = next(h for h in found["results"] if h["memory"]["id"] == seeded["allergy"])
    assert float(similarity.get_attribute("value") or 0) == expected["factors"]["similarity"]
    assert "/ui/search?" in tab.page.url
    assert "allergic" in tab.page.url
    # the older home is marked as superseded by the newer one, which is the current value
    tab.page.fill("#q", "Where does Alice live?")
    tab.page.press("#q", "Enter")
    tab.shown()
    assert tab.page.locator("li.result:has-text('Lisbon') .badge.superseded").count() >= 1
    assert tab.page.locator("li.result:has-text('Porto') .badge.current").count() == 1


def test_an_edit_from_the_page_shows_in_its_history_and_over_rpc(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    memory_id = seeded["colour"]
    tab.open(f"/ui/memory?scope=user:alice&id={memory_id}", service.keys["alice"])
    tab.page.fill("#edit-content", "Alice's favourite colour is blue")
    tab.page.fill("#edit-tags", "taste, colour")
    tab.page.click("form[data-action=update] button[type=submit]")
    tab.page.wait_for_selector("ol.timeline li.kind-update ins:has-text('blue')")
    assert tab.page.locator("blockquote.whole").inner_text() == "Alice's favourite colour is blue"
    with service.client("alice-read") as memory:
        stored = memory.get(memory_id, user_id="alice")
        assert stored["content"] == "Alice's favourite colour is blue"
        assert sorted(stored["tags"]) == ["colour", "taste"]
        kinds = [e["kind"] for e in memory.history(memory_id, user_id="alice")["events"]]
    assert kinds == ["add", "update"]


def test_a_read_key_sees_no_change_buttons_and_is_refused(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    memory_id = seeded["allergy"]
    tab.open(f"/ui/memory?scope=user:alice&id={memory_id}", service.keys["alice-read"])
    assert tab.page.locator("blockquote.whole").inner_text() == "Alice is allergic to penicillin"
    assert tab.page.locator("form[data-action]").count() == 0
    headers = {"authorization": f"Bearer {service.keys['alice-read']}"}
    for body in (
        {"action": "update", "id": memory_id, "content": "Alice is allergic to nothing"},
        {"action": "delete", "id": memory_id},
    ):
        refused = httpx.post(
            f"{service.server.base}/ui/part/memory?scope=user:alice", json=body, headers=headers
        )
        assert refused.status_code == 403
        assert "FORBIDDEN" in refused.text
    with service.client() as memory:
        stored = memory.get(memory_id, user_id="alice")
    assert stored["content"] == "Alice is allergic to penicillin"


def test_delete_and_promote_from_the_page(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    plan = seeded["plan"]
    tab.open(f"/ui/memory?scope=task:ui-t1&id={plan}", service.keys["alice"])
    assert tab.page.locator("#promote-target option").all_inner_texts() == ["user: alice"]
    tab.page.click("form[data-action=promote] button[type=submit]")
    tab.page.wait_for_selector("ol.timeline li.kind-promote")
    with service.client() as memory:
        promoted = memory.list(user_id="alice", scope="user", limit=100)["memories"]
        assert [m["promoted_from_id"] for m in promoted if m["promoted_from_id"]] == [plan]

    old = seeded["old-note"]
    tab.open(f"/ui/memory?scope=user:alice&id={old}", service.keys["alice"])
    tab.page.click("details.danger summary")
    tab.page.click("form[data-action=delete] button[type=submit]")
    tab.page.wait_for_selector("h1:text('Deleted')")
    with service.client() as memory, pytest.raises(RpcError) as raised:
        memory.get(old, user_id="alice")
    assert raised.value.code == "MEMORY_NOT_FOUND"


def test_another_scope_is_the_same_404_as_a_missing_one(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    key = service.keys["alice-read"]
    for path in (
        "/ui/scope?scope=user:bob",
        f"/ui/memory?scope=user:bob&id={seeded['bob']}",
        f"/ui/memory?scope=user:alice&id={seeded['bob']}",
        "/ui/search?scope=user:bob&q=seat",
        "/ui/task?scope=task:other",
    ):
        tab.open(path, key)
        assert tab.page.locator("main h1").inner_text() == "Not found", path
    headers = {"authorization": f"Bearer {key}"}
    admin = {"authorization": f"Bearer {service.keys['admin']}"}
    base = f"{service.server.base}/ui/part"
    forbidden = httpx.get(f"{base}/scope?scope=user:bob", headers=headers)
    missing = httpx.get(f"{base}/scope?scope=user:nobody", headers=admin)
    assert forbidden.status_code == missing.status_code == 404
    assert forbidden.text == missing.text


def test_hostile_text_shows_as_text(tab: Watched, service: Service, seeded: dict[str, str]) -> None:
    _scope_page(tab, "user:alice", service.keys["alice-read"])
    shown = tab.page.locator(f"li.memory[data-id='{seeded['hostile']}'] a.content")
    assert shown.inner_text() == HOSTILE
    tab.page.click(f"li.memory[data-id='{seeded['hostile']}'] a.content")
    tab.page.wait_for_selector("blockquote.whole")
    assert tab.page.locator("blockquote.whole").inner_text() == HOSTILE
    assert tab.page.locator("main img, main script").count() == 0


def test_the_compass_task_page(tab: Watched, service: Service, seeded: dict[str, str]) -> None:
    tab.open("/ui/scope?scope=task:ui-t1", service.keys["alice-read"])
    tab.page.click("p.actions a:text('COMPASS task')")
    tab.page.wait_for_selector("ol.stages li.stage")
    stage = tab.page.locator("ol.stages li.stage").first
    assert stage.locator(".stage-type").inner_text().lower() == "planning"
    assert "Compressed" in stage.inner_text()
    assert stage.locator("p.summary").inner_text().strip() != ""
    facts = stage.locator("ul.critical li").all_inner_texts()
    assert any("lock the memories table" in fact for fact in facts)


def test_filters_sort_and_paging_on_the_scope_page(
    tab: Watched, service: Service, seeded: dict[str, str]
) -> None:
    _scope_page(tab, "user:alice", service.keys["alice-read"])
    tab.page.check("input[name=critical]")
    tab.page.click("form.filters button[type=submit]")
    tab.shown()
    assert tab.page.locator("#count").inner_text() == "1 memory"
    assert tab.page.locator("li.memory a.content").all_inner_texts() == [
        "Alice is allergic to penicillin"
    ]
    tab.page.uncheck("input[name=critical]")
    tab.page.select_option("select[name=superseded]", "only")
    tab.page.click("form.filters button[type=submit]")
    tab.shown()
    assert tab.page.locator("#count").inner_text() == "1 memory"
    assert tab.page.locator("li.memory a.content").all_inner_texts() == ["Alice lives in Lisbon"]
    tab.page.select_option("select[name=superseded]", "")
    tab.page.select_option("select[name=sort]", "importance")
    tab.page.click("form.filters button[type=submit]")
    tab.shown()
    assert "sort=importance" in tab.page.url
    first = tab.page.locator("li.memory a.content").first.inner_text()
    assert first == "Alice is allergic to penicillin"  # critical memories weigh more


def test_phone_width_and_keyboard(browser: Any, service: Service, seeded: dict[str, str]) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    tab = Watched(context.new_page(), service.server.base)
    try:
        tab.open("/ui/scope?scope=user:alice", service.keys["alice-read"])
        width = tab.page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390
        tab.page.reload()  # the key stays in the tab; focus starts at the top
        tab.shown()
        tab.page.keyboard.press("Tab")
        assert tab.page.evaluate("() => document.activeElement.className") == "skip"
        for _ in range(40):
            tab.page.keyboard.press("Tab")
            if tab.page.evaluate("() => document.activeElement.matches('a.content')"):
                break
        tab.page.keyboard.press("Enter")
        tab.page.wait_for_selector("blockquote.whole")
        assert tab.problems == []
    finally:
        context.close()


def test_headers_and_refusals(service: Service) -> None:
    base = service.server.base
    shell = httpx.get(f"{base}/ui/scope?scope=user:alice")
    assert shell.status_code == 200
    policy = shell.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "alice" not in shell.text  # the shell holds no data
    assert httpx.get(f"{base}/ui/part/scopes").status_code == 401
    key = {"authorization": f"Bearer {service.keys['alice-read']}"}
    other_site = httpx.get(
        f"{base}/ui/part/scopes", headers={**key, "origin": "https://evil.example"}
    )
    assert other_site.status_code == 403
    assert httpx.get(f"{base}/ui/part/scopes", headers=key).status_code == 200
    assert (
        httpx.get(f"{base}/ui/static/ui.js")
        .headers["content-type"]
        .startswith(("text/javascript", "application/javascript"))
    )
