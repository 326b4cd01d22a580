from __future__ import annotations

import asyncio
from typing import Any

from agentcore.adapters.jobs.local import InProcessJobQueue
from agentcore.domain.errors import StageNotFound
from agentcore.services.jobs import JobState


async def double(payload: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0.01)
    return {"value": payload["value"] * 2}


async def missing(_: dict[str, Any]) -> dict[str, Any]:
    raise StageNotFound("no stage s1")


async def broken(_: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("secret path /srv/x.py")


HANDLERS = {"double": double, "missing": missing, "broken": broken}


async def test_a_job_runs_and_its_result_is_kept() -> None:
    queue = InProcessJobQueue(HANDLERS)
    job_id = await queue.submit("double", {"value": 21})
    status = await queue.wait(job_id, max_wait=5)
    assert status.state is JobState.SUCCEEDED
    assert status.result == {"value": 42}
    assert await queue.status(job_id) == status
    assert await queue.status("unknown") is None


async def test_failures_carry_a_code_and_no_exception_text() -> None:
    queue = InProcessJobQueue(HANDLERS)
    failed = await queue.wait(await queue.submit("missing", {}), max_wait=5)
    assert failed.error == {"code": "STAGE_NOT_FOUND", "message": "no stage s1", "retryable": False}
    crashed = await queue.wait(await queue.submit("broken", {}), max_wait=5)
    assert crashed.error == {
        "code": "INTERNAL_ERROR",
        "message": "Internal error",
        "retryable": True,
    }
    unknown = await queue.wait(await queue.submit("nope", {}), max_wait=5)
    assert unknown.state is JobState.FAILED
    assert unknown.error is not None
    assert unknown.error["code"] == "INVALID_PARAMS"


async def test_waiting_less_than_the_job_takes_reports_it_running() -> None:
    queue = InProcessJobQueue(HANDLERS)
    job_id = await queue.submit("double", {"value": 1})
    assert (await queue.wait(job_id, max_wait=0)).state is JobState.RUNNING
    await queue.close()
    assert (await queue.status(job_id)) is not None
