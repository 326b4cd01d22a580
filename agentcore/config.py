"""Settings: every option in one place, read once by the composition root and passed down.

Environment variable names are the field names in upper case (``QDRANT_URL`` sets
``qdrant_url``). Unset server URLs mean the embedded default: a SQLite file, embedded Qdrant
(qdrant-edge) and in-process working memory under ``AGENTCORE_DATA_DIR``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentcore.domain.errors import ConfigurationError
from agentcore.domain.models import ScopeLevel

NonNegative = Annotated[float, Field(ge=0)]

_WEIGHT_FIELDS = (
    "memory_relevance_weight",
    "memory_recency_weight",
    "memory_frequency_weight",
    "memory_stage_relevance_weight",
    "memory_criticality_weight",
    "memory_error_correction_weight",
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", frozen=True)

    # Where the embedded mode keeps its files.
    agentcore_data_dir: Path = Path("./data")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # text: lines for people; json: one JSON object per line, with request ids (agentcore/logs.py)
    log_format: Literal["text", "json"] = "text"
    # production: refuses to serve unless every store is a server (DATABASE_URL, REDIS_URL,
    # QDRANT_URL) and, unless AGENTCORE_ALLOW_OPEN is true, without API keys.
    agentcore_mode: Literal["embedded", "production"] | None = None
    # A database behind this release's schema is migrated at start-up (else the service waits,
    # not ready, for `agentcore migrate`). The embedded file is always migrated at start.
    agentcore_migrate_on_start: bool = False
    # Serving processes (`serve --workers`); more than one needs every store to be a server.
    agentcore_workers: int = Field(1, ge=1)
    # Metrics of several processes summed in one /metrics scrape (prometheus-client's
    # multiprocess mode, agentcore/adapters/prometheus_files.py): each process writes its
    # metrics to files here. Unset: each process counts alone, except `serve --workers N`
    # (N > 1), which then uses AGENTCORE_DATA_DIR/metrics. A Celery worker given the server's
    # directory (same host) shows its jobs, compressions included, in the server's scrape.
    prometheus_multiproc_dir: Path | None = None
    # Where `agentcore serve` listens (also --host/--port), and the service the CLI's client
    # commands call (also --url).
    agentcore_host: str = "127.0.0.1"
    agentcore_port: int = Field(8080, ge=0, le=65535)
    agentcore_url: str = "http://127.0.0.1:8080"
    # `agentcore worker` serves its own metrics here (GET /metrics on AGENTCORE_HOST; also
    # --metrics-port), with AGENTCORE_METRICS_TOKEN as the API's. Unset: none.
    agentcore_worker_metrics_port: int | None = Field(None, ge=1, le=65535)

    # Security. API keys (JSON, see docs/security.md); without the file the service is open.
    agentcore_api_keys_file: Path | None = None
    agentcore_allow_open: bool = False
    agentcore_metrics_token: SecretStr | None = None  # GET /metrics then needs this bearer
    api_rate_limit_per_second: float = Field(50.0, gt=0)  # per key, token bucket
    api_rate_limit_burst: int = Field(100, ge=0)  # 0: no limit
    agentcore_ssl_certfile: Path | None = None  # TLS, also `serve --ssl-certfile/--ssl-keyfile`
    agentcore_ssl_keyfile: Path | None = None
    agentcore_api_key: SecretStr | None = None  # the key the CLI's client commands send
    # Web pages (browser Origin) that may call /rpc and /mcp; others are refused (CSRF and
    # DNS rebinding against a local service). JSON list; agents send no Origin.
    agentcore_allowed_origins: list[str] = Field(default_factory=list)

    # Servers (production). Unset = embedded.
    database_url: str | None = None
    # PostgreSQL: connections each process keeps open, and how many more it may open under a
    # burst (closed again after). Keep processes × (size + overflow) under the server's
    # max_connections (100 by default).
    database_pool_size: int = Field(20, ge=1)
    database_max_overflow: int = Field(10, ge=0)
    redis_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    qdrant_collection_name: str = Field("agentcore_memories", min_length=1)
    redis_memory_db: int = Field(1, ge=0, le=15)

    # Models.
    # Local: multilingual-e5-small ("e5", the default; "local" names it too), or
    # all-MiniLM-L6-v2 ("minilm": about twice as fast, retrieves worse); or OpenAI's API.
    embedder: Literal["e5", "local", "minilm", "openai"] = "e5"
    # MiniLM runs its linear layers on int8 weights (each token quantized on its own; cosine
    # 0.9993 to fp32); false: the fp32 graph. e5 always runs int8 from its 4-bit weights.
    embedder_int8: bool = True
    # The local embedder: threads that embed stored texts behind the writes' replies (queries
    # run on one of their own); unset: one per core.
    embedder_threads: int | None = Field(None, ge=1)
    # How search ranks its candidates: "learned", the ranking model shipped in the package
    # (fitted offline on generated conversations; used with the embedder it was fitted with,
    # otherwise the fusion), or "fusion", the hand-set blend of dense and lexical scores.
    search_ranker: Literal["learned", "fusion"] = "learned"
    # Candidates each side of a search (the vector store, the lexical index) brings to ranking.
    search_candidates: int = Field(30, ge=10, le=200)
    # Semantic facts: rule-based offline, the LLM (MEM0_LLM_MODEL via the OpenAI API), or mem0's
    # extraction with that LLM; "auto" is mem0 when OPENAI_API_KEY is set, else offline.
    fact_extractor: Literal["auto", "offline", "llm", "mem0"] = "auto"
    # Vectors: our Qdrant adapters (native), or mem0's vector-store layer over the same Qdrant.
    vector_provider: Literal["native", "mem0"] = "native"
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    mem0_embedding_model: str = "text-embedding-3-small"
    mem0_llm_model: str = "gpt-4.1-mini"
    compression_model: str = "gpt-4.1-mini"
    reasoning_model: str = "gpt-4.1"

    # Limits.
    # Calls a serving process runs at once (writes in a quarter); more wait for a place, reads
    # (searches, context) before writes, a write that waited write_wait_seconds before the
    # reads (docs/api.md, "Under load").
    max_running_calls: int = Field(32, ge=2)
    write_wait_seconds: float = Field(2.0, gt=0)
    memory_max_context_length: int = Field(10_000, ge=1, description="max content, characters")
    memory_max_query_length: int = Field(2_000, ge=1, description="max search query, characters")
    memory_max_batch_size: int = Field(100, ge=1, le=10_000)
    # SQLite: lexical documents held in memory for search (larger scopes are searched by FTS5).
    lexical_memory_documents: int = Field(200_000, ge=0)
    # SQLite: a scope of more documents is searched from a lexical index stored beside the
    # database file (memory-mapped, built by a process of its own); 0: never.
    lexical_stored_documents: int = Field(20_000, ge=0)
    # Embedded vector store: threads one search may use (the engine's default, one per core,
    # only made its threads compete with the query's embedding and lexical search).
    vector_search_threads: int = Field(1, ge=1)
    # Embedded vector store in a process of its own (its searches hold that process's GIL,
    # not the server's); false: on a thread of the serving process.
    vector_store_process: bool = True
    # Embedded vector store: past this many points outside an HNSW segment, the index is built
    # on a copy of the shard in another process and switched in (0: never build).
    vector_index_threshold: int = Field(20_000, ge=0)

    # Layers.
    working_memory_ttl: int = Field(3600, ge=1)
    working_memory_max_tokens: int = Field(4000, ge=100)
    episodic_memory_max_episodes: int = Field(50, ge=1)
    semantic_memory_capacity: int = Field(1000, ge=1)
    procedural_memory_min_occurrences: int = Field(3, ge=1)

    # COMPASS compression and stages.
    # extractive (no LLM), llm (COMPRESSION_MODEL over the OpenAI API, extractive fallback),
    # auto: llm when OPENAI_API_KEY is set.
    compression_engine: Literal["auto", "extractive", "llm"] = "auto"
    stage_compression_ratio_target: float = Field(10.0, gt=1)
    task_compression_ratio_target: float = Field(5.0, gt=1)
    compression_quality_threshold: float = Field(1.0, ge=0, le=1)
    stage_auto_transition: bool = True
    stage_completion_auto_compress: bool = True
    stage_default_duration_seconds: int = Field(1800, ge=1)
    error_tracking_enabled: bool = True
    error_pattern_detection_threshold: int = Field(2, ge=1)

    # Lifecycle: a session memory whose current importance reaches PROMOTION_THRESHOLD is
    # promoted when its session closes; importance decays by IMPORTANCE_DECAY_PER_DAY (not for
    # critical memories); phone numbers without a country code are read in PII_PHONE_REGION.
    promotion_threshold: float = Field(0.8, ge=0, le=1)
    # MEMORY_DEFAULT_TTL='{"session": 2592000}': seconds a memory of that scope level lives
    # when its caller gives no expiry; EXPIRY_SWEEP_SECONDS: how often expired rows are deleted.
    memory_default_ttl: dict[ScopeLevel, Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: {ScopeLevel.SESSION: 30 * 86_400}
    )
    expiry_sweep_seconds: float = Field(300.0, gt=0)
    # A queued job older than this while workers are alive: /health says the queue is stalled.
    job_stall_seconds: float = Field(60.0, gt=0)
    # How often closed episodes are consolidated into semantic facts (0: only on session close
    # and on request).
    consolidation_interval_seconds: float = Field(600.0, ge=0)
    importance_decay_per_day: float = Field(0.01, ge=0, lt=1)
    pii_phone_region: str = Field("US", min_length=2, max_length=2)

    # ACE strategic context: the thresholds of its signals (a stalled stage is one open longer
    # than STAGE_DEFAULT_DURATION_SECONDS; a repeated pattern one seen
    # ACE_PATTERN_OCCURRENCES times), and how much an intervention's outcome moves the
    # importance of the memories it relied on (never under ACE_IMPORTANCE_FLOOR).
    ace_error_rate_threshold: float = Field(0.3, ge=0, le=1)
    ace_min_progress_rate: float = Field(0.05, ge=0, le=1)
    ace_min_coherence: float = Field(0.6, ge=0, le=1)
    ace_coherence_drop: float = Field(0.15, gt=0, le=1)
    ace_pattern_occurrences: int = Field(3, ge=1)
    ace_budget_threshold: float = Field(0.85, gt=0, le=1)
    ace_feedback_step: float = Field(0.1, ge=0, le=0.5)
    ace_importance_floor: float = Field(0.1, ge=0, le=1)

    # Retrieval score weights (DESIGN §4): non-negative, summing to 1.
    memory_relevance_weight: float = Field(0.35, ge=0, le=1)
    memory_recency_weight: float = Field(0.15, ge=0, le=1)
    memory_frequency_weight: float = Field(0.10, ge=0, le=1)
    memory_stage_relevance_weight: float = Field(0.20, ge=0, le=1)
    memory_criticality_weight: float = Field(0.10, ge=0, le=1)
    memory_error_correction_weight: float = Field(0.10, ge=0, le=1)
    memory_recency_half_life_hours: float = Field(168.0, gt=0)

    # Cost control. MODEL_PRICES='{"my-model": [0.3, 1.2]}' (USD per 1M input, output tokens)
    # is merged over OpenAI's list prices.
    monthly_token_budget_usd: float = Field(1000.0, ge=0)
    alert_threshold_pct: float = Field(75.0, ge=0, le=100)
    model_prices: dict[str, tuple[NonNegative, NonNegative]] = Field(default_factory=dict)
    cost_spend_cache_seconds: float = Field(5.0, ge=0)

    # Vector writes that failed are retried every VECTOR_SYNC_INTERVAL seconds; the embedded
    # vector store is flushed to disk every VECTOR_FLUSH_INTERVAL seconds (until then the
    # database's outbox keeps what a machine crash could lose).
    # The longest a call waits for a server store that does not answer (connecting to
    # Postgres, Redis, Qdrant or the broker, or for a pooled database connection) before it
    # fails with a retryable PROVIDER_ERROR.
    store_timeout_seconds: float = Field(5.0, gt=0)
    # With REDIS_URL, jobs (stage compression) run on `agentcore worker` processes. A call that
    # waits for one (memory.stage.complete) while no worker is alive fails at once with a
    # retryable PROVIDER_ERROR; true: it runs the job in the serving process instead.
    jobs_inline_without_worker: bool = False
    vector_sync_interval: float = Field(1.0, gt=0)
    vector_flush_interval: float = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> Settings:
        total = sum(getattr(self, name) for name in _WEIGHT_FIELDS)
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            names = ", ".join(name.upper() for name in _WEIGHT_FIELDS)
            raise ValueError(f"{names} must sum to 1 (they sum to {total:g})")
        return self

    @property
    def embedded(self) -> bool:
        return self.database_url is None

    @property
    def in_process_stores(self) -> list[str]:
        """The stores that live in the serving process (its data directory or its memory),
        which one process alone can own: what more worker processes would need as servers."""
        local = {
            "DATABASE_URL": self.database_url is None,
            "REDIS_URL": self.redis_url is None,
            "QDRANT_URL": self.qdrant_url is None,
        }
        return [name for name, missing in local.items() if missing]

    @property
    def jobs_on_workers(self) -> bool:
        """Jobs go to Celery workers when there is a broker (``REDIS_URL``) and a database a
        worker may open (``DATABASE_URL``); with the SQLite file, which belongs to the serving
        process, they run in that process whether or not Redis is configured."""
        return self.redis_url is not None and self.database_url is not None

    @property
    def periodic_jobs_on_workers(self) -> bool:
        """Celery beat (``agentcore worker --beat``) runs the expiry sweep and consolidation
        only when every store is a server: they change vectors, which otherwise live in the
        serving process, and that process runs them itself."""
        return not self.in_process_stores

    def check_production(self) -> None:
        """Production runs on servers only: a store left to the embedded default would give
        each replica data of its own, silently."""
        missing = self.in_process_stores
        if self.agentcore_mode == "production" and missing:
            raise ConfigurationError(
                f"AGENTCORE_MODE=production needs every store to be a server; not set: "
                f"{', '.join(missing)} (unset AGENTCORE_MODE for the embedded default)"
            )

    def check_worker(self, *, beat: bool) -> None:
        """Refuse a Celery worker that could not own what its jobs need: the embedded stores
        under AGENTCORE_DATA_DIR belong to the serving process."""
        self.check_production()
        if self.redis_url is None:
            raise ConfigurationError("agentcore worker needs REDIS_URL (the Celery broker)")
        if self.database_url is None:
            raise ConfigurationError(
                "agentcore worker needs DATABASE_URL (a database server): without it the "
                "database is the SQLite file under AGENTCORE_DATA_DIR, which belongs to the "
                "serving process"
            )
        if beat and not self.periodic_jobs_on_workers:
            raise ConfigurationError(
                "agentcore worker --beat needs QDRANT_URL: the periodic jobs (expiry sweep, "
                "consolidation) change vectors, which live in the serving process's embedded "
                "vector store without it, so that process runs them; start the worker "
                "without --beat"
            )

    @property
    def sqlalchemy_url(self) -> str:
        """The async SQLAlchemy URL: the configured database, or the embedded SQLite file."""
        if self.database_url is None:
            return f"sqlite+aiosqlite:///{self.agentcore_data_dir.resolve() / 'agentcore.db'}"
        url = self.database_url
        for prefix in ("postgresql://", "postgres://", "postgresql+psycopg2://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url

    @property
    def weights(self) -> dict[str, float]:
        return {
            name.removeprefix("memory_").removesuffix("_weight"): getattr(self, name)
            for name in _WEIGHT_FIELDS
        }


def load_settings(**overrides: object) -> Settings:
    """Read the environment; a bad value raises ConfigurationError naming the variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = str(error["loc"][0]).upper() if error["loc"] else "settings"
            problems.append(f"{name}: {error['msg']}")
        raise ConfigurationError("invalid configuration: " + "; ".join(problems)) from None
