"""The MessageRouter's view (``memory.route_context``): for an incoming message, the session's
most relevant memories, and for each candidate agent how well its own history matches.

An agent's score (0-1) = ``MEMORY_SHARE`` × the relevance of its best-matching memories (the
mean similarity of its top ``EVIDENCE`` hits at the agent scope) + ``PROCEDURE_SHARE`` × its
best relevant procedure's similarity × success rate. Without candidates the agents that wrote
memories in the session are scored. Each score comes with its evidence (memory ids and
texts, the procedure and its success rate), so the router's choice can be explained.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agentcore.domain.models import Layer, ScopeIds
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.procedural import ProceduralMemoryService
from agentcore.services.ranked import ScoredMemory
from agentcore.services.retrieval import SearchQuery

MEMORY_SHARE, PROCEDURE_SHARE = 0.6, 0.4
EVIDENCE = 3
MAX_CANDIDATES = 20


@dataclass(frozen=True, slots=True)
class AgentScore:
    agent_id: str
    score: float
    memory_relevance: float
    procedure_score: float
    evidence: list[dict[str, object]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RouteContext:
    memories: list[ScoredMemory]
    agent_scores: list[AgentScore]  # best first


class RoutingService:
    def __init__(self, memory: MemoryManager, procedural: ProceduralMemoryService) -> None:
        self._memory = memory
        self._procedural = procedural

    async def route_context(
        self,
        content: str,
        scope: ScopeIds,
        *,
        limit: int = 5,
        candidate_agents: Sequence[str] | None = None,
    ) -> RouteContext:
        """``scope`` names the session (and may add the user or other levels to search). The
        memories are the session's, whichever agent, user or task wrote them."""
        assert scope.session_id is not None, "routing is for a session"
        found = await self._memory.search(
            SearchQuery(query=content, scope=scope, limit=limit, session_wide=True)
        )
        agents = candidate_agents or await self._memory.session_agents(scope.session_id)
        agents = list(dict.fromkeys(agents))
        scores = [await self._score(content, agent) for agent in agents[:MAX_CANDIDATES]]
        scores.sort(key=lambda s: (-s.score, s.agent_id))
        return RouteContext(found.results, scores)

    async def _score(self, content: str, agent_id: str) -> AgentScore:
        scope = ScopeIds(agent_id=agent_id)
        hits = (
            await self._memory.search(
                SearchQuery(
                    query=content,
                    scope=scope,
                    layers=[Layer.EPISODIC.value, Layer.SEMANTIC.value],
                    limit=EVIDENCE,
                )
            )
        ).results
        relevance = sum(h.similarity for h in hits) / EVIDENCE if hits else 0.0
        evidence: list[dict[str, object]] = [
            {
                "memory_id": h.memory.id,
                "content": h.memory.content[:200],
                "similarity": round(h.similarity, 4),
            }
            for h in hits
        ]
        procedures = [
            p for p in await self._procedural.search(content, scope, limit=3) if p.relevant
        ]
        procedure = 0.0
        if procedures:
            best = max(procedures, key=lambda p: p.similarity * p.success_rate)
            procedure = best.similarity * best.success_rate
            evidence.append(
                {
                    "procedure_id": best.procedure.id,
                    "action": best.action,
                    "success_rate": round(best.success_rate, 4),
                    "occurrences": best.occurrences,
                }
            )
        score = MEMORY_SHARE * relevance + PROCEDURE_SHARE * procedure
        return AgentScore(
            agent_id, round(min(score, 1.0), 4), round(relevance, 4), round(procedure, 4), evidence
        )
