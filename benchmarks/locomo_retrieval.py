"""LoCoMo evidence recall of memory.search, through the public API on the embedded default.

Starts `agentcore serve` (SQLite file, qdrant-edge, local ONNX embedder) in a fresh data
directory and stores every turn of every conversation with memory.add_batch over HTTP JSON-RPC:
an episodic memory per turn, scoped to its conversation (user_id) and session (session_id),
content "Speaker: text" (a shared photo adds "[shared a photo: caption]", the data set's
stand-in for the image), metadata {speaker, session_date, dia_id}. Then it asks every question
of categories 1-4 with memory.search scoped to its conversation (limit 10) and prints evidence
recall@1/5/10 overall and per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)
and the search latency. A question's recall@k is the fraction of its evidence turns among the
top k results; evidence ids not found in the conversation are ignored (a few are malformed in
the data set), and questions left with none are skipped.

    .venv/bin/python benchmarks/locomo_retrieval.py [path/to/locomo10.json]
        [--conversations N] [--similarity-only] [--at-once [--wait-indexed]] [--json]

--similarity-only ranks by the relevance alone (scoring_weights {"similarity": 1}), without
the recency, frequency and other factors of the default score. By default every conversation
is loaded and indexed (memory.health's backlog at 0) before the first question; --at-once
asks a conversation's questions as soon as its last memory.add_batch has answered, and
--wait-indexed has each memory.add_batch wait for its vectors (``wait_indexed``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import embedded_env, free_port, serve

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)
BATCH = 100


def sessions(conversation: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    conv = conversation["conversation"]
    names = [k for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)]
    names.sort(key=lambda k: int(k.split("_")[1]))
    return [(name, str(conv.get(f"{name}_date_time", "")), conv[name]) for name in names]


def turn_content(turn: dict[str, Any]) -> str:
    content = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [shared a photo: {turn['blip_caption']}]"
    return content


def evidence(items: list[Any], known: set[str]) -> list[str]:
    """Turn ids of a question's evidence ("D3:5"; tolerates "D3:05", "D:3:5", "D1:2; D4:6")."""
    found: list[str] = []
    for item in items:
        for token in re.split(r"[;,\s]+", str(item)):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", token.strip())
            dia = match and f"D{match.group(1)}:{match.group(2)}"
            if dia and dia in known and dia not in found:
                found.append(dia)
    return found


