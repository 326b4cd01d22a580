"""What the REST face answers: these models build every response and the OpenAPI document.
The requests are the JSON-RPC methods' params models (``openapi.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentcore.api.schemas import MemoryOut

OPERATIONS = ("create", "update", "delete")


class Entry(BaseModel):
    id: str
    layer: str = Field(description="the spec layer (Working … Archival)")
    memory: MemoryOut


class CreateResult(BaseModel):
    id: str
    layer: str
    memory: MemoryOut | None = Field(None, description="absent for a Working item")
    working_item: dict[str, Any] | None = Field(
        None, description="the item, when the layer was Working (memory.working.append)"
    )
    deduplicated: bool = False


class DeleteResult(BaseModel):
    id: str
    deleted: Literal[True] = True


class Hit(BaseModel):
    id: str
    layer: str
    score: float
    similarity: float
    factors: dict[str, float] = Field(description="the six factors the score is made of")
    memory: MemoryOut
    superseded_by: str | None
    current_for: str | None


class QueryResult(BaseModel):
    results: list[Hit]
    total_count: int
    searched_layers: list[str]
    working: list[dict[str, Any]] | None = Field(
        None, description="the session's working items, in order, when Working was named"
    )


class HistorySummary(BaseModel):
    events: int
    by_type: dict[str, int]
    first_at: datetime | None
    last_at: datetime | None


class Metadata(BaseModel):
    id: str
    layer: str
    scope: str
    scope_ids: dict[str, str]
    tags: list[str]
    metadata: dict[str, Any]
    key: str | None
    stage_id: str | None
    critical: bool
    importance: float
    sensitive: bool
    provenance: dict[str, Any] = Field(
        description="source, confidence, promoted_from_id, compacted_from_ids, "
        "created_in_session_id"
    )
    validity: dict[str, Any] = Field(
        description="created_at, updated_at, expires_at, valid_to, superseded_by, fact_slot"
    )
    access: dict[str, Any] = Field(description="access_count, last_accessed_at")
    history: HistorySummary


class BatchItem(BaseModel):
    index: int
    op: str
    status: int = Field(description="the HTTP status this operation alone would have had")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = Field(None, description="as the body of an error answer")


class BatchResult(BaseModel):
    results: list[BatchItem]
    succeeded: int
    failed: int


class LayerOut(BaseModel):
    name: str
    agentcore_layers: list[str]
    scope_levels: list[str]
    description: str


class Discovery(BaseModel):
    protocol: str = "openspec"
    protocol_version: str = "1.0.0"
    provider: dict[str, str]
    layers: list[LayerOut]
    scopes: list[dict[str, str]] = Field(description="levels, most specific first, and their ids")
    filters: dict[str, Any]
    max_batch: int
    embedding: dict[str, Any]
    endpoints: list[dict[str, str]]
    stream: dict[str, Any]


class ErrorBody(BaseModel):
    code: str
    message: str
    retryable: bool
    details: dict[str, Any] | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


class StreamEvent(BaseModel):
    """The ``data`` of one Server-Sent Event; its ``id`` is ``position``."""

    position: int
    type: str = Field(description="create, update, delete, supersede, promote, compact or expire")
    memory_id: str
    scope: str
    scope_id: str
    at: datetime
    actor: str | None
    layer: str | None = Field(None, description="our layer, when the change names it")
    before: dict[str, Any] | None
    after: dict[str, Any] | None
