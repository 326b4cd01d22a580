"""COMPASS through the real app (embedded: extractive compression, jobs in process)."""

from __future__ import annotations

import time

from starlette.testclient import TestClient

from tests.e2e.test_rpc_api import result, rpc

PLAN = [
    "Plan: first read the failing test log, then bisect the last ten commits.",
    "The fix must not change the public API of the billing module.",
    "We will finish before Friday 17:00 because the release train leaves then.",
    "Step 2 is to reproduce the bug locally with the staging dataset.",
]
WORK = [
    f"Ran the bisect step {i}: commit {i} builds and the invoice totals are still wrong."
    for i in range(12)
] + ["Found it: commit 7 rounds VAT per line instead of per invoice; reverted the rounding."]


def test_stages_compress_and_the_task_keeps_its_constraints(client: TestClient) -> None:
    task = {"task_id": "e2e-compass"}
    planning = result(client, "memory.stage.start", stage_type="planning", **task)["stage_id"]
    for text in PLAN:
        added = result(client, "memory.add", content=text, **task)
        assert added["stage_id"] == planning
    execution = result(client, "memory.stage.start", stage_type="execution", **task)
    assert execution["previous_stage_id"] == planning
    for text in WORK:
        assert (
            result(client, "memory.add", content=text, **task)["stage_id"] == execution["stage_id"]
        )

    done = result(client, "memory.stage.complete", stage_id=execution["stage_id"], **task)
    memory = done["stage_memory"]
    assert done["stage"]["status"] == "completed"
    assert len(memory["raw_memory_ids"]) == len(WORK)
    assert memory["compression_ratio"] > 3
    assert memory["quality_metrics"]["retention"] >= 0.95

    first = result(client, "memory.stage.complete", stage_id=planning, wait=False, **task)
    if first["stage_memory"] is None:  # not yet compressed by the background loop
        job = first["job_id"]
        for _ in range(100):
            status = result(client, "memory.job.get", job_id=job)
            if status["status"] == "succeeded":
                break
            time.sleep(0.05)
        assert status["status"] == "succeeded"

    progress = result(client, "memory.task.progress", **task)
    assert progress["completed_stages"] == [planning, execution["stage_id"]]
    assert any("public API" in c for c in progress["critical_constraints"])
    assert progress["performance_metrics"]["stage_compressions"] == 2

    raw = result(client, "memory.task.context", level="raw", **task)
    brief = result(client, "memory.task.context", level="task", **task)
    assert brief["token_count"] < raw["token_count"]
    small = result(client, "memory.task.context", level="raw", max_tokens=40, **task)
    assert small["truncated"] is True
    assert small["token_count"] <= 40


def test_stage_errors(client: TestClient) -> None:
    missing = rpc(client, "memory.stage.complete", task_id="nope", stage_id="nope")["error"]
    assert missing["data"]["code"] == "STAGE_NOT_FOUND"
    unknown_task = rpc(client, "memory.task.progress", task_id="never-started")["error"]
    assert unknown_task["data"]["code"] == "TASK_NOT_FOUND"
    bad_type = rpc(client, "memory.stage.start", task_id="t", stage_type="dreaming")["error"]
    assert bad_type["code"] == -32602
