"""Which adapter each setting selects: the embedder, the vector store, the search's ranking,
the job queue, the working-memory store, the compressor and the extractors (each imported
only when chosen). Every builder that opens a client appends its closer to ``closers``."""

from __future__ import annotations

import asyncio
import logging
import math
import os

from openai import AsyncOpenAI
from prometheus_client import CollectorRegistry

from agentcore.adapters.prometheus_files import mark_dead, scrape_registry
from agentcore.adapters.tokens import BpeTokenCounter
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError
from agentcore.services.compass.compression import ContextCompressor
from agentcore.services.errors import PatternExtractor
from agentcore.services.health import Probe
from agentcore.services.jobs import JobHandler, JobQueue
from agentcore.services.ports import Embedder, VectorFilter, VectorStore
from agentcore.services.relevance import Relevance
from agentcore.services.semantic import FactExtractor
from agentcore.services.working_memory import WorkingMemoryStore

log = logging.getLogger(__name__)


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


def build_relevance(settings: Settings, embedder: Embedder) -> Relevance | None:
    """The learned ranking model when chosen, shipped and fitted with this embedder; None (the
    hand-set fusion) otherwise."""
    if settings.search_ranker == "fusion":
        return None
    from agentcore.adapters.rankers.learned import packaged_model

    model = packaged_model()
    if model is None:
        log.warning("no ranking model in the package: search ranks by the fusion")
        return None
    if model.embedder != embedder.model_name:
        log.warning(
            "the ranking model was fitted with %s, not %s: search ranks by the fusion",
            model.embedder,
            embedder.model_name,
        )
        return None
    return model


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


def build_job_queue(settings: Settings, handlers: dict[str, JobHandler]) -> JobQueue:
    """Celery workers when ``Settings.jobs_on_workers``, else jobs run in this process."""
    if not settings.jobs_on_workers:
        if settings.redis_url is not None:
            log.info("jobs run in this process: a worker cannot open the SQLite database")
        from agentcore.adapters.jobs.local import InProcessJobQueue

        return InProcessJobQueue(handlers)
    from agentcore.adapters.jobs.celery_app import celery_app
    from agentcore.adapters.jobs.celery_queue import CeleryJobQueue

    return CeleryJobQueue(celery_app(settings))


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


def multiprocess_registry(settings: Settings, closers: list[Probe]) -> CollectorRegistry | None:
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


async def probe_vectors(vectors: VectorStore) -> None:
    await vectors.count(VectorFilter(scope_keys=["health:probe"]))


def redis_probe(url: str) -> tuple[Probe, Probe]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    async def probe() -> None:
        await client.ping()

    return probe, client.aclose
