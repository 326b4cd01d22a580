"""The one place that wires the process: stores first, then the memory core, the layers,
accounting, the reasoning services, the lifecycle, and last the jobs they run in the
background. Each step is a short function over what the steps before it built."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from prometheus_client import CollectorRegistry, Histogram

from agentcore.adapters.db.history_feed import SqlHistoryFeed
from agentcore.adapters.db.statistics import analyze_changed
from agentcore.adapters.db.uow import ping
from agentcore.adapters.outages import as_provider_error
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.bootstrap.adapters import (
    build_compressor,
    build_fact_extractor,
    build_job_queue,
    build_pattern_extractor,
    build_relevance,
    build_working_store,
    multiprocess_registry,
    probe_vectors,
    redis_probe,
)
from agentcore.bootstrap.container import Container
from agentcore.bootstrap.stores import Stores, open_stores
from agentcore.config import Settings
from agentcore.domain.ace import AceThresholds
from agentcore.domain.clock import Clock, utcnow
from agentcore.domain.pricing import PriceTable
from agentcore.domain.scoring import Weights
from agentcore.services.access import AccessRecorder
from agentcore.services.admission import Admission, AdmissionMetrics
from agentcore.services.candidates import Fusion
from agentcore.services.compass.metrics import CompressionMetricsRecorder
from agentcore.services.compass.orchestration import COMPRESS_STAGE, CompassService, CompassSettings
from agentcore.services.compass.stages import StageManager
from agentcore.services.consumers.ace import AceService, AceSettings
from agentcore.services.consumers.artifacts import ArtifactService
from agentcore.services.consumers.context import ContextService
from agentcore.services.consumers.routing import RoutingService
from agentcore.services.costs import CostTracker
from agentcore.services.episodic import EpisodicMemoryService
from agentcore.services.errors import ErrorSignals, ErrorTracker
from agentcore.services.health import HealthService, Probe
from agentcore.services.jobs import JobHandler, JobQueue
from agentcore.services.key_value import KeyValueService
from agentcore.services.lifecycle.compaction import CompactionService
from agentcore.services.lifecycle.consolidation import CONSOLIDATE, Consolidator
from agentcore.services.lifecycle.expiry import SWEEP_EXPIRED, ExpirySweeper
from agentcore.services.lifecycle.promotion import PromotionService, PromotionSettings
from agentcore.services.lifecycle.transfer import TransferService
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.namespaced import NamespacedItems
from agentcore.services.ports import Embedder, VectorStore
from agentcore.services.procedural import ProceduralMemoryService
from agentcore.services.reembedding import embedder_id
from agentcore.services.retrieval import EnhancedRetrieval
from agentcore.services.semantic import SemanticMemoryService
from agentcore.services.vector_sync import VectorSync
from agentcore.services.working_memory import WorkingMemoryService

REPLAY_VECTORS = "vectors.replay"  # job kind: re-apply vector writes still owed


async def build_container(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    vectors: VectorStore | None = None,
    clock: Clock = utcnow,
) -> Container:
    closers: list[Probe] = []
    try:
        return await _build(settings, embedder, vectors, clock, closers)
    except BaseException:
        for close in reversed(closers):
            await close()
        raise


async def build_worker_container(settings: Settings) -> Container:
    """The container of a Celery worker: without ``QDRANT_URL`` the vectors are the serving
    process's (its embedded engine under the data directory), and the worker opens none."""
    if settings.qdrant_url is None:
        from agentcore.adapters.vectors.owned_elsewhere import OwnedElsewhereVectorStore

        return await build_container(settings, vectors=OwnedElsewhereVectorStore())
    return await build_container(settings)


