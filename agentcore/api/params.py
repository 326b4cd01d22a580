"""Params of every JSON-RPC method, validated strictly: wrong types are refused, not coerced."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    model_validator,
)

from agentcore.domain.models import ScopeIds

Identifier = Annotated[str, StringConstraints(min_length=1, max_length=255)]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Tags = Annotated[list[Tag], Field(max_length=32)]
Scalar = str | int | bool
FILTER_GRAMMAR = (
    'mem0\'s filter grammar: {field: value} (a list: any of them; "*": present), '
    "{field: {op: value}} with eq, ne, gt, gte, lt, lte, in, nin, contains, icontains, "
    "tags {all|any|none: [...]}, AND/OR/NOT lists of filters. Fields: layer, tags, stage_id, "
    "critical, importance, created_at, updated_at, or a metadata key (dotted for nested "
    "keys; metadata.<key> for one named like a field)"
)
FilterParam = Annotated[dict[str, JsonValue], Field(description=FILTER_GRAMMAR)]


def _as_utc(value: datetime) -> datetime:
    """Naive timestamps are taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


Timestamp = Annotated[datetime, Field(strict=False), AfterValidator(_as_utc)]


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoParams(Params):
    pass


class ScopeParams(Params):
    """The scope identifiers; a scoped call supplies at least one."""

    task_id: Identifier | None = None
    agent_id: Identifier | None = None
    user_id: Identifier | None = None
    session_id: Identifier | None = None
    project_id: Identifier | None = None
    team_id: Identifier | None = None
    org_id: Identifier | None = None
    company_id: Identifier | None = None

    def scope_ids(self) -> ScopeIds:
        return ScopeIds(
            task_id=self.task_id,
            agent_id=self.agent_id,
            user_id=self.user_id,
            session_id=self.session_id,
            project_id=self.project_id,
            team_id=self.team_id,
            org_id=self.org_id,
            company_id=self.company_id,
        )


class AddItemParams(ScopeParams):
    content: Annotated[str, Field(min_length=1)]
    layer: str | None = Field(None, description="episodic (default), semantic or procedural")
    scope: str | None = Field(None, description="scope level; default: most specific id given")
    metadata: dict[str, JsonValue] = Field(default_factory=dict, max_length=64)
    tags: Tags = Field(default_factory=list)
    critical: bool = False
    stage_id: Identifier | None = None
    expires_at: Timestamp | None = None
    ttl_seconds: Annotated[int, Field(ge=1, le=10 * 365 * 86400)] | None = None
    key: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None
    infer: bool = Field(False, description="also extract semantic facts from the content")
    importance: Annotated[float, Field(ge=0, le=1, strict=False)] | None = Field(
        None, description="0-1; default: scored from the content"
    )
    sensitive: bool = Field(False, description="never promoted to a broader scope")


class Message(Params):
    """One message of a conversation, as mem0 and chat APIs write it."""

    role: Literal["user", "assistant", "system", "tool"]
    content: Annotated[str, Field(min_length=1)]
    name: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None


class AddParams(AddItemParams):
    """``memory.add``: ``content``, or mem0's ``messages`` (a string, or a list of
    ``{role, content}`` stored as one memory per message with its role)."""

    content: Annotated[str, Field(min_length=1)] | None = None  # type: ignore[assignment]
    messages: list[Message] | Annotated[str, Field(min_length=1)] | None = Field(
        None, description="instead of content: a string, or a list of {role, content[, name]}"
    )

    @model_validator(mode="after")
    def _one_input(self) -> AddParams:
        if (self.content is None) == (self.messages is None):
            raise ValueError("give either content or messages")
        if isinstance(self.messages, list):
            if not self.messages:
                raise ValueError("messages is empty")
            if self.key is not None:
                raise ValueError("key names one memory; messages store one per message")
        return self


class AddBatchParams(Params):
    items: Annotated[list[AddItemParams], Field(min_length=1)]
    wait_indexed: bool = Field(
        False,
        description="answer once the items' vectors are written too (at most 30 s), so the "
        "first search after the reply finds them by meaning as well as by their words",
    )


class MemoryIdParams(ScopeParams):
    memory_id: Identifier


class UpdateParams(MemoryIdParams):
    content: Annotated[str, Field(min_length=1)] | None = None
    metadata: Annotated[dict[str, JsonValue], Field(max_length=64)] | None = None
    tags: Tags | None = None
    critical: bool | None = None
    expires_at: Timestamp | None = Field(
        None, description="a new expiry; null (given explicitly) makes the memory permanent"
    )
    ttl_seconds: Annotated[int, Field(ge=1, le=10 * 365 * 86400)] | None = None
    importance: Annotated[float, Field(ge=0, le=1, strict=False)] | None = None
    sensitive: bool | None = None

    @property
    def clears_expiry(self) -> bool:
        return "expires_at" in self.model_fields_set and self.expires_at is None


class ListParams(ScopeParams):
    layer: str | None = None
    scope: str | None = None
    stage_id: Identifier | None = None
    tags: Tags | None = None
    tags_match: Literal["any", "all"] = "any"
    since: Timestamp | None = None
    until: Timestamp | None = None
    filter: FilterParam | None = None
    cursor: Annotated[str, StringConstraints(max_length=512)] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    order: Literal["desc", "asc"] = "desc"
    sort: Literal["created_at", "importance"] = Field(
        "created_at", description="importance: by importance, then by time, in `order`"
    )
    include_expired: bool = Field(False, description="also memories past their expiry")
    superseded: Literal["include", "exclude", "only"] = Field(
        "include", description="memories a newer one superseded: with the rest, none, or only"
    )


class SearchParams(ScopeParams):
    query: Annotated[str, Field(min_length=1)]
    layers: Annotated[list[str], Field(min_length=1, max_length=4)] | None = None
    scopes: Annotated[list[str], Field(min_length=1, max_length=8)] | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 10
    threshold: Annotated[float, Field(ge=0, le=1, strict=False)] | None = None
    filter: FilterParam | None = None
    tags: Tags | None = Field(None, description="match memories with any (or all) of these tags")
    tags_match: Literal["any", "all"] = Field(
        "any", description="any: one of the tags; all: every one"
    )
    stage_id: Identifier | None = None
    current_stage: Literal["planning", "execution", "reflection", "verification"] | None = Field(
        None, description="boost what fits this COMPASS stage"
    )
    scoring_weights: Annotated[dict[str, float], Field(max_length=6)] | None = Field(
        None,
        description="per-query weights of similarity, recency, frequency, stage_relevance, "
        "criticality, error_correction: all six summing to 1, or some of them (the other "
        "defaults are scaled to fill the rest up to 1)",
    )
    order_by: Literal["score", "precedence"] = Field(
        "score", description="precedence: most specific scope first, then score"
    )
    as_of: Timestamp | None = Field(
        None,
        description="search memory as it was then: only memories created by then; one "
        "superseded by then ranks after its successor, one superseded later is still current",
    )
    since: Timestamp | None = Field(None, description="only memories created at or after this")
    until: Timestamp | None = Field(None, description="only memories created before this")
    explain: bool = Field(
        False,
        description="each result also says what its relevance (the similarity factor) was "
        "made of: relevance_signals, in the ranker's units (docs/retrieval.md, Ranking)",
    )


class ClearParams(ScopeParams):
    layer: str
    scope: str | None = None
