"""Consolidation (FR-1.5): episodic memories become semantic facts without being asked, when
their session closes and on a schedule.

The scheduled job ``memories.consolidate`` takes the episodes closed since its last run (a
watermark of episode update times kept in ``store_settings``), and extracts facts from their
items with the configured fact extractor; each fact keeps ``metadata.source_ids``, the
memories it came from, which are the episode's items. A fact said again merges into the
existing one, so an episode consolidated twice adds nothing twice. Memories stored directly
(not through working memory) are not episodes: they are consolidated on request
(``memory.facts.extract``) or when their session closes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentcore.domain.models import Layer, Memory
from agentcore.services.ports import UnitOfWorkFactory
from agentcore.services.semantic import SemanticMemoryService

CONSOLIDATE = "memories.consolidate"  # job kind
WATERMARK = "consolidated_episodes_until"
EPISODES_PER_RUN = 50


class Consolidator:
    def __init__(self, uow_factory: UnitOfWorkFactory, semantic: SemanticMemoryService) -> None:
        self._uow_factory = uow_factory
        self._semantic = semantic

    async def memories(self, memories: list[Memory]) -> list[Memory]:
        """Facts from the episodic ``memories`` (a closing session's); the facts stored."""
        episodic = [m for m in memories if m.layer is Layer.EPISODIC]
        return await self._semantic.extract_from(episodic) if episodic else []

    async def run(self) -> int:
        """Consolidate the episodes closed since the last run; how many facts were stored."""
        async with self._uow_factory(read_only=True) as uow:
            mark = await uow.store_settings.get(WATERMARK)
            since = None if mark is None else datetime.fromisoformat(mark)
            episodes = await uow.episodes.closed_since(since, EPISODES_PER_RUN)
            items = await uow.memories.get_many([i for e in episodes for i in e.memory_ids])
        if not episodes:
            return 0
        facts = await self.memories(items)
        async with self._uow_factory() as uow:
            await uow.store_settings.put(WATERMARK, episodes[-1].updated_at.isoformat())
            await uow.commit()
        return len(facts)

    async def run_job(self, _: dict[str, Any]) -> dict[str, Any]:
        """The job handler of ``CONSOLIDATE``."""
        return {"facts": await self.run()}
