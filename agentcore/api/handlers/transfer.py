"""JSON-RPC methods ``memory.export`` and ``memory.import`` (records of one scope, paged)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints

from agentcore.api import cursor
from agentcore.api.params import FilterParam, Identifier, ScopeParams, Tags, Timestamp
from agentcore.api.rpc import RpcMethod
from agentcore.domain.filter_grammar import parse_filter
from agentcore.services.lifecycle.transfer import MAX_PAGE, TransferService, to_record

IMPORT_BATCH = 100  # records per call: one memory.add_batch (MEMORY_MAX_BATCH_SIZE)
Layer = Annotated[str, StringConstraints(pattern=r"^(episodic|semantic|procedural)$")]


class ExportParams(ScopeParams):
    scope: str | None = Field(None, description="the scope level; default: the most specific id")
    layers: Annotated[list[Layer], Field(min_length=1, max_length=3)] | None = None
    filter: FilterParam | None = None
    cursor: Annotated[str, StringConstraints(max_length=512)] | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 100


class ExportResult(BaseModel):
    records: list[dict[str, Any]] = Field(description="oldest first; see memory.import")
    next_cursor: str | None = Field(description="null on the last page")
    total_count: int = Field(
        description="memories of the scope (all layers) that satisfy the filter, if any"
    )


class ImportRecord(ScopeParams):
    """One exported memory (other fields of a record are ignored). Scope ids it names must be
    the call's."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    original_id: Identifier
    content: Annotated[str, StringConstraints(min_length=1)]
    layer: Layer | None = None
    scope: str | None = None
    tags: Tags = Field(default_factory=list)
    metadata: Annotated[dict[str, JsonValue], Field(max_length=64)] = Field(default_factory=dict)
    key: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    stage_id: Identifier | None = None
    importance: Annotated[float, Field(ge=0, le=1, strict=False)] | None = None
    critical: bool = False
    sensitive: bool = False
    created_at: Timestamp | None = None
    expires_at: Timestamp | None = None
    source: Annotated[str, StringConstraints(max_length=64)] | None = None
    confidence: Annotated[float, Field(ge=0, le=1, strict=False)] | None = None
    promoted_from_id: Identifier | None = None
    compacted_from_ids: Annotated[list[Identifier], Field(max_length=1000)] = Field(
        default_factory=list
    )
    created_in_session_id: Identifier | None = None


class ImportParams(ScopeParams):
    records: Annotated[list[ImportRecord], Field(min_length=1, max_length=IMPORT_BATCH)]


class ImportResult(BaseModel):
    imported: list[str] = Field(description="ids of the memories written")
    skipped: list[str] = Field(description="original ids imported into this scope before")
    expired: list[str] = Field(description="original ids whose expiry has passed")


def transfer_methods(transfer: TransferService) -> list[RpcMethod]:
    async def export(a: ExportParams) -> ExportResult:
        page = await transfer.export_page(
            a.scope_ids(),
            scope_level=a.scope,
            layers=a.layers,
            where=parse_filter(a.filter),
            after=None if a.cursor is None else cursor.decode(a.cursor, "asc"),
            limit=a.limit,
        )
        return ExportResult(
            records=[to_record(m) for m in page.memories],
            next_cursor=None if page.next_after is None else cursor.encode(page.next_after, "asc"),
            total_count=page.total_count,
        )

    async def import_(a: ImportParams) -> ImportResult:
        records = [r.model_dump() for r in a.records]
        report = await transfer.import_records(records, a.scope_ids())
        return ImportResult(
            imported=report.imported, skipped=report.skipped, expired=report.expired
        )

    return [
        RpcMethod(
            "memory.export",
            ExportParams,
            ExportResult,
            export,
            "One page of a scope's memories as records with provenance, oldest first.",
        ),
        RpcMethod(
            "memory.import",
            ImportParams,
            ImportResult,
            import_,
            "Store exported records in the caller's scope; importing twice keeps one copy.",
        ),
    ]
