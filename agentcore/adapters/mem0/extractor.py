"""mem0's LLM fact extraction (``Memory.add(..., infer=True)``) as our ``FactExtractor``.

mem0 2.2.1 extracts ADD-only with one chat completion over its own prompt. Three things are
added around it, each through an extension point mem0 offers:

- its custom instructions give every message a header ``[m1 | speaker | date]`` and ask for
  ``source_ids``, ``category``, ``critical`` and ``importance`` next to each memory's ``text``,
  so facts keep their sources and relative dates resolve against the message's own date;
- its LLM is wrapped: mem0 reads a malformed reply as "no facts", so each reply is validated
  first; an invalid one is sent back with what was wrong, up to ``max_attempts``, then
  ``ProviderError`` is raised; nothing is dropped silently;
- every call runs under a new ``run_id`` on a scratch collection that is emptied afterwards,
  so no earlier extraction hides a repeated fact (our semantic layer merges duplicates and
  needs each source) and mem0 keeps no copy of the content (its SQLite rows are deleted).

mem0 itself is imported inside functions: ``Mem0Client`` imports it first, after setting the
environment it reads at import time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import openai
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from qdrant_client import models

from agentcore.adapters.json_chat import InvalidReply, problems
from agentcore.adapters.mem0.client import EmbedderBridge, Mem0Client, Mem0LLMOptions
from agentcore.domain.errors import (
    AgentCoreError,
    EmbeddingFailed,
    ProviderError,
    RateLimited,
    Unauthorized,
)
from agentcore.domain.usage import TokenUsage
from agentcore.services.ports import Embedder
from agentcore.services.semantic import (
    ExtractedFact,
    Extraction,
    FactCategory,
    SourceText,
)

logger = logging.getLogger(__name__)

INSTRUCTIONS = """\
Each New Message starts with a header in brackets: [id | speaker | date], for example \
[m1 | Caroline | 2023-05-08]; the speaker or date may be "unknown".
- Name the speaker in each memory instead of writing "User" when the header gives a name.
- Resolve relative dates ("yesterday", "next month") against the date in the message's header; \
use the Observation Date only when the header's date is unknown.
- Give every memory object these fields besides "id" and "text":
  "source_ids": the ids from the headers (like "m1") of the New Messages it comes from, at \
least one;
  "category": "preference" | "constraint" | "fact" | "learning";
  "critical": true only for constraints a helper must never violate (must, never, always, \
required, allergic, cannot), else false;
  "importance": a number from 0 to 1: about 0.9 for critical constraints, 0.6 for preferences \
and stable personal facts, 0.4 for passing events.
"""

_DEFAULT_IMPORTANCE = {"constraint": 0.7, "preference": 0.6, "fact": 0.5, "learning": 0.5}


class _MemoryOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: Annotated[str, StringConstraints(min_length=1, max_length=2000)]
    source_ids: list[str] = Field(default_factory=list)
    category: Literal["preference", "constraint", "fact", "learning"] = "fact"
    critical: bool = False
    importance: Annotated[float, Field(ge=0.0, le=1.0)] | None = None


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    memory: list[_MemoryOut]


class _InvalidOutput(Exception):
    """Every attempt was invalid; mem0 wraps it in its ``LLMError``."""


@dataclass
class _Call:
    """The state of one extraction, confined to the worker thread."""

    ids: dict[str, str]  # header id -> memory id
    facts: dict[str, _MemoryOut] = field(default_factory=dict)  # by the text mem0 stores
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0


class _CheckedLLM:
    """mem0's LLM with every reply validated before mem0 parses it (see the module doc)."""

    def __init__(self, inner: Any, max_attempts: int) -> None:
        self._inner = inner
        self._max_attempts = max_attempts
        self.call: _Call | None = None

    def generate_response(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        call = self.call
        if call is None:
            raise RuntimeError("no extraction in progress")
        for _ in range(self._max_attempts):
            call.attempts += 1
            reply = self._inner.generate_response(messages=messages, **kwargs)
            try:
                call.facts = _parse(reply, call.ids)
            except InvalidReply as problem:
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply if isinstance(reply, str) else ""},
                    {"role": "user", "content": f"Invalid reply: {problem}. Answer again with "
                     'only the JSON object {"memory": [...]} as specified.'},
                ]  # fmt: skip
                continue
            return reply
        raise _InvalidOutput


