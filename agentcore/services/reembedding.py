"""Moving a store to another embedder. Vectors of two models are never mixed: a store records
the embedder it was built with (model and dimension) and refuses to start with another one;
``reembed`` drops the vector collection, embeds every searchable memory again with the
configured embedder, in batches, from the database (which holds the truth), and then records
the new embedder. It is restartable: cut off, the store still names the old embedder, and
running it again starts over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentcore.services.ports import Embedder, UnitOfWorkFactory, VectorStore
from agentcore.services.vector_sync import to_point

EMBEDDER_SETTING = "embedder"  # the store setting that names the embedder of its vectors


def embedder_id(embedder: Embedder) -> str:
    return f"{embedder.model_name}/{embedder.dimension}"


@dataclass(frozen=True, slots=True)
class Reembedded:
    previous: str | None  # the embedder the store had, if it recorded one
    current: str
    memories: int


async def reembed(
    uow_factory: UnitOfWorkFactory,
    vectors: VectorStore,
    embedder: Embedder,
    *,
    batch_size: int = 100,
    progress: Callable[[int, int], None] | None = None,
) -> Reembedded:
    """Rebuild the vector collection with ``embedder``; ``progress(done, total)`` after each
    batch. Run it with the service stopped (the embedded vector store is one process's)."""
    async with uow_factory(read_only=True) as uow:
        previous = await uow.store_settings.get(EMBEDDER_SETTING)
        total = await uow.memories.count_searchable()
    await vectors.reset_collection(embedder.dimension, embedder.model_name)
    done, last = 0, ""
    while True:
        async with uow_factory(read_only=True) as uow:
            page = await uow.memories.after_id(last, batch_size)
        if not page:
            break
        embedded = await embedder.embed([memory.content for memory in page])
        await vectors.upsert([to_point(m, v) for m, v in zip(page, embedded, strict=True)])
        done, last = done + len(page), page[-1].id
        if progress is not None:
            progress(done, max(total, done))
    await vectors.flush()
    async with uow_factory() as uow:
        await uow.store_settings.put(EMBEDDER_SETTING, embedder_id(embedder))
        await uow.commit()
    return Reembedded(previous, embedder_id(embedder), done)