async def _build(
    settings: Settings,
    embedder: Embedder | None,
    vectors: VectorStore | None,
    clock: Clock,
    closers: list[Probe],
) -> Container:
    registry = CollectorRegistry()
    admission = Admission(
        settings.max_running_calls, settings.write_wait_seconds, AdmissionMetrics(registry)
    )
    stores = await open_stores(settings, embedder, vectors, closers, _pool_wait(registry))
    core = _memory_core(settings, stores, clock, admission)
    layers = _layers(settings, stores, core, clock, closers)
    handlers: dict[str, JobHandler] = {REPLAY_VECTORS: partial(_replay_vectors, core.sync)}
    jobs = build_job_queue(settings, handlers)
    accounts = _accounting(settings, stores, core, jobs, clock, closers, registry)
    reasoning = _reasoning(settings, stores, core, layers.tokens, accounts, jobs, clock, closers)
    lifecycle = _lifecycle(settings, stores, core, layers, clock, accounts.registry)
    handlers[COMPRESS_STAGE] = reasoning.compass.run_compress_job
    handlers[SWEEP_EXPIRED] = lifecycle.expiry.run_job
    handlers[CONSOLIDATE] = lifecycle.consolidator.run_job
    memory = core.memory
    return Container(
        settings=settings,
        engine=stores.engine,
        uow_factory=stores.uow_factory,
        embedder=stores.embedder,
        vectors=stores.vectors,
        vector_sync=core.sync,
        retrieval=core.retrieval,
        memory=memory,
        key_values=KeyValueService(
            memory, stores.uow_factory, clock, settings.memory_max_context_length
        ),
        items=NamespacedItems(
            memory, core.retrieval, stores.uow_factory, clock, settings.memory_max_context_length
        ),
        procedural=layers.procedural,
        episodic=layers.episodic,
        working=layers.working,
        semantic=layers.semantic,
        jobs=jobs,
        job_handlers=handlers,
        costs=accounts.costs,
        compression_metrics=reasoning.metrics,
        stages=core.stages,
        compass=reasoning.compass,
        errors=reasoning.errors,
        ace=reasoning.ace,
        promotion=lifecycle.promotion,
        compaction=CompactionService(memory),
        expiry=lifecycle.expiry,
        routing=RoutingService(memory, layers.procedural),
        artifacts=ArtifactService(memory),
        context=ContextService(
            memory,
            layers.working,
            layers.procedural,
            reasoning.errors,
            core.stages,
            reasoning.compass,
            layers.tokens,
            clock,
            recency_half_life_hours=settings.memory_recency_half_life_hours,
        ),
        transfer=TransferService(memory, clock),
        consolidator=lifecycle.consolidator,
        access=core.access,
        admission=admission,
        keep_statistics=(
            partial(analyze_changed, stores.engine)
            if stores.engine.dialect.name == "postgresql"
            else None
        ),
        registry=accounts.registry,
        scraped=accounts.scraped,
        health=accounts.health,
        startup=stores.startup,
        feed=SqlHistoryFeed(stores.engine),
        outage=as_provider_error,
        closers=closers,
    )


@dataclass(frozen=True)
class _Core:
    sync: VectorSync
    access: AccessRecorder
    error_signals: ErrorSignals
    retrieval: EnhancedRetrieval
    stages: StageManager
    memory: MemoryManager