def _parse(reply: Any, ids: dict[str, str]) -> dict[str, _MemoryOut]:
    """The reply's memories by text, read the way mem0 reads them (code fences stripped, JSON
    cut out of surrounding prose), then validated."""
    from mem0.memory.utils import extract_json, remove_code_blocks

    text = remove_code_blocks(reply) if isinstance(reply, str | list) else ""
    if not text:
        raise InvalidReply("the reply was empty")
    try:
        data = json.loads(text, strict=False)
    except json.JSONDecodeError:
        try:
            data = json.loads(extract_json(text), strict=False)
        except json.JSONDecodeError:
            raise InvalidReply("the reply is not valid JSON") from None
    try:
        memories = _Reply.model_validate(data).memory
    except ValidationError as exc:
        raise InvalidReply(problems(exc)) from None
    found: dict[str, _MemoryOut] = {}
    for index, memory in enumerate(memories):
        if not memory.text.strip():
            raise InvalidReply(f"memory.{index}.text: empty")
        if not memory.source_ids and len(ids) == 1:
            memory.source_ids = list(ids)
        unknown = [i for i in memory.source_ids if i not in ids]
        if not memory.source_ids or unknown:
            problem = f"unknown ids {unknown[:3]}" if unknown else "missing"
            raise InvalidReply(f"memory.{index}.source_ids: {problem}")
        if memory.text in found:  # mem0 stores one of two equal texts: keep both sources
            earlier = found[memory.text]
            earlier.source_ids = list(dict.fromkeys([*earlier.source_ids, *memory.source_ids]))
        else:
            found[memory.text] = memory
    return found


