"""The composition root: the only place that reads settings and builds adapters and services.

Called by the Starlette lifespan, the Celery worker, the CLI and the tests (which may pass
their own embedder or vector store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical_search import SqlLexicalIndex
from agentcore.adapters.db.migrate import SchemaCheck
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory, ping
from agentcore.adapters.outages import DATABASE, VECTOR_STORE, as_provider_error
from agentcore.adapters.prometheus_files import mark_dead, scrape_registry
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.config import Settings
from agentcore.domain.ace import AceThresholds
from agentcore.domain.clock import Clock, utcnow
from agentcore.domain.errors import AgentCoreError, ConfigurationError
from agentcore.domain.pricing import PriceTable
from agentcore.domain.scoring import Weights
from agentcore.services.access import AccessRecorder
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.compass.metrics import CompressionMetricsRecorder
from agentcore.services.compass.orchestration import COMPRESS_STAGE, CompassService, CompassSettings
from agentcore.services.compass.stages import StageManager
from agentcore.services.consumers.ace import AceService, AceSettings
from agentcore.services.consumers.artifacts import ArtifactService
from agentcore.services.consumers.context import ContextService
from agentcore.services.consumers.routing import RoutingService
from agentcore.services.costs import CostTracker
from agentcore.services.episodic import EpisodicMemoryService
from agentcore.services.errors import ErrorSignals, ErrorTracker, PatternExtractor
from agentcore.services.health import HealthService, Probe
from agentcore.services.jobs import JobHandler, JobQueue
from agentcore.services.key_value import KeyValueService
from agentcore.services.lifecycle.compaction import CompactionService
from agentcore.services.lifecycle.consolidation import CONSOLIDATE, Consolidator
from agentcore.services.lifecycle.expiry import SWEEP_EXPIRED, ExpirySweeper
from agentcore.services.lifecycle.promotion import PromotionService, PromotionSettings
from agentcore.services.lifecycle.transfer import TransferService
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.ports import Embedder, UnitOfWorkFactory, VectorFilter, VectorStore
from agentcore.services.procedural import ProceduralMemoryService
from agentcore.services.reembedding import (
    EMBEDDER_SETTING,
    Reembedded,
    embedder_id,
    reembed,
)
from agentcore.services.retrieval import EnhancedRetrieval
from agentcore.services.semantic import FactExtractor, SemanticMemoryService
from agentcore.services.startup import Check, StartupChecks
from agentcore.services.supersession import UpdateReader
from agentcore.services.vector_sync import VectorSync
from agentcore.services.working_memory import WorkingMemoryService, WorkingMemoryStore

log = logging.getLogger(__name__)

REPLAY_VECTORS = "vectors.replay"  # job kind: re-apply vector writes still owed
JOB_DRAIN_SECONDS = 10.0  # how long closing waits for in-process jobs under way


@dataclass
class Container:
    settings: Settings
    engine: AsyncEngine
    uow_factory: UnitOfWorkFactory
    embedder: Embedder
    vectors: VectorStore
    vector_sync: VectorSync
    retrieval: EnhancedRetrieval
    memory: MemoryManager
    key_values: KeyValueService
    procedural: ProceduralMemoryService
    episodic: EpisodicMemoryService
    working: WorkingMemoryService
    semantic: SemanticMemoryService
    jobs: JobQueue
    job_handlers: dict[str, JobHandler]
    costs: CostTracker
    compression_metrics: CompressionMetricsRecorder
    stages: StageManager
    compass: CompassService
    errors: ErrorTracker
    ace: AceService
    promotion: PromotionService
    compaction: CompactionService
    expiry: ExpirySweeper
    routing: RoutingService
    artifacts: ArtifactService
    context: ContextService
    transfer: TransferService
    consolidator: Consolidator
    access: AccessRecorder
    health: HealthService
    startup: StartupChecks
    # Names a failure that means a store is out of reach (adapters/outages.py).
    outage: Callable[[Exception], AgentCoreError | None]
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    # What /metrics collects when it is not ``registry``: every process's metrics files.
    scraped: CollectorRegistry | None = None
    closers: list[Probe] = field(default_factory=list)

    @property
    def exposition(self) -> CollectorRegistry:
        """The registry /metrics serves: this process's, or every process's of
        ``PROMETHEUS_MULTIPROC_DIR``."""
        return self.registry if self.scraped is None else self.scraped

    async def aclose(self) -> None:
        """Give the jobs under way ``JOB_DRAIN_SECONDS`` to finish (everything they use still
        open; then they are cancelled), hand in-process working memory to the episodic layer,
        flush owed vector writes and release every resource, in reverse order of opening."""
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.jobs.close(), JOB_DRAIN_SECONDS)
            if self.settings.redis_url is None:  # the in-process store ends with the process
                await self.working.flush_all()
            await self.access.flush()
            await self.memory.close()
            await self.vector_sync.flush()
        finally:
            for close in reversed(self.closers):
                try:
                    await close()
                except Exception:  # keep closing the rest
                    log.exception("closing a component failed")


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "openai":
        from agentcore.adapters.embedders.openai_embedder import OpenAIEmbedder

        if settings.openai_api_key is None:
            raise ConfigurationError("EMBEDDER=openai needs OPENAI_API_KEY")
        return OpenAIEmbedder(
            api_key=settings.openai_api_key.get_secret_value(),
            base_url=settings.openai_base_url,
            model=settings.mem0_embedding_model,
        )
    threads = settings.embedder_threads or os.cpu_count() or 1
    if settings.embedder == "minilm":
        from agentcore.adapters.embedders.local_minilm import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder(int8=settings.embedder_int8, threads=threads)
    from agentcore.adapters.embedders.local_e5 import LocalE5Embedder

    return LocalE5Embedder(threads=threads)


def build_vector_store(settings: Settings) -> VectorStore:
    if settings.vector_provider == "mem0":
        from agentcore.adapters.mem0 import Mem0VectorStore

        key = settings.qdrant_api_key
        return Mem0VectorStore.open(
            settings.agentcore_data_dir,
            url=settings.qdrant_url,
            api_key=None if key is None else key.get_secret_value(),
            collection=settings.qdrant_collection_name,
        )
    if settings.qdrant_url is None:
        from agentcore.adapters.vectors.edge import EdgeVectorStore

        return EdgeVectorStore(
            settings.agentcore_data_dir / "qdrant",
            max_search_threads=settings.vector_search_threads,
            own_process=settings.vector_store_process,
            index_threshold=settings.vector_index_threshold,
            log_level=settings.log_level,
        )
    from agentcore.adapters.vectors.qdrant_server import QdrantServerVectorStore

    api_key = settings.qdrant_api_key
    return QdrantServerVectorStore.from_url(
        settings.qdrant_url,
        api_key=None if api_key is None else api_key.get_secret_value(),
        collection=settings.qdrant_collection_name,
        timeout=max(1, math.ceil(settings.store_timeout_seconds)),
    )


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
    engine = create_engine(
        settings.sqlalchemy_url,
        settings.store_timeout_seconds,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
    )
    closers.append(engine.dispose)
    uow_factory = SqlUnitOfWorkFactory(engine)
    # The container closes what it built; what a caller passed in stays the caller's.
    if embedder is None:
        embedder = build_embedder(settings)
        closers.append(embedder.close)
    if vectors is None:
        vectors = build_vector_store(settings)
        closers.append(vectors.close)
    collection = partial(vectors.ensure_collection, embedder.dimension, embedder.model_name)
    schema = SchemaCheck(
        engine, settings.sqlalchemy_url, migrate=settings.agentcore_migrate_on_start
    )
    lexical = SqlLexicalIndex(
        engine, settings.lexical_memory_documents, settings.lexical_stored_documents
    )
    closers.append(lexical.close)
    startup = StartupChecks(
        [
            Check("the database schema", DATABASE, schema, guards_calls=True),
            Check(
                "the embedder check",
                DATABASE,
                partial(_check_embedder, uow_factory, embedder),
                guards_calls=True,
            ),
            Check("the vector collection", VECTOR_STORE, collection),
        ]
        # SQLite: the large scopes' stored lexical indexes open (or are built) at start-up.
        + ([Check("the lexical index", DATABASE, lexical.warm)] if lexical.stores else [])
    )
    if not await startup.run():
        log.warning("starting degraded, waiting for: %s", ", ".join(startup.waiting_for))

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
        lexical=lexical,
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
        updates=UpdateReader(uow_factory, vectors, embedder, clock),
    )
    probes: dict[str, Probe] = {
        "database": lambda: ping(engine),
        "vector_store": lambda: _probe_vectors(vectors),
    }
    if settings.redis_url is not None:
        redis_probe, redis_close = _redis_probe(settings.redis_url)
        probes["redis"] = redis_probe
        closers.append(redis_close)

    async def pending() -> int:
        async with uow_factory() as uow:
            return await uow.outbox.count()

    tokens = BpeTokenCounter()  # one tokenizer for working memory and compression
    episodic = EpisodicMemoryService(
        uow_factory,
        memory,
        clock,
        max_episodes=settings.episodic_memory_max_episodes,
        batch_size=settings.memory_max_batch_size,
        max_content_length=settings.memory_max_context_length,
    )
    working = WorkingMemoryService(
        build_working_store(settings, closers),
        tokens,
        episodic,
        clock,
        max_tokens=settings.working_memory_max_tokens,
        ttl_seconds=settings.working_memory_ttl,
        max_content_length=settings.memory_max_context_length,
    )
    semantic = SemanticMemoryService(
        memory,
        uow_factory,
        build_fact_extractor(settings, closers, embedder),
        clock,
        capacity=settings.semantic_memory_capacity,
    )
    registry = CollectorRegistry()
    scraped = _multiprocess_registry(settings, closers)
    prices = PriceTable(settings.model_prices)
    prices.require(settings.compression_model, settings.mem0_llm_model, settings.reasoning_model)
    if settings.embedder == "openai":
        prices.require(settings.mem0_embedding_model)
    costs = CostTracker(
        uow_factory,
        prices,
        clock,
        registry,
        reasoning_model=settings.reasoning_model,
        monthly_budget_usd=settings.monthly_token_budget_usd,
        alert_threshold_pct=settings.alert_threshold_pct,
        spend_cache_seconds=settings.cost_spend_cache_seconds,
    )
    job_handlers: dict[str, JobHandler] = {REPLAY_VECTORS: partial(_replay_vectors, sync)}
    jobs = build_job_queue(settings, job_handlers)
    health = HealthService(
        probes,
        "embedded" if settings.embedded else "production",
        pending,
        lambda: memory.indexing_backlog,
        lambda: lexical.documents_in_memory,
        f"{embedder_id(embedder)}, {embedder.precision}",
        jobs=jobs.facts,
    )
    errors = ErrorTracker(
        uow_factory,
        memory,
        clock,
        enabled=settings.error_tracking_enabled,
        threshold=settings.error_pattern_detection_threshold,
        max_content_length=settings.memory_max_context_length,
        extractor=build_pattern_extractor(settings, closers),
        costs=costs,
        signals=error_signals,
    )
    metrics = CompressionMetricsRecorder(uow_factory, clock, registry)
    compressor, paid_model = build_compressor(settings, closers, tokens)
    compass = CompassService(
        stages,
        uow_factory,
        compressor,
        costs,
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
    job_handlers[COMPRESS_STAGE] = compass.run_compress_job
    ace = AceService(
        uow_factory, memory, stages, compass, errors, costs, clock, _ace_settings(settings)
    )
    expiry = ExpirySweeper(memory, registry)
    procedural = ProceduralMemoryService(
        memory,
        settings.procedural_memory_min_occurrences,
        max_content_length=settings.memory_max_context_length,
    )
    job_handlers[SWEEP_EXPIRED] = expiry.run_job
    consolidator = Consolidator(uow_factory, semantic)
    job_handlers[CONSOLIDATE] = consolidator.run_job
    promotion = PromotionService(
        memory,
        working,
        consolidator,
        clock,
        PromotionSettings(
            threshold=settings.promotion_threshold,
            decay_per_day=settings.importance_decay_per_day,
            phone_region=settings.pii_phone_region.upper(),
        ),
    )
    return Container(
        settings=settings,
        engine=engine,
        uow_factory=uow_factory,
        embedder=embedder,
        vectors=vectors,
        vector_sync=sync,
        retrieval=retrieval,
        memory=memory,
        key_values=KeyValueService(memory, uow_factory, clock, settings.memory_max_context_length),
        procedural=procedural,
        episodic=episodic,
        working=working,
        semantic=semantic,
        jobs=jobs,
        job_handlers=job_handlers,
        costs=costs,
        compression_metrics=metrics,
        stages=stages,
        compass=compass,
        errors=errors,
        ace=ace,
        promotion=promotion,
        compaction=CompactionService(memory),
        expiry=expiry,
        routing=RoutingService(memory, procedural),
        artifacts=ArtifactService(memory),
        context=ContextService(
            memory,
            working,
            procedural,
            errors,
            stages,
            compass,
            tokens,
            clock,
            recency_half_life_hours=settings.memory_recency_half_life_hours,
        ),
        transfer=TransferService(memory, clock),
        consolidator=consolidator,
        access=access,
        registry=registry,
        scraped=scraped,
        health=health,
        startup=startup,
        outage=as_provider_error,
        closers=closers,
    )


def _multiprocess_registry(settings: Settings, closers: list[Probe]) -> CollectorRegistry | None:
    """With ``PROMETHEUS_MULTIPROC_DIR``: the registry of every process's metrics files, and
    this process marked dead in them when the container closes."""
    directory = settings.prometheus_multiproc_dir
    if directory is None:
        return None
    scraped = scrape_registry(directory)

    async def process_ended() -> None:
        mark_dead(directory)

    closers.append(process_ended)
    return scraped


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


def build_job_queue(settings: Settings, handlers: dict[str, JobHandler]) -> JobQueue:
    """Celery workers when ``REDIS_URL`` is set, else jobs run in this process."""
    if settings.redis_url is None:
        from agentcore.adapters.jobs.local import InProcessJobQueue

        return InProcessJobQueue(handlers)
    from agentcore.adapters.jobs.celery_app import celery_app
    from agentcore.adapters.jobs.celery_queue import CeleryJobQueue

    return CeleryJobQueue(celery_app(settings))


async def _replay_vectors(sync: VectorSync, _: dict[str, Any]) -> dict[str, Any]:
    replayed = await sync.replay()
    await sync.flush()
    return {"replayed": replayed}


def build_compressor(
    settings: Settings, closers: list[Probe], tokens: BpeTokenCounter
) -> tuple[ContextCompressor, str | None]:
    """The compressor and, when an LLM compresses, the model that is paid for."""
    from agentcore.adapters.compressors.extractive import ExtractiveEngine

    extractive = ExtractiveEngine(tokens)
    threshold = settings.compression_quality_threshold
    choice = settings.compression_engine
    if choice == "auto":
        choice = "extractive" if settings.openai_api_key is None else "llm"
    if choice == "extractive":
        return ContextCompressor(extractive, tokens, quality_threshold=threshold), None
    from agentcore.adapters.compressors.llm import LLMEngine

    client = _openai_client(settings, "COMPRESSION_ENGINE=llm")
    closers.append(client.close)
    engine = LLMEngine(client, settings.compression_model)
    compressor = ContextCompressor(
        engine, tokens, fallback_engine=extractive, quality_threshold=threshold
    )
    return compressor, settings.compression_model


def build_working_store(settings: Settings, closers: list[Probe]) -> WorkingMemoryStore:
    """Redis (DB ``REDIS_MEMORY_DB``) when ``REDIS_URL`` is set, else the in-process store."""
    if settings.redis_url is None:
        from agentcore.adapters.working.local_store import LocalWorkingMemoryStore

        return LocalWorkingMemoryStore()
    import redis.asyncio as aioredis

    from agentcore.adapters.working.redis_store import RedisWorkingMemoryStore

    timeout = settings.store_timeout_seconds
    client = aioredis.Redis.from_url(
        settings.redis_url,
        db=settings.redis_memory_db,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )
    closers.append(client.aclose)
    return RedisWorkingMemoryStore(client, ttl_seconds=settings.working_memory_ttl)


def build_fact_extractor(
    settings: Settings, closers: list[Probe], embedder: Embedder
) -> FactExtractor:
    """The rule-based extractor, the LLM one (``FACT_EXTRACTOR=llm``) or mem0's (``mem0``);
    ``auto`` picks mem0 when an API key is configured, else the rule-based one."""
    choice = settings.fact_extractor
    if choice == "auto":
        choice = "offline" if settings.openai_api_key is None else "mem0"
    if choice == "offline":
        from agentcore.adapters.extractors.offline import RuleBasedFactExtractor

        return RuleBasedFactExtractor()
    if choice == "mem0":
        return _mem0_extractor(settings, closers, embedder)
    from agentcore.adapters.extractors.llm import LLMFactExtractor

    client = _openai_client(settings, "FACT_EXTRACTOR=llm")
    closers.append(client.close)
    return LLMFactExtractor(client, settings.mem0_llm_model)


def build_pattern_extractor(settings: Settings, closers: list[Probe]) -> PatternExtractor | None:
    """LLM-based error pattern extraction, when an LLM is configured."""
    if settings.openai_api_key is None:
        return None
    from agentcore.adapters.extractors.error_patterns import LLMPatternExtractor

    client = _openai_client(settings, "error pattern extraction")
    closers.append(client.close)
    return LLMPatternExtractor(client, settings.mem0_llm_model)


def _mem0_extractor(settings: Settings, closers: list[Probe], embedder: Embedder) -> FactExtractor:
    from agentcore.adapters.mem0 import Mem0Client, Mem0FactExtractor, Mem0LLMOptions

    if settings.openai_api_key is None:
        raise ConfigurationError("FACT_EXTRACTOR=mem0 needs OPENAI_API_KEY")
    client = Mem0Client(settings.agentcore_data_dir)

    async def close_client() -> None:
        await asyncio.to_thread(client.close)

    closers.append(close_client)
    options = Mem0LLMOptions(
        settings.mem0_llm_model,
        settings.openai_api_key.get_secret_value(),
        settings.openai_base_url,
    )
    extractor = Mem0FactExtractor(client, embedder, options)
    closers.append(extractor.close)
    return extractor


def _openai_client(settings: Settings, needed_by: str) -> AsyncOpenAI:
    if settings.openai_api_key is None:
        raise ConfigurationError(f"{needed_by} needs OPENAI_API_KEY")
    return AsyncOpenAI(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.openai_base_url or "https://api.openai.com/v1",
        timeout=30.0,
        max_retries=2,
    )


async def _check_embedder(uow_factory: UnitOfWorkFactory, embedder: Embedder) -> None:
    """A store built with one embedder refuses another: their vectors are not comparable."""
    wanted = embedder_id(embedder)
    async with uow_factory() as uow:
        recorded = await uow.store_settings.get(EMBEDDER_SETTING)
        if recorded is None:
            await uow.store_settings.put(EMBEDDER_SETTING, wanted)
            await uow.commit()
            return
    if recorded != wanted:
        setting = _EMBEDDER_SETTINGS.get(recorded.split("/")[0])
        original = f"EMBEDDER={setting}" if setting else "the original embedder"
        raise ConfigurationError(
            f"this store was built with embedder {recorded} (model/dimension) but {wanted} is "
            f"configured; configure {original}, or stop the service and run "
            "`agentcore reembed` to move the store to the new one"
        )


# The setting that names each local model, for the error above.
_EMBEDDER_SETTINGS = {"multilingual-e5-small": "e5", "all-MiniLM-L6-v2": "minilm"}


async def reembed_store(
    settings: Settings, progress: Callable[[int, int], None] | None = None
) -> Reembedded:
    """``agentcore reembed``: the configured embedder's vectors for every memory."""
    engine = create_engine(settings.sqlalchemy_url)
    embedder = build_embedder(settings)
    vectors = build_vector_store(settings)
    try:
        return await reembed(SqlUnitOfWorkFactory(engine), vectors, embedder, progress=progress)
    finally:
        await vectors.close()
        await embedder.close()
        await engine.dispose()


async def _probe_vectors(vectors: VectorStore) -> None:
    await vectors.count(VectorFilter(scope_keys=["health:probe"]))


def _redis_probe(url: str) -> tuple[Probe, Probe]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    async def probe() -> None:
        await client.ping()

    return probe, client.aclose
