"""Checking an embedder against a reference: texts (deterministic, varied in length, script and
punctuation, the way agents and users write; no data set is copied) and row-wise cosines."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import numpy.typing as npt

from tests.agent_trace import STAGES

_FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
_NAMES = ("Alice", "Bob", "Caroline", "Dmitri", "Élodie", "Kenji", "Priya", "the agent")
_ACTIONS = (
    "moved to Lisbon last spring",
    "prefers green tea in the morning and coffee after lunch",
    "is allergic to peanuts, so the caterer must be told",
    "restarted the payments worker after the 503s at 02:14 UTC",
    "asked whether the refund for order #88213 went through",
    "started a new job at a robotics startup in Berlin",
    "said the tests were flaky because of a race in the cache warm-up",
    "wants the plan for Q3 to include a migration off Postgres 12",
    "adopted a rescue dog named Pepper 🐶",
    "is learning Portuguese — slowly, but every day",
)
_TAILS = ("", " Really.", " (confirmed twice)", " See ticket OPS-4412.", " ¿Verdad?", " 本当に。")


def texts(count: int = 600) -> list[str]:
    """``count`` distinct texts: the embedding fixture's sentences (stripped), an agent's task
    trace, then sentences made from names, actions and tails."""
    sentences = [s.strip() for s in json.loads(_FIXTURE.read_text("utf-8"))["sentences"]]
    trace = [line for lines in STAGES.values() for line in lines]
    made = (
        f"{name} {action}.{tail}"
        for name, action, tail in itertools.product(_NAMES, _ACTIONS, _TAILS)
    )
    result = list(dict.fromkeys([*sentences, *trace, *made]))
    return result[:count]


def row_cosines(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """The cosine of each row of ``a`` with the same row of ``b``."""
    products = np.sum(a * b, axis=1, dtype=np.float64)
    result: npt.NDArray[np.float64] = products / (
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    )
    return result
