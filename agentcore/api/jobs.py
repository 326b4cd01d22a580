"""memory.job.get: the status and result of a background job (e.g. a stage compression)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agentcore.api.params import Identifier, Params
from agentcore.api.rpc import RpcMethod
from agentcore.domain.errors import InvalidParams
from agentcore.services.jobs import JobQueue, JobStatus


class JobParams(Params):
    job_id: Identifier


class JobResult(BaseModel):
    job_id: str
    state: str  # pending, running, succeeded or failed
    result: dict[str, Any] | None
    error: dict[str, Any] | None

    @classmethod
    def of(cls, status: JobStatus) -> JobResult:
        return cls(
            job_id=status.job_id, state=status.state.value, result=status.result, error=status.error
        )


def job_methods(jobs: JobQueue) -> list[RpcMethod]:
    async def get(a: JobParams) -> JobResult:
        status = await jobs.status(a.job_id)
        if status is None:
            raise InvalidParams(
                f"no job {a.job_id}", errors=[{"field": "job_id", "message": "unknown job"}]
            )
        return JobResult.of(status)

    return [RpcMethod("memory.job.get", JobParams, JobResult, get, "Status of a background job.")]
