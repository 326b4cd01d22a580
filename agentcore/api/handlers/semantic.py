"""JSON-RPC methods of the semantic layer: ``memory.facts.extract``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from agentcore.api.params import Identifier, ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.api.schemas import MemoryOut
from agentcore.services.semantic import SemanticMemoryService


class ExtractFactsParams(ScopeParams):
    memory_ids: Annotated[list[Identifier], Field(min_length=1, max_length=100)] = Field(
        description="source memories, each visible to the given scope ids"
    )


class ExtractFactsResult(BaseModel):
    facts: list[MemoryOut] = Field(
        description="semantic facts stored or merged (metadata: category, source_ids)"
    )


def semantic_methods(service: SemanticMemoryService) -> list[RpcMethod]:
    async def extract(params: BaseModel) -> BaseModel:
        assert isinstance(params, ExtractFactsParams)
        facts = await service.extract(params.scope_ids(), params.memory_ids)
        return ExtractFactsResult(facts=[MemoryOut.of(m) for m in facts])

    return [
        RpcMethod(
            "memory.facts.extract",
            ExtractFactsParams,
            ExtractFactsResult,
            extract,
            "Extract facts, preferences and constraints from memories into the semantic layer "
            "(each in its source's scope; near-duplicates merged).",
        )
    ]
