"""The stored lexical index of one large scope, in this process: build, open, search latency
and agreement with exhaustive BM25, at sizes the service benchmark (``scale.py``) takes hours
to load.

The documents are those ``scale.py`` stores: LoCoMo turns numbered ``(#i)`` in sessions of 20,
each with its neighbours in the session as context and one of ten tags as metadata, stemmed
as the service stems them (each distinct turn once; the number is one more word). They are
built into ``lexical/postings.py`` arrays, written, opened memory-mapped, and searched through
``StoredScope`` with --queries LoCoMo questions, limit 30 (the service's candidate pool) and
480 (a search filtered on the memory's fields takes 16 × its pool), before and after
--changes documents are rewritten in memory (the changes since a build). The reference is the
same BM25 scored over every posting of the query's stems (numpy): agreement@k is the share of
the index's k found in the exact top k, ties with the exact k-th score counting as in it.

    .venv/bin/python benchmarks/lexical_scale.py [--documents 1000000] [--dir /tmp/lexical]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from service_latency import corpus

from agentcore.adapters.db.lexical.coverage import K1, FtsStems, length_norm
from agentcore.adapters.db.lexical.postings import Document, Postings
from agentcore.adapters.db.lexical.scope import LAYERS, Query, document_stems
from agentcore.adapters.db.lexical.stored import StoredScope
from agentcore.adapters.db.lexical.writer import query_terms

SESSION = 20
TAGS = 10
NEIGHBOUR, META = 0.35, 0.5


def documents(turns: list[str], count: int, stems: FtsStems) -> Iterator[Document]:
    """What ``scale.py`` stores, as the service stems it (checked on the first 200)."""
    cache: dict[str, tuple[dict[str, float], int]] = {}

    def of(text: str) -> tuple[dict[str, float], int]:
        if text not in cache:
            cache[text] = document_stems(stems, [text, "", "", ""])
        return cache[text]

    layer = LAYERS["episodic"]
    tags = stems([f"t{i}" for i in range(TAGS)])
    for i in range(count):
        frequencies: dict[str, float] = {}
        length = 0
        session = range(i - i % SESSION, min(count, i - i % SESSION + SESSION))
        fields = [(i, 1.0)]
        fields += [(j, NEIGHBOUR) for j in (i - 1, i + 1) if j in session]
        for j, weight in fields:
            own, words = of(turns[j % len(turns)])
            for stem, tf in own.items():
                frequencies[stem] = frequencies.get(stem, 0.0) + tf * weight
            key = str(j)  # digits: the tokenizer's stem is the number itself
            frequencies[key] = frequencies.get(key, 0.0) + weight
            length += words + 1
        tag = tags[i % TAGS]
        frequencies[tag] = frequencies.get(tag, 0.0) + META
        if i < 200:  # the shortcut stems as the service does
            texts = [f"{turns[j % len(turns)]} (#{j})" for j in (i - 1, i, i + 1)]
            before = texts[0] if i - 1 in session else ""
            after = texts[2] if i + 1 in session else ""
            exact = document_stems(stems, [texts[1], before, after, f"t{i % TAGS}"])
            assert exact[1] == length + 1
            assert exact[0].keys() == frequencies.keys()
            assert all(math.isclose(exact[0][k], frequencies[k]) for k in frequencies)
        yield f"m{i:08d}", layer, math.inf, frequencies, length + 1


def exhaustive(scope: StoredScope, query: Query, limit: int) -> list[tuple[float, int]]:
    """Every posting of the query's stems scored: the exact best ``limit`` (score, slot)."""
    base = scope.base
    scores = np.zeros(base.documents)
    norm = length_norm(base.lengths.astype(np.float64), query.average_length)
    for stem, weight in query.bm25_idf.items():
        term = base.term(stem)
        if term < 0:
            continue
        slots, tfs = base.postings(term)
        tf = tfs.astype(np.float64)
        scores[slots] += weight * tf * (K1 + 1) / (tf + norm[slots])
    top = np.argsort(-scores, kind="stable")[: max(limit, 2_000)]
    return [(float(scores[s]), int(s)) for s in top if scores[s] > 0]


def agreement(got: list[tuple[float, str]], exact: list[tuple[float, int]], k: int) -> float:
    if not exact:
        return 1.0
    kth = exact[min(k, len(exact)) - 1][0]
    inside = [score for score, _ in got[:k] if score >= kth * (1 - 1e-6)]
    return len(inside) / min(k, len(exact))


def searches(
    scope: StoredScope, stems: FtsStems, questions: list[str], exact: bool
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for limit in (30, 480):
        timings, cpu, shares = [], [], {10: [], 30: []}
        for question in questions:
            started, started_cpu = time.perf_counter(), time.process_time()
            query = Query.over([scope], stems(query_terms(question)))
            hits = sorted(scope.best(query, limit, None, time.time(), None), reverse=True)
            timings.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
            if exact and limit == 30 and query.bm25_idf:
                best = exhaustive(scope, query, 30)
                for k, values in shares.items():
                    values.append(agreement(hits, best, k))
        ordered = sorted(timings)
        row: dict[str, Any] = {
            "p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[int(0.95 * len(ordered))], 2),
            "max_ms": round(ordered[-1], 2),
            # this process's CPU time: what the machine's other work does not inflate
            "cpu_p50_ms": round(statistics.median(cpu), 2),
            "cpu_p95_ms": round(sorted(cpu)[int(0.95 * len(cpu))], 2),
        }
        if shares[10]:
            row |= {f"agreement_at_{k}": round(float(np.mean(v)), 4) for k, v in shares.items()}
        report[f"limit_{limit}"] = row
    return report


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return -1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/lexical-scale"))
    parser.add_argument(
        "--reuse", action="store_true", help="open the index built in --dir by an earlier run"
    )
    args = parser.parse_args()
    turns, questions = corpus()
    stems = FtsStems()
    rng = random.Random(9)
    asked = [rng.choice(questions) for _ in range(args.queries)]
    report: dict[str, Any] = {"documents": args.documents}
    directory = args.dir / "k1-1"
    if not args.reuse:
        started = time.monotonic()
        docs = documents(turns, args.documents, stems)
        postings = Postings.build("user:scale", 1, docs)
        report["stem_and_build_seconds"] = round(time.monotonic() - started, 1)
        shutil.rmtree(args.dir, ignore_errors=True)
        started = time.monotonic()
        postings.write(directory)
        report["write_seconds"] = round(time.monotonic() - started, 1)
        report["builder_rss_mib"] = rss_mib()
        del docs, postings
    report["disk_mib"] = round(sum(f.stat().st_size for f in directory.iterdir()) / 2**20, 1)
    rss_before = rss_mib()
    started = time.perf_counter()
    scope = StoredScope(Postings.open(directory))
    report["open_ms"] = round((time.perf_counter() - started) * 1000, 2)
    report["postings"], report["stems"] = len(scope.base.slots), len(scope.base.terms)
    report["rss_mib"] = {"before_open": rss_before, "after_open": rss_mib()}
    report["searches"] = searches(scope, stems, asked, exact=True)
    report["rss_mib"]["after_searches"] = rss_mib()
    # Documents rewritten since the build: each now holds another turn's words.
    for slot in rng.sample(range(scope.base.documents), min(args.changes, scope.base.documents)):
        frequencies, length = document_stems(stems, [rng.choice(turns), "", "", ""])
        scope.put(scope.base.memory_id(slot), "episodic", math.inf, frequencies, length)
    report["changes_in_memory"] = scope.changed
    report["searches_after_changes"] = searches(scope, stems, asked, exact=False)
    report["machine"] = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
