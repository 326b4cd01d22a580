"""A store keeps the vectors of one embedder: the check at start-up that refuses another, and
``agentcore reembed``, which moves a store to the configured one."""

from __future__ import annotations

from collections.abc import Callable

from agentcore.adapters.db.engine import create_engine
from agentcore.adapters.db.uow import SqlUnitOfWorkFactory
from agentcore.bootstrap.adapters import build_embedder, build_vector_store
from agentcore.config import Settings
from agentcore.domain.errors import ConfigurationError
from agentcore.services.ports import Embedder, UnitOfWorkFactory
from agentcore.services.reembedding import EMBEDDER_SETTING, Reembedded, embedder_id, reembed


async def check_embedder(uow_factory: UnitOfWorkFactory, embedder: Embedder) -> None:
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
