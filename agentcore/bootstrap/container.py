"""What the composition root builds: every service and adapter of one process, and how they
close."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.config import Settings
from agentcore.domain.errors import AgentCoreError
from agentcore.services.access import AccessRecorder
from agentcore.services.admission import Admission
from agentcore.services.compass.metrics import CompressionMetricsRecorder
from agentcore.services.compass.orchestration import CompassService
from agentcore.services.compass.stages import StageManager
from agentcore.services.consumers.ace import AceService
from agentcore.services.consumers.artifacts import ArtifactService
from agentcore.services.consumers.context import ContextService
from agentcore.services.consumers.routing import RoutingService
from agentcore.services.costs import CostTracker
from agentcore.services.episodic import EpisodicMemoryService
from agentcore.services.errors import ErrorTracker
from agentcore.services.health import HealthService, Probe
from agentcore.services.jobs import JobHandler, JobQueue
from agentcore.services.key_value import KeyValueService
from agentcore.services.lifecycle.compaction import CompactionService
from agentcore.services.lifecycle.consolidation import Consolidator
from agentcore.services.lifecycle.expiry import ExpirySweeper
from agentcore.services.lifecycle.promotion import PromotionService
from agentcore.services.lifecycle.transfer import TransferService
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.namespaced import NamespacedItems
from agentcore.services.ports import ChangeFeed, Embedder, UnitOfWorkFactory, VectorStore
from agentcore.services.procedural import ProceduralMemoryService
from agentcore.services.retrieval import EnhancedRetrieval
from agentcore.services.semantic import SemanticMemoryService
from agentcore.services.startup import StartupChecks
from agentcore.services.vector_sync import VectorSync
from agentcore.services.working_memory import WorkingMemoryService

log = logging.getLogger(__name__)

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
    items: NamespacedItems
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
    feed: ChangeFeed  # the memories' history in order: the change stream's source
    admission: Admission  # which calls run now, and which wait (reads first)
    # PostgreSQL: analyze the searched tables that changed a lot (adapters/db/statistics.py);
    # None on SQLite
    keep_statistics: Callable[[], Awaitable[object]] | None
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
