"""The first step of wiring a process: the database, the embedder, the vector store and the
lexical index, and the start-up checks run on them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from sqlalchemy.ext.asyncio import AsyncEngine

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.lexical.search import SqlLexicalIndex
from agentcore.adapters.db.migrate import SchemaCheck
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.adapters.outages import DATABASE, VECTOR_STORE
from agentcore.bootstrap.adapters import build_embedder, build_vector_store
from agentcore.bootstrap.embedder_check import check_embedder
from agentcore.config import Settings
from agentcore.services.health import Probe
from agentcore.services.ports import Embedder, UnitOfWorkFactory, VectorStore
from agentcore.services.startup import Check, StartupChecks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stores:
    engine: AsyncEngine
    uow_factory: UnitOfWorkFactory
    embedder: Embedder
    vectors: VectorStore
    lexical: SqlLexicalIndex
    startup: StartupChecks


async def open_stores(
    settings: Settings,
    embedder: Embedder | None,
    vectors: VectorStore | None,
    closers: list[Probe],
    pool_wait: Callable[[float], None] | None = None,
) -> Stores:
    """The database, the embedder, the vector store and the lexical index, and the start-up
    checks run on them (a store that is away leaves the service degraded, not down)."""
    engine = create_engine(
        settings.sqlalchemy_url,
        settings.store_timeout_seconds,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        pool_wait=pool_wait,
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
                partial(check_embedder, uow_factory, embedder),
                guards_calls=True,
            ),
            Check("the vector collection", VECTOR_STORE, collection),
        ]
        # SQLite: the large scopes' stored lexical indexes open (or are built) at start-up.
        + ([Check("the lexical index", DATABASE, lexical.warm)] if lexical.stores else [])
    )
    if not await startup.run():
        log.warning("starting degraded, waiting for: %s", ", ".join(startup.waiting_for))
    return Stores(engine, uow_factory, embedder, vectors, lexical, startup)
