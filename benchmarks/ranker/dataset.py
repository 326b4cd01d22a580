"""Candidates and their features for every question of a set of conversations."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from dataclasses import dataclass
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


async def _extract(conversations: list[dict[str, Any]], pool: int) -> Features:
    rows: list[npt.NDArray[np.float64]] = []
    labels: list[int] = []
    group: list[int] = []
    category: list[int] = []
    owner: list[int] = []
    evidence: list[int] = []
    embedder = ""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp), search_candidates=pool)
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        embedder = container.embedder.model_name
        try:
            for index, conversation in enumerate(conversations):
                scope = ScopeIds(user_id=f"conv-{index}")
                known = await _store(container, conversation, f"conv-{index}")
                await container.memory.indexed(600)
                for qa in conversation["qa"]:
                    wanted = evidence_ids(qa.get("evidence", []), known)
                    if qa.get("category") not in CATEGORIES or not wanted:
                        continue
                    query = SearchQuery(str(qa["question"]), scope, limit=LIMIT)
                    asked, candidates = await container.retrieval.candidates(query)
                    if not candidates:
                        continue
                    rows.append(features(asked, candidates))
                    labels += [int(c.memory.metadata.get("dia_id") in wanted) for c in candidates]
                    group.append(len(candidates))
                    category.append(int(qa["category"]))
                    owner.append(index)
                    evidence.append(len(wanted))
        finally:
            await container.aclose()
    return Features(
        np.vstack(rows).astype(np.float32),
        np.array(labels, dtype=np.int8),
        np.array(group, dtype=np.int32),
        np.array(category, dtype=np.int8),
        np.array(owner, dtype=np.int16),
        np.array(evidence, dtype=np.int16),
        embedder,
    )


async def _store(container: Any, conversation: dict[str, Any], user_id: str) -> set[str]:
    items = [
        NewMemory(
            turn_content(turn),
            ScopeIds(user_id=user_id, session_id=name),
            layer="episodic",
            metadata={"speaker": turn["speaker"], "session_date": date, "dia_id": turn["dia_id"]},
        )
        for name, date, turns in sessions(conversation)
        for turn in turns
    ]
    for start in range(0, len(items), BATCH):
        await container.memory.add_batch(items[start : start + BATCH])
    return {str(item.metadata["dia_id"]) for item in items}


def extract(path: Path, pool: int, limit: int | None = None) -> Features:
    conversations = json.loads(path.read_text(encoding="utf-8"))[:limit]
    return asyncio.run(_extract(conversations, pool))
