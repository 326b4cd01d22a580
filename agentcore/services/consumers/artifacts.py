"""Artifacts (``memory.artifact.add`` / ``.list``): what a task's session produced (a report,
a diff, a file at a URI) stored as an episodic memory of the task, linked to the session and
to the stage it was made in (the task's current stage unless named). Listed by task, and by
session, stage and participant.

An artifact is a memory with ``metadata.kind = "artifact"``, its ``name``, ``uri`` and
``session_id`` in its metadata, and the tags ``artifact`` and ``participant:<id>`` for each
participant (so the participant filter runs in the database)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcore.domain.errors import InvalidParams
from agentcore.domain.models import Memory, ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.memory_manager import ListRequest, MemoryManager, Page

ARTIFACT = "artifact"


def participant_tag(participant: str) -> str:
    return f"participant:{participant}"


@dataclass(frozen=True, slots=True)
class NewArtifact:
    task_id: str
    session_id: str
    name: str
    content: str | None = None
    uri: str | None = None
    stage_id: str | None = None
    participants: Sequence[str] = ()
    agent_id: str | None = None


class ArtifactService:
    def __init__(self, memory: MemoryManager) -> None:
        self._memory = memory

    async def add(self, new: NewArtifact) -> Memory:
        if (new.content is None) == (new.uri is None):
            raise InvalidParams(
                "an artifact has content or a uri (one of them)",
                errors=[{"field": "content", "message": "give content or uri"}],
            )
        text = new.content if new.content is not None else f"Artifact {new.name}: {new.uri}"
        metadata: dict[str, object] = {
            "kind": ARTIFACT,
            "name": new.name,
            "session_id": new.session_id,
        }
        if new.uri is not None:
            metadata["uri"] = new.uri
        if new.participants:
            metadata["participants"] = list(new.participants)
        scope = ScopeIds(task_id=new.task_id, session_id=new.session_id, agent_id=new.agent_id)
        return await self._memory.add(
            NewMemory(
                content=text,
                scope=scope,
                layer="episodic",
                scope_level="task",
                metadata=metadata,
                tags=(ARTIFACT, *(participant_tag(p) for p in new.participants)),
                stage_id=new.stage_id,
                source=ARTIFACT,
            )
        )

    async def list(
        self,
        task_id: str,
        *,
        session_id: str | None = None,
        stage_id: str | None = None,
        participant: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 20,
    ) -> Page:
        metadata: dict[str, str | int | bool] = {"kind": ARTIFACT}
        if session_id is not None:
            metadata["session_id"] = session_id
        request = ListRequest(
            scope=ScopeIds(task_id=task_id),
            scope_level="task",
            stage_id=stage_id,
            tags=None if participant is None else [participant_tag(participant)],
            metadata=metadata,
            after=after,
            limit=limit,
        )
        return await self._memory.list_page(request)