class Rpc:
    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.Client(timeout=300)

    def wait_ready(self, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.http.get(f"{self.base}/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise SystemExit("server did not start")

    def __call__(self, method: str, **params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        reply = self.http.post(f"{self.base}/rpc", json=body).json()
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result


def load(
    rpc: Rpc, conv_id: str, conversation: dict[str, Any], wait_indexed: bool = False
) -> set[str]:
    """Store the conversation's turns; returns their dia ids."""
    items: list[dict[str, Any]] = [
        {
            "content": turn_content(turn),
            "layer": "episodic",
            "user_id": conv_id,
            "session_id": name,
            "metadata": {
                "speaker": turn["speaker"],
                "session_date": date,
                "dia_id": turn["dia_id"],
            },
        }
        for name, date, turns in sessions(conversation)
        for turn in turns
    ]
    extra = {"wait_indexed": True} if wait_indexed else {}
    for start in range(0, len(items), BATCH):
        rpc("memory.add_batch", items=items[start : start + BATCH], **extra)
    return {str(item["metadata"]["dia_id"]) for item in items}


def settle(rpc: Rpc, seconds: float = 600) -> None:
    """Until the service's indexing backlog is empty."""
    deadline = time.monotonic() + seconds
    while rpc("memory.health")["indexing_backlog"] > 0:
        if time.monotonic() > deadline:
            raise SystemExit("the indexer did not catch up")
        time.sleep(0.2)


def ask(
    rpc: Rpc, conv_id: str, conversation: dict[str, Any], known: set[str], extra: dict[str, Any]
) -> tuple[list[tuple[int, dict[int, float]]], list[float]]:
    scores, latencies = [], []
    for qa in conversation["qa"]:
        category = qa.get("category")
        wanted = evidence(qa.get("evidence", []), known)
        if category not in CATEGORIES or not wanted:
            continue
        started = time.perf_counter()
        result = rpc("memory.search", query=str(qa["question"]), user_id=conv_id, limit=10, **extra)
        latencies.append((time.perf_counter() - started) * 1000)
        got = [r["memory"]["metadata"].get("dia_id") for r in result["results"]]
        scores.append((category, {k: len(set(got[:k]) & set(wanted)) / len(wanted) for k in KS}))
    return scores, latencies


def report(scores: list[tuple[int, dict[int, float]]], latencies: list[float]) -> dict[str, Any]:
    def recall(rows: list[dict[int, float]]) -> dict[str, float]:
        return {f"recall@{k}": round(statistics.fmean(r[k] for r in rows), 3) for k in KS}

    ordered = sorted(latencies)
    return {
        "questions": len(scores),
        "overall": recall([s for _, s in scores]),
        "by_category": {
            f"{c} {name}": {"questions": len(rows), **recall(rows)}
            for c, name in CATEGORIES.items()
            if (rows := [s for cat, s in scores if cat == c])
        },
        "search_ms": {
            "p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        },
    }


def print_table(result: dict[str, Any]) -> None:
    print(f"LoCoMo evidence recall, {result['questions']} questions (categories 1-4)")
    print(f"{'':18} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6}")
    rows = [("overall", {"questions": result["questions"], **result["overall"]})]
    rows += list(result["by_category"].items())
    for name, row in rows:
        values = " ".join(f"{row[f'recall@{k}']:6.3f}" for k in KS)
        print(f"{name:18} {row['questions']:5d} {values}")
    ms = result["search_ms"]
    print(f"memory.search over HTTP: p50 {ms['p50']} ms, p95 {ms['p95']} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    parser.add_argument("--similarity-only", action="store_true")
    parser.add_argument("--at-once", action="store_true", help="ask right after each load")
    parser.add_argument("--wait-indexed", action="store_true", help="add_batch waits for vectors")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if not args.path.is_file():
        raise SystemExit(f"LoCoMo file not found: {args.path}")
    data = json.loads(args.path.read_text())[: args.conversations]
    extra = {"scoring_weights": {"similarity": 1.0}} if args.similarity_only else {}

    with tempfile.TemporaryDirectory() as data_dir:
        port = free_port()
        server = serve(embedded_env(data_dir), port)
        try:
            rpc = Rpc(f"http://127.0.0.1:{port}")
            rpc.wait_ready()
            started = time.perf_counter()
            scores: list[tuple[int, dict[int, float]]] = []
            latencies: list[float] = []
            halves: tuple[list[dict[int, float]], ...] = ([], [])
            loaded = []
            for i, c in enumerate(data):
                conv_id = f"locomo-{c.get('sample_id', i)}"
                loaded.append((conv_id, c, load(rpc, conv_id, c, args.wait_indexed)))
                if args.at_once:
                    asked, took = ask(rpc, conv_id, c, loaded[-1][2], extra)
                    scores += asked
                    latencies += took
                    halves[2 * i // len(data)].extend(recalls for _, recalls in asked)
            load_seconds = time.perf_counter() - started
            if not args.at_once:
                settle(rpc)
                for index, (conv_id, conversation, known) in enumerate(loaded):
                    asked, took = ask(rpc, conv_id, conversation, known, extra)
                    scores += asked
                    latencies += took
                    halves[2 * index // len(loaded)].extend(recalls for _, recalls in asked)
        finally:
            server.terminate()
            server.wait(timeout=60)
    result = report(scores, latencies)
    # A change that helps one half of the conversations and not the other fits these questions
    # rather than conversations in general.
    result["recall@10_by_half"] = [
        round(statistics.fmean(r[10] for r in half), 3) if half else None for half in halves
    ]
    result["turns_loaded"] = sum(len(known) for _, _, known in loaded)
    result["load_seconds"] = round(load_seconds, 1)
    result["ranking"] = "relevance only" if args.similarity_only else "default score"
    result["asked"] = (
        "right after each conversation's load"
        + (", each add_batch waiting for its vectors" if args.wait_indexed else "")
        if args.at_once
        else "once everything was indexed"
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
        first, second = result["recall@10_by_half"]
        print(f"recall@10 of the first and second half of the conversations: {first}, {second}")
        print(
            f"ranking: {result['ranking']}; asked {result['asked']}; {result['turns_loaded']} "
            f"turns loaded in {result['load_seconds']} s"
        )


if __name__ == "__main__":
    main()
