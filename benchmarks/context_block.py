"""memory.context through a real `agentcore serve` (embedded default): latency, how much of the
budget the block fills, and LoCoMo evidence recall of the block against plain top-k search cut
to the same token count.

LoCoMo: every conversation is loaded as benchmarks/locomo_retrieval.py loads it (an episodic
memory per turn, user_id = the conversation, session_id = its session, metadata.dia_id), then
each question of categories 1-4 is asked twice per budget (1,000 and 2,000 tokens, the
project's o200k tokenizer):

- **block**: `memory.context {query, user_id, max_tokens}`; the memories it shows are the
  `included` ids;
- **top-k**: `memory.search {query, user_id, limit}` with the limit memory.context uses for
  that budget (budget / 20, 10-100), its results' contents one per line, cut after the last
  one whose line still fits the budget.

A question's evidence recall is the share of its evidence turns whose memory ids are in the
block (or in the cut search results). Then a task scenario (a COMPASS task with constraints,
a compressed stage, working memory, errors and procedures, beside 2,000 memories of its user)
times memory.context with every section at work.

    .venv/bin/python benchmarks/context_block.py [path/to/locomo10.json]
        [--conversations N] [--budgets 1000 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_retrieval import CATEGORIES, DEFAULT, Rpc, evidence, load
from serving import embedded_env, free_port, serve

from agentcore.adapters.tokens import BpeTokenCounter

TOKENS_PER_HIT = 20  # as agentcore.services.consumers.context asks search for
TASK_CALLS = 200
tokens = BpeTokenCounter()


def search_limit(budget: int) -> int:
    return max(10, min(100, budget // TOKENS_PER_HIT))


def memory_ids(rpc: Rpc, conv_id: str) -> dict[str, str]:
    """memory id → dia id of a loaded conversation."""
    found: dict[str, str] = {}
    cursor = None
    while True:
        page = rpc("memory.list", user_id=conv_id, limit=100, order="asc", cursor=cursor)
        found.update({m["id"]: m["metadata"]["dia_id"] for m in page["memories"]})
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def cut(contents: list[str], budget: int) -> int:
    """How many of the results, one per line, fit ``budget`` tokens."""
    used = 0
    for n, content in enumerate(contents):
        used += tokens.count(content) + 1  # its line break
        if used > budget or tokens.count("\n".join(contents[: n + 1])) > budget:
            return n
    return len(contents)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2)


def ask(
    rpc: Rpc, conv_id: str, conversation: dict[str, Any], dia_of: dict[str, str], budgets: list[int]
) -> list[dict[str, Any]]:
    known = set(dia_of.values())
    rows = []
    for qa in conversation["qa"]:
        wanted = set(evidence(qa.get("evidence", []), known))
        if qa.get("category") not in CATEGORIES or not wanted:
            continue
        row: dict[str, Any] = {"category": qa["category"]}
        for budget in budgets:
            started = time.perf_counter()
            block = rpc(
                "memory.context", query=str(qa["question"]), user_id=conv_id, max_tokens=budget
            )
            took = (time.perf_counter() - started) * 1000
            shown = {dia_of[i["id"]] for i in block["included"] if i["id"] in dia_of}
            started = time.perf_counter()
            found = rpc(
                "memory.search",
                query=str(qa["question"]),
                user_id=conv_id,
                limit=search_limit(budget),
            )["results"]
            search_took = (time.perf_counter() - started) * 1000
            contents = [r["memory"]["content"] for r in found]
            kept = cut(contents, budget)
            top = found[:kept]
            listed = {r["memory"]["metadata"]["dia_id"] for r in top}
            row[budget] = {
                "block_recall": len(shown & wanted) / len(wanted),
                "topk_recall": len(listed & wanted) / len(wanted),
                "block_ms": took,
                "search_ms": search_took,
                "fill": block["tokens_used"] / budget,
                "topk_fill": tokens.count("\n".join(contents[:kept])) / budget,
                "block_items": len(block["included"]),
                "topk_items": len(top),
                "duplicates": block["duplicates"],
            }
        rows.append(row)
    return rows


def summarize(rows: list[dict[str, Any]], budgets: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(rows)}
    for budget in budgets:
        cells = [r[budget] for r in rows]

        def mean(name: str, of: list[dict[str, Any]] = cells) -> float:
            return round(statistics.fmean(c[name] for c in of), 3)

        out[str(budget)] = {
            "block_recall": mean("block_recall"),
            "topk_recall": mean("topk_recall"),
            "by_category": {
                f"{c} {name}": {
                    "block": mean("block_recall", [r[budget] for r in rows if r["category"] == c]),
                    "topk": mean("topk_recall", [r[budget] for r in rows if r["category"] == c]),
                }
                for c, name in CATEGORIES.items()
                if any(r["category"] == c for r in rows)
            },
            "block_ms": {
                "p50": percentile([c["block_ms"] for c in cells], 0.5),
                "p95": percentile([c["block_ms"] for c in cells], 0.95),
            },
            "search_ms": {
                "p50": percentile([c["search_ms"] for c in cells], 0.5),
                "p95": percentile([c["search_ms"] for c in cells], 0.95),
            },
            "fill": {"mean": mean("fill"), "min": round(min(c["fill"] for c in cells), 3)},
            "topk_fill": mean("topk_fill"),
            "block_items": mean("block_items"),
            "topk_items": mean("topk_items"),
            "duplicates": mean("duplicates"),
        }
    return out


def task_scenario(rpc: Rpc, budget: int) -> dict[str, Any]:
    """memory.context with every section at work: timed ``TASK_CALLS`` times."""
    scope = {"task_id": "bench-task", "agent_id": "bench-agent", "user_id": "bench-user"}
    session = {**scope, "session_id": "bench-session"}
    items = [
        {
            "user_id": "bench-user",
            "content": f"Note {i}: customer {i % 97} asked about invoice {i}.",
        }
        for i in range(2000)
    ]
    for start in range(0, len(items), 100):
        rpc("memory.add_batch", items=items[start : start + 100])
    planning = rpc("memory.stage.start", task_id="bench-task", stage_type="planning")
    for text in [
        "The export must include every region, EMEA included.",
        "Never send invoices above 10,000 EUR without a second approval.",
        "Plan: reconcile the invoices of Q3 against the ledger, then export the report.",
        *[f"Step {i}: checked the invoices of region {i}." for i in range(40)],
    ]:
        rpc("memory.add", content=text, **scope)
    rpc("memory.add", content="Use ISO dates in the report.", critical=True, **scope)
    rpc("memory.stage.complete", task_id="bench-task", stage_id=planning["stage_id"])
    rpc("memory.stage.start", task_id="bench-task", stage_type="execution")
    for i in range(30):
        rpc(
            "memory.working.append",
            content=f"Turn {i}: reconciling invoice batch {i}.",
            role="user",
            **session,
        )
    for i in range(5):
        rpc(
            "memory.error.record",
            error_type="missing_info",
            description=f"The ledger export for region {i} was empty",
            severity=0.5,
            recovery_action="re-run the ledger export with the region filter",
            **scope,
        )
    for _ in range(3):
        rpc(
            "memory.procedure.record",
            action="re-run the ledger export",
            context="empty ledger export",
            outcome="export complete",
            success=True,
            agent_id="bench-agent",
        )
    queries = ["which invoices still need a second approval?", "what went wrong with the ledger?"]
    took, fills, sections = [], [], []
    for n in range(TASK_CALLS):
        started = time.perf_counter()
        block = rpc("memory.context", query=queries[n % 2], max_tokens=budget, **session)
        took.append((time.perf_counter() - started) * 1000)
        fills.append(block["tokens_used"] / budget)
        sections.append(len(block["sections"]))
    return {
        "budget": budget,
        "calls": TASK_CALLS,
        "ms": {"p50": percentile(took, 0.5), "p95": percentile(took, 0.95)},
        "fill": round(statistics.fmean(fills), 3),
        "sections": min(sections),
        "example": block["sections"],
    }


def print_table(result: dict[str, Any], budgets: list[int]) -> None:
    questions, conversations = result["questions"], result["conversations"]
    print(f"LoCoMo, {questions} questions (categories 1-4), {conversations} conversations")
    columns = ["budget", "block R", "top-k R", "items b/k", "fill b/k", "ctx p50/p95", "search"]
    print(" ".join(f"{name:>12}" for name in columns))
    for budget in budgets:
        r = result[str(budget)]
        cells = [
            str(budget),
            f"{r['block_recall']:.3f}",
            f"{r['topk_recall']:.3f}",
            f"{r['block_items']:.1f}/{r['topk_items']:.1f}",
            f"{r['fill']['mean']:.3f}/{r['topk_fill']:.3f}",
            f"{r['block_ms']['p50']:.1f}/{r['block_ms']['p95']:.1f}",
            f"{r['search_ms']['p50']:.1f}/{r['search_ms']['p95']:.1f}",
        ]
        print(" ".join(f"{cell:>12}" for cell in cells))
        for name, cat in r["by_category"].items():
            print(f"{'':>12} {cat['block']:>12.3f} {cat['topk']:>12.3f}   {name}")
    task = result["task"]
    print(
        f"task scenario ({task['sections']}+ sections, {task['budget']} tokens, "
        f"{task['calls']} calls): p50 {task['ms']['p50']} ms, p95 {task['ms']['p95']} ms, "
        f"fill {task['fill']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if not args.path.is_file():
        raise SystemExit(f"LoCoMo file not found: {args.path}")
    data = json.loads(args.path.read_text())[: args.conversations]
    with tempfile.TemporaryDirectory() as data_dir:
        port = free_port()
        server = serve(embedded_env(data_dir), port)
        try:
            rpc = Rpc(f"http://127.0.0.1:{port}")
            rpc.wait_ready()
            started = time.perf_counter()
            rows: list[dict[str, Any]] = []
            for i, conversation in enumerate(data):
                conv_id = f"locomo-{conversation.get('sample_id', i)}"
                load(rpc, conv_id, conversation)
                rows += ask(rpc, conv_id, conversation, memory_ids(rpc, conv_id), args.budgets)
            result = summarize(rows, args.budgets)
            result["conversations"] = len(data)
            result["task"] = task_scenario(rpc, 2000)
            result["seconds"] = round(time.perf_counter() - started, 1)
        finally:
            server.terminate()
            server.wait(timeout=60)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result, args.budgets)
        print(f"{result['seconds']} s")


if __name__ == "__main__":
    main()
