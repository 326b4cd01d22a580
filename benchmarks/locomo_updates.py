"""How many knowledge updates the service records on real conversations, where nearly every
one would be a false supersession: LoCoMo's 5,882 turns, in process on the embedded default,
each conversation in one scope (user_id; a memory supersedes only within its own scope, so
this is the harder case: every turn meets all the earlier ones), "Speaker: text" with metadata
speaker and session, memory.add_batch of 100 in order. ``--sessions`` stores each LoCoMo
session as a scope of its own instead (user_id and session_id, as
benchmarks/locomo_retrieval.py does). Prints how many memories were superseded (the rules'
slots are the only record: services/supersession.py), and each pair.

    .venv/bin/python benchmarks/locomo_updates.py [path/to/locomo10.json] [--sessions] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_retrieval import BATCH, DEFAULT, sessions, turn_content

from agentcore.adapters.db.migrate import upgrade
from agentcore.bootstrap import build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.memory_manager import ListRequest


async def run(conversations: list[dict[str, Any]], by_session: bool) -> dict[str, Any]:
    pairs: list[dict[str, str]] = []
    turns = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp))
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        try:
            for n, conversation in enumerate(conversations):
                scope_id = f"locomo-{n}"
                items = [
                    NewMemory(
                        turn_content(turn),
                        ScopeIds(user_id=scope_id, session_id=name if by_session else None),
                        layer="episodic",
                        metadata={"speaker": turn["speaker"], "dia_id": turn["dia_id"]},
                    )
                    for name, _, session_turns in sessions(conversation)
                    for turn in session_turns
                ]
                turns += len(items)
                for start in range(0, len(items), BATCH):
                    await container.memory.add_batch(items[start : start + BATCH])
                assert await container.memory.indexed(120)
                scopes = [
                    ScopeIds(user_id=scope_id, session_id=name if by_session else None)
                    for name, _, _ in (sessions(conversation) if by_session else [("", "", [])])
                ]
                for scope in scopes:
                    pairs += await superseded(container, scope)
        finally:
            await container.aclose()
    return {
        "turns": turns,
        "superseded": len(pairs),
        "seconds": round(time.perf_counter() - started, 1),
        "pairs": pairs,
    }


async def superseded(container: Any, scope: ScopeIds) -> list[dict[str, str]]:
    """Every superseded memory of one scope, with its successor."""
    level = "session" if scope.session_id else "user"
    memories, after = [], None
    while True:
        page = await container.memory.list_page(
            ListRequest(scope=scope, scope_level=level, limit=500, after=after)
        )
        memories += page.memories
        if page.next_after is None:
            break
        after = page.next_after
    by_id = {m.id: m for m in memories}
    out = []
    for memory in memories:
        if memory.superseded_by is None:
            continue
        new = by_id.get(memory.superseded_by)
        out.append(
            {
                "slot": memory.fact_slot or "",
                "old": memory.content,
                "new": new.content if new is not None else memory.superseded_by,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--sessions", action="store_true", help="a scope per LoCoMo session")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    conversations = json.loads(args.path.read_text(encoding="utf-8"))
    result = asyncio.run(run(conversations, args.sessions))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['superseded']} of {result['turns']} turns superseded in {result['seconds']} s")
    for pair in result["pairs"]:
        print(f"  [{pair['slot']}] {pair['old']!r}\n      -> {pair['new']!r}")


if __name__ == "__main__":
    main()
