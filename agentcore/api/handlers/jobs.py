"""memory.job.get: the status and result of a background job (e.g. a stage compression)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcore.api.params import Identifier, Params
from agentcore.api.rpc import RpcMethod
from agentcore.domain.errors import InvalidParams
from agentcore.services.jobs import JobQueue, JobStatus


class JobParams(Params):
    job_id: Identifier


class JobResult(BaseModel):
    job_id: str
    status: Literal["queued", "running", "succeeded", "failed"]
    result: dict[str, Any] | None = Field(
        description="when succeeded: the job's record; for a stage compression exactly the "
        "stage and stage_memory that memory.stage.complete returns when it waits"
    )
    error: dict[str, Any] | None = Field(
        description="when failed: code, message and retryable (a job whose worker stopped "
        "fails with a retryable code)"
    )

    @classmethod
    def of(cls, status: JobStatus) -> JobResult:
        return cls(
            job_id=status.job_id,
            status=status.state.value,
            result=status.result,
            error=status.error,
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
