"""SemanticMemoryService over the fakes: scopes, near-duplicate merging, capacity and pruning."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry

from agentcore.api.handlers.semantic import semantic_methods
from agentcore.api.metrics import RpcMetrics
from agentcore.api.rpc import JsonRpcEndpoint
from agentcore.domain.errors import InvalidParams, MemoryNotFound
from agentcore.domain.models import EventKind, Layer, Memory, ScopeIds, ScopeLevel
from agentcore.domain.records import NewMemory
from agentcore.services.semantic import (
    ExtractedFact,
    FactCategory,
    SemanticMemoryService,
    SourceText,
    normalize_fact,
    source_text,
)
from tests.fakes import memories_in
from tests.unit.conftest import Services

ALICE_S1 = ScopeIds(user_id="alice", session_id="s1")
ALICE_S2 = ScopeIds(user_id="alice", session_id="s2")


class FakeExtractor:
    """Scripted: each source text's content maps to the facts it yields (content, category,
    importance, critical); every call is recorded."""

    def __init__(self, script: dict[str, list[tuple[str, str, float, bool]]]) -> None:
        self.script = script
        self.calls: list[list[SourceText]] = []

    async def extract(self, texts: Sequence[SourceText]) -> list[ExtractedFact]:
        self.calls.append(list(texts))
        return [
            ExtractedFact(content, FactCategory(category), importance, critical, (t.memory_id,))
            for t in texts
            for content, category, importance, critical in self.script.get(t.content, [])
        ]


def _service(
    services: Services, extractor: object, capacity: int = 1000, similarity: float = 0.95
) -> SemanticMemoryService:
    return SemanticMemoryService(
        services.memory,
        services.store,
        extractor,  # type: ignore[arg-type]
        services.clock,
        capacity=capacity,
        duplicate_similarity=similarity,
    )


def _facts(services: Services) -> list[Memory]:
    return [m for m in memories_in(services.store).values() if m.layer is Layer.SEMANTIC]


async def _add(services: Services, content: str, scope: ScopeIds, **kw: object) -> Memory:
    return await services.memory.add(NewMemory(content, scope, **kw))  # type: ignore[arg-type]


async def test_a_fact_lands_in_the_scope_of_its_source(services: Services) -> None:
    extractor = FakeExtractor(
        {"I love hiking": [("The user loves hiking", "preference", 0.6, False)]}
    )
    source = await _add(services, "I love hiking", ALICE_S1, scope_level="user")

    facts = await _service(services, extractor).extract_from([source])

    assert len(facts) == 1
    fact = facts[0]
    assert (fact.content, fact.layer, fact.scope_key) == (
        "The user loves hiking",
        Layer.SEMANTIC,
        "user:alice",
    )
    assert fact.scope == ALICE_S1
    assert fact.metadata == {"category": "preference", "source_ids": [source.id]}
    assert (fact.importance, fact.critical, fact.source) == (0.6, False, "extraction")
    assert _facts(services) == [fact]


async def test_the_same_fact_from_two_sessions_is_one_fact_with_both_sources(
    services: Services,
) -> None:
    extractor = FakeExtractor(
        {
            "I really love hiking": [("The user loves hiking.", "preference", 0.6, False)],
            "Hiking is what I love": [("the user LOVES   hiking", "preference", 0.6, False)],
        }
    )
    service = _service(services, extractor)
    first = await _add(services, "I really love hiking", ALICE_S1, scope_level="user")
    second = await _add(services, "Hiking is what I love", ALICE_S2, scope_level="user")

    [stored] = await service.extract_from([first])
    [merged] = await service.extract_from([second])

    assert merged.id == stored.id
    assert merged.content == "The user loves hiking."
    assert merged.metadata["source_ids"] == [first.id, second.id]
    assert [f.id for f in _facts(services)] == [stored.id]
    kinds = [e.kind for e in await services.memory.history(stored.id, ALICE_S1)]
    assert kinds == [EventKind.ADD, EventKind.UPDATE]


async def test_equal_normalized_text_is_merged_whatever_the_cosine(services: Services) -> None:
    extractor = FakeExtractor(
        {
            "a": [("Caroline's dog is named Max.", "fact", 0.5, False)],
            "b": [("caroline s dog is named max", "fact", 0.5, False)],
        }
    )
    service = _service(services, extractor, similarity=1.01)  # cosine alone never merges
    [stored] = await service.extract_from([await _add(services, "a", ALICE_S1)])
    [merged] = await service.extract_from([await _add(services, "b", ALICE_S1)])
    assert merged.id == stored.id
    assert len(merged.metadata["source_ids"]) == 2


async def test_a_near_duplicate_by_cosine_is_merged(services: Services) -> None:
    # Same words, another order: the bag-of-words fake embeds them identically (cosine 1).
    extractor = FakeExtractor(
        {
            "a": [("Caroline loves hiking in the mountains", "preference", 0.6, False)],
            "b": [("In the mountains Caroline loves hiking", "preference", 0.6, False)],
        }
    )
    service = _service(services, extractor)
    first = await _add(services, "a", ALICE_S1, scope_level="user")
    second = await _add(services, "b", ALICE_S2, scope_level="user")
    [stored] = await service.extract_from([first])
    [merged] = await service.extract_from([second])
    assert merged.id == stored.id
    assert merged.metadata["source_ids"] == [first.id, second.id]


async def test_different_facts_and_other_scopes_are_not_merged(services: Services) -> None:
    extractor = FakeExtractor(
        {
            "hike": [("The user loves hiking", "preference", 0.6, False)],
            "swim": [("The user hates swimming in cold lakes", "preference", 0.6, False)],
        }
    )
    service = _service(services, extractor)
    alice = await _add(services, "hike", ALICE_S1, scope_level="user")
    alice_swim = await _add(services, "swim", ALICE_S1, scope_level="user")
    bob = await _add(services, "hike", ScopeIds(user_id="bob"))

    facts = await service.extract_from([alice, alice_swim, bob])

    assert sorted(f.scope_key for f in facts) == ["user:alice", "user:alice", "user:bob"]
    assert len(_facts(services)) == 3
    assert len(extractor.calls) == 2  # one call per scope: a fact never mixes scopes


async def test_a_critical_duplicate_makes_the_fact_critical(services: Services) -> None:
    extractor = FakeExtractor(
        {
            "nuts?": [("The user prefers window seats", "preference", 0.5, False)],
            "nuts!": [("The user prefers window seats", "preference", 0.9, True)],
        }
    )
    service = _service(services, extractor)
    [plain] = await service.extract_from([await _add(services, "nuts?", ALICE_S1)])
    [merged] = await service.extract_from([await _add(services, "nuts!", ALICE_S1)])
    assert merged.id == plain.id
    assert merged.critical
    assert not plain.critical


async def test_facts_within_one_call_are_deduplicated(services: Services) -> None:
    extractor = FakeExtractor(
        {"x": [("Caroline is a nurse", "fact", 0.5, False)] * 2},
    )
    source = await _add(services, "x", ALICE_S1)
    facts = await _service(services, extractor).extract_from([source])
    assert len(facts) == 1
    assert facts[0].metadata["source_ids"] == [source.id]
    assert len(_facts(services)) == 1


async def test_capacity_prunes_the_least_important_never_critical(services: Services) -> None:
    script = {
        f"t{i}": [(f"Fact number {i} about topic{i}", "fact", importance, critical)]
        for i, (importance, critical) in enumerate(
            [(0.1, True), (0.2, False), (0.9, False), (0.3, False), (0.8, False)]
        )
    }
    service = _service(services, FakeExtractor(script), capacity=3)
    sources = [await _add(services, f"t{i}", ALICE_S1) for i in range(5)]

    facts = await service.extract_from(sources)

    kept = {m.content for m in _facts(services)}
    assert kept == {
        "Fact number 0 about topic0",
        "Fact number 2 about topic2",
        "Fact number 4 about topic4",
    }
    assert {f.content for f in facts} == kept  # pruned facts are not reported as stored
    pruned = [m for m in memories_in(services.store).values() if m.content.endswith("topic1")]
    assert pruned == []
    deletes = [e for e in services.store.state.history if e.kind is EventKind.DELETE]
    assert {e.before["content"] for e in deletes if e.before} == {
        "Fact number 1 about topic1",
        "Fact number 3 about topic3",
    }


async def test_pruning_breaks_ties_by_access_count(services: Services) -> None:
    script = {
        f"t{i}": [(f"Statement {i} regarding subject{i}", "fact", 0.5, False)] for i in range(3)
    }
    service = _service(services, FakeExtractor(script), capacity=2)
    stored = await service.extract_from([await _add(services, f"t{i}", ALICE_S1) for i in range(2)])
    await services.memory.get(stored[0].id, ALICE_S1)  # one access for the older fact

    await service.extract_from([await _add(services, "t2", ALICE_S1)])

    kept = sorted(m.content for m in _facts(services))
    assert kept == ["Statement 0 regarding subject0", "Statement 2 regarding subject2"]


async def test_only_critical_facts_may_exceed_capacity(services: Services) -> None:
    script = {
        f"t{i}": [(f"Rule {i} must hold for case{i}", "constraint", 0.9, True)] for i in range(3)
    }
    service = _service(services, FakeExtractor(script), capacity=2)
    await service.extract_from([await _add(services, f"t{i}", ALICE_S1) for i in range(3)])
    assert len(_facts(services)) == 3


async def test_made_up_source_ids_are_ignored(services: Services) -> None:
    class Inventing:
        async def extract(self, texts: Sequence[SourceText]) -> list[ExtractedFact]:
            real = texts[0].memory_id
            return [
                ExtractedFact(
                    "Kept fact about apples", FactCategory.FACT, 0.5, False, ("nope", real)
                ),
                ExtractedFact("Orphan fact about pears", FactCategory.FACT, 0.5, False, ("nope",)),
            ]

    source = await _add(services, "anything", ALICE_S1)
    facts = await _service(services, Inventing()).extract_from([source])
    assert [(f.content, f.metadata["source_ids"]) for f in facts] == [
        ("Kept fact about apples", [source.id])
    ]


async def test_facts_are_not_extracted_from_facts(services: Services) -> None:
    extractor = FakeExtractor({"I love tea": [("The user loves tea", "preference", 0.6, False)]})
    service = _service(services, extractor)
    [fact] = await service.extract_from([await _add(services, "I love tea", ALICE_S1)])
    assert await service.extract_from([fact]) == []
    assert len(extractor.calls) == 1


async def test_extract_by_ids_checks_visibility(services: Services) -> None:
    extractor = FakeExtractor({"I love tea": [("The user loves tea", "preference", 0.6, False)]})
    service = _service(services, extractor)
    mine = await _add(services, "I love tea", ALICE_S1)
    bobs = await _add(services, "I love tea", ScopeIds(user_id="bob"))

    facts = await service.extract(ALICE_S1, [mine.id, mine.id])
    assert [f.metadata["source_ids"] for f in facts] == [[mine.id]]
    with pytest.raises(MemoryNotFound):
        await service.extract(ALICE_S1, [mine.id, bobs.id])
    with pytest.raises(InvalidParams):
        await service.extract(ALICE_S1, [])


def test_source_text_reads_speaker_role_and_time() -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    memory = Memory(
        id="m1",
        content="I love tea",
        layer=Layer.EPISODIC,
        scope_level=ScopeLevel.USER,
        scope=ALICE_S1,
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        updated_at=datetime(2024, 1, 1, tzinfo=UTC),
        metadata={"speaker": " Caroline ", "role": "user", "at": at.isoformat()},
    )
    assert source_text(memory) == SourceText("m1", "I love tea", "Caroline", "user", at)
    memory.metadata = {"at": "not a time", "role": 7}
    assert source_text(memory) == SourceText("m1", "I love tea", None, None, memory.created_at)


def test_normalized_text_ignores_case_spacing_and_punctuation() -> None:
    assert normalize_fact("  Caroline's   dog, Max!") == normalize_fact("caroline s dog max")
    assert normalize_fact("Caroline likes tea") != normalize_fact("Caroline likes tee")


def test_an_extracted_fact_checks_its_values() -> None:
    with pytest.raises(ValueError, match="importance"):
        ExtractedFact("x", FactCategory.FACT, 1.5, False, ("m",))
    with pytest.raises(ValueError, match="source"):
        ExtractedFact("x", FactCategory.FACT, 0.5, False, ())


async def test_the_rpc_method_extracts_and_validates(services: Services) -> None:
    extractor = FakeExtractor({"I love tea": [("The user loves tea", "preference", 0.6, False)]})
    methods = semantic_methods(_service(services, extractor))
    endpoint = JsonRpcEndpoint({m.name: m for m in methods}, RpcMetrics(CollectorRegistry()))
    source = await _add(services, "I love tea", ALICE_S1)

    async def call(params: dict[str, object]) -> dict[str, object]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "memory.facts.extract", "params": params}
        reply = await endpoint.handle(json.dumps(body).encode())
        assert isinstance(reply, dict)
        return reply

    ok = await call({"user_id": "alice", "session_id": "s1", "memory_ids": [source.id]})
    [fact] = ok["result"]["facts"]  # type: ignore[index]
    assert (fact["content"], fact["layer"], fact["scope"]) == (
        "The user loves tea",
        "semantic",
        "user",
    )
    assert fact["metadata"] == {"category": "preference", "source_ids": [source.id]}
    bad = await call({"user_id": "alice", "memory_ids": []})
    assert bad["error"]["data"]["code"] == "INVALID_PARAMS"  # type: ignore[index]
    hidden = await call({"user_id": "bob", "memory_ids": [source.id]})
    assert hidden["error"]["data"]["code"] == "MEMORY_NOT_FOUND"  # type: ignore[index]