class Mem0FactExtractor:
    """``FactExtractor`` over mem0 (see the module docstring); returns an ``Extraction`` whose
    ``usage`` counts the tokens of every attempt. Builds its mem0 ``Memory`` at once (blocking,
    milliseconds); ``close`` releases the worker thread, the ``Mem0Client`` stays the caller's."""

    def __init__(
        self,
        client: Mem0Client,
        embedder: Embedder,
        llm: Mem0LLMOptions,
        *,
        max_attempts: int = 3,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._model = llm.model
        self._bridge = EmbedderBridge(embedder)
        self._memory = client.extraction_memory(
            self._bridge, llm, instructions=INSTRUCTIONS, on_response=self._count_tokens
        )
        self._llm = _CheckedLLM(self._memory.llm, max_attempts)
        self._memory.llm = self._llm
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem0-extract")

    @property
    def model_name(self) -> str:
        return self._model

    async def extract(self, texts: Sequence[SourceText]) -> Extraction:
        if not texts:
            return Extraction([], TokenUsage(self._model))
        loop = asyncio.get_running_loop()
        call = _Call({f"m{i + 1}": text.memory_id for i, text in enumerate(texts)})
        messages = [_message(short, text) for short, text in zip(call.ids, texts, strict=True)]
        stored = await loop.run_in_executor(self._executor, self._add, call, messages, loop)
        facts = []
        for text in stored:
            out = call.facts.get(text)
            if out is None:  # mem0 returned a text the validated reply does not hold
                raise ProviderError("mem0 returned a fact its model did not produce")
            facts.append(_fact(out, call.ids))
        return Extraction(
            facts, TokenUsage(self._model, call.prompt_tokens, call.completion_tokens)
        )

    async def close(self) -> None:
        await asyncio.wrap_future(self._executor.submit(lambda: None))
        self._executor.shutdown(wait=True)

    def _add(
        self, call: _Call, messages: list[dict[str, str]], loop: asyncio.AbstractEventLoop
    ) -> list[str]:
        """Run mem0's extraction (worker thread); returns the texts mem0 stored, in order."""
        from mem0.exceptions import LLMError

        run_id = f"agentcore-{uuid.uuid4().hex}"
        self._llm.call, self._bridge.loop, self._bridge.failures = call, loop, 0
        stored: list[dict[str, Any]] = []
        try:
            result = self._memory.add(messages, run_id=run_id, infer=True)
            stored = list(result.get("results", []))
        except LLMError as exc:
            raise _llm_error(exc.__cause__, call) from exc
        except AgentCoreError:
            raise
        # mem0 raises its own exceptions, ValueError and sqlite3 errors, with no common base.
        except Exception as exc:
            logger.error("mem0 fact extraction failed: %s", type(exc).__name__)
            raise ProviderError("mem0 fact extraction failed") from exc
        finally:
            self._llm.call = None
            try:
                self._forget(run_id, [str(item.get("id")) for item in stored])
            # Cleaning up must not hide the outcome; what it left is logged (sqlite3 and
            # qdrant-client errors share no base).
            except Exception as exc:
                logger.error("mem0 scratch cleanup after %s failed: %s", run_id, type(exc).__name__)
        if self._bridge.failures:
            raise EmbeddingFailed("embedding the facts mem0 extracted failed")
        return [str(item.get("memory", "")) for item in stored]

    def _count_tokens(self, llm: Any, response: Any, params: Any) -> None:
        call, usage = self._llm.call, getattr(response, "usage", None)
        if call is not None and usage is not None:
            call.prompt_tokens += int(usage.prompt_tokens or 0)
            call.completion_tokens += int(usage.completion_tokens or 0)

    def _forget(self, run_id: str, memory_ids: list[str]) -> None:
        """Empty the scratch collection and delete mem0's SQLite rows of this run: the facts
        live in our store. mem0 2.2.1 has no API for the rows; its tables are used directly."""
        store = self._memory.vector_store
        everything = models.FilterSelector(filter=models.Filter(must=[]))
        store.client.delete(store.collection_name, points_selector=everything)
        db = self._memory.db
        with db._lock:
            # mem0's session scope of a call with only a run_id (_build_session_scope).
            db.connection.execute(
                "DELETE FROM messages WHERE session_scope = ?", (f"run_id={run_id}",)
            )
            db.connection.executemany(
                "DELETE FROM history WHERE memory_id = ?", [(i,) for i in memory_ids]
            )
            db.connection.commit()


def _message(short_id: str, text: SourceText) -> dict[str, str]:
    speaker = text.speaker or (text.role.capitalize() if text.role else "unknown")
    date = text.at.date().isoformat() if text.at is not None else "unknown"
    role = "assistant" if text.role in ("assistant", "agent") else "user"
    return {"role": role, "content": f"[{short_id} | {speaker} | {date}] {text.content}"}


def _fact(out: _MemoryOut, ids: dict[str, str]) -> ExtractedFact:
    importance = out.importance
    if importance is None:
        importance = 0.9 if out.critical else _DEFAULT_IMPORTANCE[out.category]
    return ExtractedFact(
        content=out.text.strip(),
        category=FactCategory(out.category),
        importance=importance,
        critical=out.critical,
        source_ids=tuple(dict.fromkeys(ids[i] for i in out.source_ids)),
    )


def _llm_error(cause: BaseException | None, call: _Call) -> AgentCoreError:
    """A short, safe error: the provider's text can echo input or keys, so it is not copied."""
    if isinstance(cause, _InvalidOutput):
        return ProviderError(
            f"mem0 fact extraction returned invalid output {call.attempts} times",
            attempts=call.attempts,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
        )
    if isinstance(cause, openai.RateLimitError):
        retry_after = cause.response.headers.get("retry-after")
        details = {"retry_after": retry_after} if retry_after else {}
        return RateLimited("the mem0 fact extraction provider is rate limiting requests", **details)
    if isinstance(cause, openai.AuthenticationError | openai.PermissionDeniedError):
        return Unauthorized("the mem0 fact extraction provider rejected the API key")
    if isinstance(cause, openai.APITimeoutError):
        return ProviderError("the mem0 fact extraction provider timed out")
    if isinstance(cause, openai.APIConnectionError):
        return ProviderError("cannot reach the mem0 fact extraction provider")
    if isinstance(cause, openai.APIStatusError):
        return ProviderError(
            f"the mem0 fact extraction provider failed (HTTP {cause.status_code})",
            status=cause.status_code,
        )
    return ProviderError("the mem0 fact extraction provider failed")
