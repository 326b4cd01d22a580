"""Seeded generator of realistic multi-stage agent memory traces.

Each trace is what an LLM agent writes into its memory service while working through one long
task, split into the four COMPASS stages (planning, execution, reflection, verification): scratch
notes, tool calls and their output, observations, errors and decisions. The traces feed the stage
compression benchmarks and serve as test input, so they are built to look like real agent notes:
ten task domains with their own files, functions, tables, hosts, tools and people, dozens of
sentence templates per stage that share vocabulary across stages, random values per trace, and a
near-duplicate filter inside every stage. Words like "tests", "plan", "error" or "executed" occur
in every stage, so nothing downstream can lean on stage keywords.

Every stage also carries planted facts for measuring what survives compression:

* ``constraints``: hard constraints of the task, verbatim. Some are whole memories the agent flagged
  ``critical=True`` (two or three in planning, one in execution), others are ordinary sentences
  ("must not", "never", "at most N", "by Friday", "is required") inside unflagged memories.
* ``details``: three to five questions whose short exact answer occurs in exactly one memory of
  the stage.

The sentence templates, phrases and domains are data (``data/``, described in ``catalog.py``);
the modules here only draw from them. The output for a seed is pinned by
``tests/unit/test_agent_traces_stable.py``: the figures measured on these traces hold only for
the same text. To print one trace:

    .venv/bin/python -m benchmarks.agent_traces [seed] [mixed|small]
"""

from __future__ import annotations

from .generate import generate_traces
from .model import KEYWORDS, STAGES, PlantedDetail, StageTrace, TaskTrace, TraceMemory

__all__ = [
    "KEYWORDS",
    "STAGES",
    "PlantedDetail",
    "StageTrace",
    "TaskTrace",
    "TraceMemory",
    "generate_traces",
]
