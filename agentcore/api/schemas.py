"""Result models: what each method returns, also used to generate the OpenRPC document."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from agentcore import __version__
from agentcore.domain.models import Memory, MemoryEvent
from agentcore.services.health import HealthReport, JobsHealth
from agentcore.services.ranked import ScoredMemory


class MemoryOut(BaseModel):
    id: str
    content: str
    layer: str
    scope: str
    task_id: str | None
    agent_id: str | None
    user_id: str | None
    session_id: str | None
    project_id: str | None
    team_id: str | None
    org_id: str | None
    company_id: str | None
    metadata: dict[str, Any]
    tags: list[str]
    key: str | None
    stage_id: str | None
    critical: bool
    importance: float
    sensitive: bool
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    source: str
    confidence: float | None
    promoted_from_id: str | None
    compacted_from_ids: list[str]
    created_in_session_id: str | None
    # Knowledge that updates: the attribute slot it fills ("user|home"), when a newer memory
    # of the scope superseded it, and which.
    fact_slot: str | None
    valid_to: datetime | None
    superseded_by: str | None

    @classmethod
    def of(cls, m: Memory) -> MemoryOut:
        return cls(
            id=m.id,
            content=m.content,
            layer=m.layer.value,
            scope=m.scope_level.value,
            **m.scope.as_dict(),
            metadata=m.metadata,
            tags=m.tags,
            key=m.key,
            stage_id=m.stage_id,
            critical=m.critical,
            importance=m.importance,
            sensitive=m.sensitive,
            access_count=m.access_count,
            last_accessed_at=m.last_accessed_at,
            created_at=m.created_at,
            updated_at=m.updated_at,
            expires_at=m.expires_at,
            source=m.source,
            confidence=m.confidence,
            promoted_from_id=m.promoted_from_id,
            compacted_from_ids=m.compacted_from_ids,
            created_in_session_id=m.created_in_session_id,
            fact_slot=m.fact_slot,
            valid_to=m.valid_to,
            superseded_by=m.superseded_by,
        )


class AddResult(BaseModel):
    memory_id: str  # of the last message when ``messages`` were given
    memory: MemoryOut
    memory_ids: list[str]  # every memory stored, in order (one per message)
    stage_id: str | None
    deduplicated: bool = Field(
        False,
        description="the text repeats a live memory of its scope, layer and stage: that "
        "memory is returned (one access counted) and nothing new is stored",
    )
    facts: list[MemoryOut] | None = None  # the semantic facts extracted when ``infer`` was set


class AddBatchResult(BaseModel):
    memory_ids: list[str]
    deduplicated: list[str] = Field(
        default_factory=list, description="those of memory_ids that were already stored"
    )
    indexed: bool | None = Field(
        None,
        description="with wait_indexed: whether every vector was written before the reply "
        "(false when the wait ran out; the vectors still follow)",
    )


class DeleteResult(BaseModel):
    deleted: bool


class ClearResult(BaseModel):
    deleted_count: int


class ListResult(BaseModel):
    memories: list[MemoryOut]
    next_cursor: str | None
    total_count: int


class SearchHit(BaseModel):
    memory: MemoryOut
    score: float
    similarity: float
    factors: dict[str, float]
    layer: str
    scope: str
    contradicts: list[str]  # ids of other results this one contradicts
    # The newer memory that supersedes this one (it fills the same slot with another value), or
    # the contradicting result preferred over it: that one is ranked first.
    superseded_by: str | None
    # Ranked first as the current value of the slot the query asked about ("user|home").
    current_for: str | None
    # With explain: what the relevance was made of, by signal (docs/retrieval.md, Ranking).
    relevance_signals: dict[str, float] | None = None

    @classmethod
    def of(cls, s: ScoredMemory) -> SearchHit:
        return cls(
            memory=MemoryOut.of(s.memory),
            score=round(s.score, 6),
            similarity=round(s.similarity, 6),
            factors={k: round(v, 6) for k, v in s.factors.items()},
            layer=s.memory.layer.value,
            scope=s.memory.scope_level.value,
            contradicts=list(s.contradicts),
            superseded_by=s.superseded_by,
            current_for=s.current_for,
            relevance_signals=None
            if s.signals is None
            else {k: round(v, 6) for k, v in s.signals.items()},
        )


class SearchResult(BaseModel):
    results: list[SearchHit]
    total_count: int
    searched_layers: list[str]
    searched_scopes: list[str]
    weights: dict[str, float]  # the score's weights for this query (settings or override)
    # What ranked the candidates into the similarity factor: "learned:<model>" or "fusion".
    ranker: str = ""


class HistoryEvent(BaseModel):
    id: str
    memory_id: str
    kind: str
    at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    actor: str | None

    @classmethod
    def of(cls, e: MemoryEvent) -> HistoryEvent:
        return cls(
            id=e.id,
            memory_id=e.memory_id,
            kind=e.kind.value,
            at=e.at,
            before=e.before,
            after=e.after,
            actor=e.actor,
        )


class HistoryResult(BaseModel):
    memory_id: str
    events: list[HistoryEvent]


class ComponentHealth(BaseModel):
    status: str  # "up" or "down"
    latency_ms: float
    detail: str | None = None


class JobsHealthOut(BaseModel):
    """The job queue on workers (production); absent when jobs run in the serving process."""

    workers_alive: int | None = Field(description="workers with a fresh heartbeat")
    queued: int | None = Field(description="jobs waiting for a worker")
    oldest_queued_seconds: float | None = Field(description="how long the oldest has waited")
    problems: list[str] = Field(description="why jobs do not run (empty: they do)")

    @classmethod
    def of(cls, jobs: JobsHealth) -> JobsHealthOut:
        facts = jobs.facts
        return cls(
            workers_alive=None if facts is None else facts.workers_alive,
            queued=None if facts is None else facts.queued,
            oldest_queued_seconds=None
            if facts is None or facts.oldest_queued_seconds is None
            else round(facts.oldest_queued_seconds, 3),
            problems=list(jobs.problems),
        )


class HealthResult(BaseModel):
    # "ok": every component is up and nothing is degraded; "degraded": a component is down
    # (HTTP 503) or something works less well than it should (``degraded`` says what).
    status: str
    mode: str  # "embedded" or "production"
    version: str
    components: dict[str, ComponentHealth]
    pending_vector_writes: int  # outbox rows: vector writes not yet durable in the vector store
    indexing_backlog: int  # memories stored by this process whose vectors are still queued
    # Embedded: lexical documents this process holds in memory (searched scopes, up to
    # LEXICAL_MEMORY_DOCUMENTS); a large scope is held once its loading, started by its first
    # search, is done.
    lexical_documents_in_memory: int
    # The embedding model, its dimension and how it runs ("int8 (u8s8 kernel)": the integer
    # kernel chosen for this CPU; "remote": an API).
    embedder: str
    jobs: JobsHealthOut | None = None
    degraded: list[str] = Field(
        default_factory=list, description="causes of a degraded service that answers anyway"
    )

    @classmethod
    def of(cls, report: HealthReport) -> HealthResult:
        return cls(
            status="ok" if report.ok and not report.degraded else "degraded",
            mode=report.mode,
            version=__version__,
            components={
                name: ComponentHealth(
                    status="up" if s.up else "down", latency_ms=s.latency_ms, detail=s.detail
                )
                for name, s in report.components.items()
            },
            pending_vector_writes=report.pending_vector_writes,
            indexing_backlog=report.indexing_backlog,
            lexical_documents_in_memory=report.lexical_documents_in_memory,
            embedder=report.embedder,
            jobs=None if report.jobs is None else JobsHealthOut.of(report.jobs),
            degraded=report.degraded,
        )


class DiscoverResult(BaseModel):
    openrpc: str
    info: dict[str, Any]
    methods: list[dict[str, Any]]
    components: dict[str, Any]
