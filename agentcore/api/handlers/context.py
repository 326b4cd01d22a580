"""JSON-RPC method ``memory.context``: one prompt-ready block within a token budget."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from agentcore.api.params import ScopeParams
from agentcore.api.rpc import RpcMethod
from agentcore.domain.context_block import MAX_TOKENS, MIN_TOKENS, Section
from agentcore.services.consumers.context import Context, ContextRequest, ContextService

LayerName = Literal["working", "episodic", "semantic", "procedural"]


class ContextParams(ScopeParams):
    max_tokens: Annotated[int, Field(ge=MIN_TOKENS, le=MAX_TOKENS)] = Field(
        description="the budget of the whole block, headers included (o200k tokens)"
    )
    query: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="what the agent is about to do; without it: recent, important ones"
    )
    layers: Annotated[list[LayerName], Field(min_length=1, max_length=4)] | None = Field(
        None,
        description="sources to draw from: working (the session), episodic and semantic "
        "(memories), procedural (procedures); default all",
    )
    current_stage: Literal["planning", "execution", "reflection", "verification"] | None = Field(
        None, description="rank memories for this stage; default: the task's active one"
    )


class ContextSectionOut(BaseModel):
    name: Section
    title: str
    tokens: int = Field(description="of the section's text, header included")
    items: int
    omitted: int = Field(description="items left out for the budget")


class IncludedOut(BaseModel):
    ref: int = Field(description="the item's [number] in the text")
    id: str
    kind: str = Field(
        description="what id names: memory (memory.get), working_item (an item of "
        "memory.working.get, the id of the episodic memory it becomes), stage (memory.stage.get), "
        "task (the task id: a constraint, or the progress brief), error or error_pattern (an "
        "error record of memory.error.history: the pattern's newest)"
    )
    section: Section
    tokens: int = Field(description="of the item's line")


class ContextResult(BaseModel):
    text: str = Field(description="the block: labelled sections of [ref] lines")
    tokens_used: int = Field(description="tokens of text as a whole, at most max_tokens")
    max_tokens: int
    tokenizer: str
    sections: list[ContextSectionOut] = Field(description="the sections in the text, in order")
    included: list[IncludedOut] = Field(description="every item of the text, in order")
    omitted: dict[Section, int] = Field(description="per section: items left out to fit")
    duplicates: int = Field(description="items dropped as a repeat of a higher one")
    truncated: bool = Field(description="critical facts were left out: they alone exceed it")
    current_stage: str | None = Field(description="the stage the memories were ranked for")

    @classmethod
    def of(cls, context: Context) -> ContextResult:
        block = context.block
        return cls(
            text=block.text,
            tokens_used=block.tokens_used,
            max_tokens=block.max_tokens,
            tokenizer=context.tokenizer,
            sections=[
                ContextSectionOut(
                    name=s.section,
                    title=s.title,
                    tokens=s.tokens,
                    items=s.items,
                    omitted=s.omitted,
                )
                for s in block.sections
            ],
            included=[
                IncludedOut(ref=i.ref, id=i.id, kind=i.kind, section=i.section, tokens=i.tokens)
                for i in block.included
            ],
            omitted=dict(block.omitted),
            duplicates=block.duplicates,
            truncated=block.truncated,
            current_stage=context.current_stage,
        )


def context_methods(service: ContextService) -> list[RpcMethod]:
    async def context(a: ContextParams) -> ContextResult:
        built = await service.build(
            ContextRequest(
                scope=a.scope_ids(),
                max_tokens=a.max_tokens,
                query=a.query,
                layers=a.layers,
                current_stage=a.current_stage,
            )
        )
        return ContextResult.of(built)

    return [
        RpcMethod(
            "memory.context",
            ContextParams,
            ContextResult,
            context,
            "What an agent should know now, as one prompt-ready block within max_tokens: "
            "critical facts, the task's stage, working memory, relevant memories, procedures "
            "and error lessons, each item numbered with its id.",
        )
    ]