def _pool_wait(registry: CollectorRegistry) -> Callable[[float], None]:
    """The histogram of the database pool's checkouts (PostgreSQL), as the engine's callback."""
    histogram = Histogram(
        "agentcore_db_pool_wait_seconds",
        "Time a unit of work waited for a pooled database connection (0 when one was free)",
        buckets=(0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        registry=registry,
    )
    return histogram.observe


def _memory_core(settings: Settings, stores: Stores, clock: Clock, admission: Admission) -> _Core:
    """Writing, indexing and ranking memories: what every layer is built on."""
    uow_factory, vectors, embedder = stores.uow_factory, stores.vectors, stores.embedder
    sync = VectorSync(uow_factory, vectors, embedder, clock)
    access = AccessRecorder(uow_factory)
    error_signals = ErrorSignals(uow_factory, enabled=settings.error_tracking_enabled)
    retrieval = EnhancedRetrieval(
        uow_factory,
        vectors,
        embedder,
        clock,
        settings.memory_max_query_length,
        weights=Weights.from_settings(settings.weights),
        recency_half_life_hours=settings.memory_recency_half_life_hours,
        access=access,
        error_signals=error_signals,
        lexical=stores.lexical,
        fusion=Fusion(pool=settings.search_candidates),
        relevance=build_relevance(settings, embedder),
        saturated=admission.saturated,
    )
    stages = StageManager(
        uow_factory,
        clock,
        auto_transition=settings.stage_auto_transition,
        default_duration_seconds=settings.stage_default_duration_seconds,
    )
    memory = MemoryManager(
        uow_factory,
        embedder,
        sync,
        retrieval,
        clock,
        max_content_length=settings.memory_max_context_length,
        max_batch_size=settings.memory_max_batch_size,
        stages=stages,
        default_ttl=settings.memory_default_ttl,
    )
    return _Core(sync, access, error_signals, retrieval, stages, memory)


@dataclass(frozen=True)
class _Layers:
    episodic: EpisodicMemoryService
    working: WorkingMemoryService
    semantic: SemanticMemoryService
    procedural: ProceduralMemoryService
    tokens: BpeTokenCounter


def _layers(
    settings: Settings, stores: Stores, core: _Core, clock: Clock, closers: list[Probe]
) -> _Layers:
    """The four layers' services over the memory core."""
    max_length = settings.memory_max_context_length
    tokens = BpeTokenCounter()  # one tokenizer for working memory and compression
    episodic = EpisodicMemoryService(
        stores.uow_factory,
        core.memory,
        clock,
        max_episodes=settings.episodic_memory_max_episodes,
        batch_size=settings.memory_max_batch_size,
        max_content_length=max_length,
    )
    working = WorkingMemoryService(
        build_working_store(settings, closers),
        tokens,
        episodic,
        clock,
        max_tokens=settings.working_memory_max_tokens,
        ttl_seconds=settings.working_memory_ttl,
        max_content_length=max_length,
    )
    semantic = SemanticMemoryService(
        core.memory,
        stores.uow_factory,
        build_fact_extractor(settings, closers, stores.embedder),
        clock,
        capacity=settings.semantic_memory_capacity,
    )
    procedural = ProceduralMemoryService(
        core.memory, settings.procedural_memory_min_occurrences, max_content_length=max_length
    )
    return _Layers(episodic, working, semantic, procedural, tokens)


@dataclass(frozen=True)
class _Accounts:
    registry: CollectorRegistry
    scraped: CollectorRegistry | None
    costs: CostTracker
    health: HealthService


def _accounting(
    settings: Settings,
    stores: Stores,
    core: _Core,
    jobs: JobQueue,
    clock: Clock,
    closers: list[Probe],
    registry: CollectorRegistry,
) -> _Accounts:
    """Metrics, what models cost, and the health of every component."""
    prices = PriceTable(settings.model_prices)
    prices.require(settings.compression_model, settings.mem0_llm_model, settings.reasoning_model)
    if settings.embedder == "openai":
        prices.require(settings.mem0_embedding_model)
    costs = CostTracker(
        stores.uow_factory,
        prices,
        clock,
        registry,
        reasoning_model=settings.reasoning_model,
        monthly_budget_usd=settings.monthly_token_budget_usd,
        alert_threshold_pct=settings.alert_threshold_pct,
        spend_cache_seconds=settings.cost_spend_cache_seconds,
    )
    engine, vectors, uow_factory = stores.engine, stores.vectors, stores.uow_factory
    probes: dict[str, Probe] = {
        "database": lambda: ping(engine),
        "vector_store": lambda: probe_vectors(vectors),
    }
    if settings.redis_url is not None:
        probes["redis"], close_redis = redis_probe(settings.redis_url)
        closers.append(close_redis)

    async def pending() -> int:
        async with uow_factory() as uow:
            return await uow.outbox.count()

    health = HealthService(
        probes,
        "embedded" if settings.embedded else "production",
        pending,
        lambda: core.memory.indexing_backlog,
        lambda: stores.lexical.documents_in_memory,
        f"{embedder_id(stores.embedder)}, {stores.embedder.precision}",
        jobs=jobs.facts,
        stall_seconds=settings.job_stall_seconds,
    )
    scraped = multiprocess_registry(settings, closers)
    return _Accounts(registry, scraped, costs, health)


@dataclass(frozen=True)
class _Reasoning:
    compass: CompassService
    metrics: CompressionMetricsRecorder
    errors: ErrorTracker
    ace: AceService


def _reasoning(
    settings: Settings,
    stores: Stores,
    core: _Core,
    tokens: BpeTokenCounter,
    accounts: _Accounts,
    jobs: JobQueue,
    clock: Clock,
    closers: list[Probe],
) -> _Reasoning:
    """COMPASS stages and their compression, error tracking, and the ACE meta-thinker."""
    uow_factory, max_length = stores.uow_factory, settings.memory_max_context_length
    errors = ErrorTracker(
        uow_factory,
        core.memory,
        clock,
        enabled=settings.error_tracking_enabled,
        threshold=settings.error_pattern_detection_threshold,
        max_content_length=max_length,
        extractor=build_pattern_extractor(settings, closers),
        costs=accounts.costs,
        signals=core.error_signals,
    )
    metrics = CompressionMetricsRecorder(uow_factory, clock, accounts.registry)
    compressor, paid_model = build_compressor(settings, closers, tokens)
    compass = CompassService(
        core.stages,
        uow_factory,
        compressor,
        accounts.costs,
        metrics,
        jobs,
        tokens,
        clock,
        CompassSettings(
            auto_compress=settings.stage_completion_auto_compress,
            stage_target_ratio=settings.stage_compression_ratio_target,
            task_target_ratio=settings.task_compression_ratio_target,
            paid_model=paid_model,
            inline_without_worker=settings.jobs_inline_without_worker,
        ),
    )
    ace = AceService(
        uow_factory,
        core.memory,
        core.stages,
        compass,
        errors,
        accounts.costs,
        clock,
        _ace_settings(settings),
    )
    return _Reasoning(compass, metrics, errors, ace)


@dataclass(frozen=True)
class _Lifecycle:
    expiry: ExpirySweeper
    consolidator: Consolidator
    promotion: PromotionService


def _lifecycle(
    settings: Settings,
    stores: Stores,
    core: _Core,
    layers: _Layers,
    clock: Clock,
    registry: CollectorRegistry,
) -> _Lifecycle:
    """What moves memories along: expiry, consolidation of episodes, promotion upward."""
    consolidator = Consolidator(stores.uow_factory, layers.semantic)
    promotion = PromotionService(
        core.memory,
        layers.working,
        consolidator,
        clock,
        PromotionSettings(
            threshold=settings.promotion_threshold,
            decay_per_day=settings.importance_decay_per_day,
            phone_region=settings.pii_phone_region.upper(),
        ),
    )
    return _Lifecycle(ExpirySweeper(core.memory, registry), consolidator, promotion)


def _ace_settings(settings: Settings) -> AceSettings:
    thresholds = AceThresholds(
        error_rate=settings.ace_error_rate_threshold,
        min_progress_rate=settings.ace_min_progress_rate,
        stall_seconds=settings.stage_default_duration_seconds,
        min_coherence=settings.ace_min_coherence,
        coherence_drop=settings.ace_coherence_drop,
        pattern_occurrences=settings.ace_pattern_occurrences,
        budget_used=settings.ace_budget_threshold,
    )
    return AceSettings(thresholds, settings.ace_feedback_step, settings.ace_importance_floor)


async def _replay_vectors(sync: VectorSync, _: dict[str, Any]) -> dict[str, Any]:
    replayed = await sync.replay()
    await sync.flush()
    return {"replayed": replayed}
