"""The README's quickstart as a newcomer runs it, on the embedded default: its curl writes and
its Python client's message, then each of its questions, which must find the memory it asks
about first."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result

README = Path(__file__).resolve().parents[2] / "README.md"
# The answer each quickstart question asks for (a part of the memory's content).
ANSWERS = {
    "what does alice like to drink?": "green tea",
    "what can alice not eat?": "vegetarian",
}


def _quickstart() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]


def _calls(section: str) -> list[dict[str, Any]]:
    """The JSON-RPC bodies of the section's curl commands, in order."""
    return [json.loads(body) for body in re.findall(r"-d '(\{.*?\})'", section, re.DOTALL)]


def _python_calls(section: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The messages the section's Python adds for alice, and the questions it searches."""
    adds = [
        ast.literal_eval(messages)
        for messages in re.findall(r'm\.add\((\[.*?\]), user_id="alice"\)', section)
    ]
    asked = re.findall(r'm\.search\("(.*?)", user_id="alice"\)', section)
    return [{"messages": messages, "user_id": "alice"} for messages in adds], asked


def test_the_quickstarts_questions_find_what_they_ask_about(client: TestClient) -> None:
    section = _quickstart()
    calls = _calls(section)
    python_adds, python_questions = _python_calls(section)
    assert python_adds, "the quickstart's Python snippet adds a message for alice"
    questions: list[str] = list(python_questions)
    for call in calls:
        if call["method"] == "memory.add":
            result(client, "memory.add", **call["params"])
        elif call["method"] == "memory.search":
            questions.append(call["params"]["query"])
    for params in python_adds:
        result(client, "memory.add", **params)
    assert set(questions) == set(ANSWERS), "the quickstart asks these questions"
    for question in questions:
        found = result(client, "memory.search", user_id="alice", query=question, limit=3)
        top = found["results"][0]["memory"]["content"]
        assert ANSWERS[question] in top.lower(), (
            question,
            [r["memory"]["content"] for r in found["results"]],
        )
