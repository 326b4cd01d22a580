"""Candidates and their features for every question of a set of conversations."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentcore.adapters.db.migrate import upgrade
from agentcore.bootstrap import build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.relevance import FEATURES, features
from agentcore.services.retrieval import SearchQuery

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BATCH = 100
LIMIT = 10  # the search the candidates are those of (``SearchQuery.limit``)


@dataclass(frozen=True)
class Features:
    """One row per candidate, grouped by question (``group``: the rows of each, in order)."""

    x: npt.NDArray[np.float32]
    label: npt.NDArray[np.int8]  # 1: the candidate is an evidence turn of its question
    group: npt.NDArray[np.int32]
    category: npt.NDArray[np.int8]  # per question
    conversation: npt.NDArray[np.int16]  # per question: its index in the file
    evidence: npt.NDArray[np.int16]  # per question: its evidence turns, found or not
    embedder: str = ""  # the model the cosines are of

    def save(self, path: Path) -> None:
        arrays = {k: v for k, v in self.__dict__.items() if k != "embedder"}
        np.savez_compressed(
            path, features=np.array(FEATURES), embedder=np.array(self.embedder), **arrays
        )

    @staticmethod
    def load(path: Path) -> Features:
        data = np.load(path)
        if tuple(data["features"]) != FEATURES:
            raise SystemExit(f"{path}: computed with other features; compute it again")
        return Features(
            data["x"],
            data["label"],
            data["group"],
            data["category"],
            data["conversation"],
            data["evidence"],
            str(data["embedder"]) if "embedder" in data else "",
        )


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


def evidence_ids(items: list[Any], known: set[str]) -> list[str]:
    """Turn ids of a question's evidence ("D3:5"; tolerates "D3:05", "D:3:5", "D1:2; D4:6")."""
    found: list[str] = []
    for item in items:
        for token in re.split(r"[;,\s]+", str(item)):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", token.strip())
            dia = match and f"D{match.group(1)}:{match.group(2)}"
            if dia and dia in known and dia not in found:
                found.append(dia)
    return found


@dataclass
class _Rows:
    rows: list[npt.NDArray[np.float64]]
    labels: list[int]
    group: list[int]
    category: list[int]
    owner: list[int]
    evidence: list[int]

    async def ask(
        self, container: Any, scope: ScopeIds, qa: dict[str, Any], wanted: list[str], owner: int
    ) -> None:
        """The candidates of one question, through the service's own candidate generation."""
        query = SearchQuery(str(qa["question"]), scope, limit=LIMIT)
        asked, candidates = await container.retrieval.candidates(query)
        if not candidates:
            return
        self.rows.append(features(asked, candidates))
        self.labels += [int(c.memory.metadata.get("dia_id") in wanted) for c in candidates]
        self.group.append(len(candidates))
        self.category.append(int(qa["category"]))
        self.owner.append(owner)
        self.evidence.append(len(wanted))


async def _extract(conversations: list[dict[str, Any]], pool: int, small: float) -> Features:
    """Each conversation in a scope of its own, every question asked of it; and, for a share
    ``small`` of the questions, a scope of their own holding their evidence and a few to
    sixty other turns of the conversation: questions asked of a handful of memories, as an
    agent's memory of a user often is, not only of a conversation of hundreds."""
    out = _Rows([], [], [], [], [], [])
    draw = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp), search_candidates=pool)
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        embedder = container.embedder.model_name
        try:
            for index, conversation in enumerate(conversations):
                turns = _turns(conversation)
                known = {str(item.metadata["dia_id"]) for item in turns}
                await _store(container, _in_scope(turns, f"conv-{index}"))
                await container.memory.indexed(600)
                asked = [
                    (qa, wanted)
                    for qa in conversation["qa"]
                    if qa.get("category") in CATEGORIES
                    and (wanted := evidence_ids(qa.get("evidence", []), known))
                ]
                for qa, wanted in asked:
                    await out.ask(container, ScopeIds(user_id=f"conv-{index}"), qa, wanted, index)
                for n, (qa, wanted) in enumerate(asked):
                    if draw.random() >= small:
                        continue
                    others = [t for t in turns if t.metadata["dia_id"] not in wanted]
                    size = min(
                        len(others), round(math.exp(draw.uniform(math.log(2), math.log(60))))
                    )
                    chosen = [t for t in turns if t.metadata["dia_id"] in wanted]
                    chosen += draw.sample(others, size)
                    chosen.sort(key=lambda t: turns.index(t))
                    user = f"conv-{index}-q{n}"
                    await _store(container, _in_scope(chosen, user))
                    await container.memory.indexed(600)
                    await out.ask(container, ScopeIds(user_id=user), qa, wanted, index)
        finally:
            await container.aclose()
    return Features(
        np.vstack(out.rows).astype(np.float32),
        np.array(out.labels, dtype=np.int8),
        np.array(out.group, dtype=np.int32),
        np.array(out.category, dtype=np.int8),
        np.array(out.owner, dtype=np.int16),
        np.array(out.evidence, dtype=np.int16),
        embedder,
    )


def _turns(conversation: dict[str, Any]) -> list[NewMemory]:
    """Its turns as memories (without a scope yet), in order."""
    return [
        NewMemory(
            turn_content(turn),
            ScopeIds(session_id=name),
            layer="episodic",
            metadata={"speaker": turn["speaker"], "session_date": date, "dia_id": turn["dia_id"]},
        )
        for name, date, turns in sessions(conversation)
        for turn in turns
    ]


def _in_scope(turns: list[NewMemory], user_id: str) -> list[NewMemory]:
    return [
        replace(t, scope=ScopeIds(user_id=user_id, session_id=t.scope.session_id)) for t in turns
    ]


async def _store(container: Any, items: list[NewMemory]) -> None:
    for start in range(0, len(items), BATCH):
        await container.memory.add_batch(items[start : start + BATCH])


def extract(path: Path, pool: int, limit: int | None = None, small: float = 0.0) -> Features:
    conversations = json.loads(path.read_text(encoding="utf-8"))[:limit]
    return asyncio.run(_extract(conversations, pool, small))
