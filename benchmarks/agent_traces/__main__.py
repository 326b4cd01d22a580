"""Print one trace: ``.venv/bin/python -m benchmarks.agent_traces [seed] [mixed|small]``."""

from __future__ import annotations

import sys

from . import TaskTrace, generate_traces


def _print_trace(trace: TaskTrace) -> None:
    print(f"task {trace.task_id}  (domain {trace.domain})")
    print(f"goal: {trace.goal}")
    for stage in trace.stages:
        print(f"\n===== {stage.stage_type}: {len(stage.memories)} memories =====")
        for number, memory in enumerate(stage.memories, 1):
            flag = "[CRITICAL] " if memory.critical else ""
            meta = f"   {memory.metadata}" if memory.metadata else ""
            body = memory.content.replace("\n", "\n       | ")
            print(f"{number:4d}. {flag}{body}{meta}")
        print("  constraints:")
        for sentence in stage.constraints:
            print(f"    - {sentence}")
        print("  details:")
        for detail in stage.details:
            print(f"    - {detail.question} -> {detail.answer}")
    print(f"\n{'stage':<14}{'memories':>9}{'critical':>9}{'constr.':>9}{'details':>9}{'chars':>9}")
    for stage in trace.stages:
        critical = sum(memory.critical for memory in stage.memories)
        chars = sum(len(memory.content) for memory in stage.memories)
        print(
            f"{stage.stage_type:<14}{len(stage.memories):>9}{critical:>9}"
            f"{len(stage.constraints):>9}{len(stage.details):>9}{chars:>9}"
        )


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    size = sys.argv[2] if len(sys.argv) > 2 else "mixed"
    _print_trace(generate_traces(1, seed, size=size)[0])


if __name__ == "__main__":
    main()
