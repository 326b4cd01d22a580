"""Candidate generation: the fusion of dense and lexical scores, the episode blend, and the
generator over fakes (a word-overlap lexical index stands in for BM25)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory, build_memory
from agentcore.services.candidates import (
    CandidateGenerator,
    Fusion,
    Lookup,
    calibrated,
    floor_of,
    fuse,
    lexical_scores,
    without_words,
)
from agentcore.services.ports import ListQuery, VectorFilter, VectorHit, Vectors
from agentcore.services.relevance import Candidate, FusedRelevance, Query
from tests.fakes import FakeEmbedder, FakeStore
from tests.unit.conftest import Services

_WORD = re.compile(r"\w+")


class WordOverlapIndex:
    """Lexical fake: the number of query words in the memory, over the fake store's rows."""

    def __init__(self, store: FakeStore) -> None:
        self._store = store
        self.calls = 0

    async def search(self, query: str, flt: VectorFilter, limit: int) -> list[VectorHit]:
        self.calls += 1
        words = set(_WORD.findall(query.lower()))
        async with self._store(read_only=True) as uow:
            memories, _ = await uow.memories.page(_all(flt))
        hits = []
        for memory in memories:
            score = len(words & set(_WORD.findall(memory.content.lower())))
            if score:
                hits.append(VectorHit(memory.id, float(score)))
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    async def lookup(self, query: str, flt: VectorFilter, memory_ids: Sequence[str]) -> Lookup:
        words = set(_WORD.findall(query.lower()))
        async with self._store(read_only=True) as uow:
            memories = await uow.memories.get_many(memory_ids)
        shares = {m.id: len(words & set(_WORD.findall(m.content.lower()))) for m in memories}
        return Lookup(memories, {i: n / len(words) for i, n in shares.items() if n})


def _all(flt: VectorFilter) -> ListQuery:
    return ListQuery(scope_keys=flt.scope_keys, limit=10_000)


def test_cosines_are_rescaled_from_the_models_background_to_one() -> None:
    assert calibrated(0.735, 0.735) == 0.0
    assert calibrated(0.6, 0.735) == 0.0  # below the background: nothing in common
    assert calibrated(1.0, 0.735) == 1.0
    assert abs(calibrated(0.8675, 0.735) - 0.5) < 1e-9
    assert calibrated(0.42, 0.0) == 0.42  # a model without a background: clipped only
    assert calibrated(-0.2, 0.0) == 0.0


def test_words_naming_the_scopes_owner_are_left_out() -> None:
    assert without_words("What can Alice not eat?", ["alice"]).split() == [
        "What",
        "can",
        "not",
        "eat?",
    ]
    assert without_words("Alicevision and Alice's tea", ["alice"]).split() == [
        "Alicevision",
        "and",
        "'s",
        "tea",
    ]
    assert without_words("plans of ana-lu", ["ana-lu"]).split() == ["plans", "of", "-"]
    assert without_words("unchanged", []) == "unchanged"


def test_fuse_blends_clipped_cosine_with_bm25_relative_to_the_best() -> None:
    fused = fuse({"a": 0.8, "b": 1.2, "c": -0.3}, {"a": 2.0, "d": 8.0}, 0.4)
    assert fused["a"] == pytest.approx(0.4 * 0.8 + 0.6 * 0.25)
    assert fused["b"] == pytest.approx(0.4 * 1.0)  # cosine clipped to 1, no lexical match
    assert fused["c"] == pytest.approx(0.0)  # negative cosine counts as 0
    assert fused["d"] == pytest.approx(0.6)  # the best lexical hit, no dense hit
    assert all(0.0 <= v <= 1.0 for v in fused.values())


def test_coverage_scales_the_lexical_part() -> None:
    fused = fuse({"a": 0.5, "b": 0.5}, {"a": 4.0, "b": 4.0}, 0.4, coverage={"a": 0.5})
    assert fused["a"] == pytest.approx(0.4 * 0.5 + 0.6 * 0.5)
    assert fused["b"] == pytest.approx(0.4 * 0.5)  # holds none of the query's terms


def test_a_missing_side_takes_its_floor() -> None:
    fused = fuse({"a": 0.5}, {"b": 4.0}, 0.5, dense_floor=0.3, lexical_floor=1.0)
    assert fused["a"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.25)
    assert fused["b"] == pytest.approx(0.5 * 0.3 + 0.5 * 1.0)


def test_with_one_side_empty_the_other_decides_alone() -> None:
    assert fuse({"a": 0.7, "b": 0.2}, {}, 0.4) == pytest.approx({"a": 0.7, "b": 0.2})
    assert fuse({}, {"a": 3.0, "b": 1.5}, 0.4) == pytest.approx({"a": 1.0, "b": 0.5})
    assert fuse({}, {}, 0.4) == {}


def test_the_floor_is_the_last_score_of_a_full_list_only() -> None:
    hits = [VectorHit("a", 0.9), VectorHit("b", 0.6)]
    assert floor_of(hits, 2) == 0.6
    assert floor_of(hits, 3) == 0.0
    assert floor_of([], 1) == 0.0


def test_lexical_scores_are_the_hits_or_every_candidates_own_bm25() -> None:
    hits = [VectorHit("a", 9.0), VectorHit("b", 4.0)]
    assert lexical_scores(hits, None, 2) == ({"a": 9.0, "b": 4.0}, 4.0)  # floor: full list
    assert lexical_scores(hits, None, 3) == ({"a": 9.0, "b": 4.0}, 0.0)
    # Found by rarer terms: the whole query's BM25 rescores the hits ("b" falls to 2), and a
    # dense candidate above the least of them ("c") is scored as a full search would have.
    bm25 = {"a": 9.5, "b": 2.0, "c": 3.0, "d": 1.0}
    assert lexical_scores(hits, bm25, 2) == ({"a": 9.5, "b": 2.0, "c": 3.0}, 2.0)
    assert lexical_scores(hits, bm25, 3) == (bm25, 0.0)  # not full: nothing is missing
    assert lexical_scores([], {}, 2) == ({}, 0.0)


def _candidate(memory_id: str, session: str | None, fused: float) -> Candidate:
    memory = build_memory(
        NewMemory("text", ScopeIds(user_id="u", session_id=session), id=memory_id),
        datetime(2026, 1, 1, tzinfo=UTC),
        100,
        "model",
    )
    return Candidate(memory, 0.0, 0.0, 0.0, 0.0, None, None, fused)


def test_episodes_lift_members_of_strong_episodes() -> None:
    candidates = [
        _candidate("a1", "A", 0.6),
        _candidate("a2", "A", 0.5),
        _candidate("b1", "B", 0.6),
        _candidate("solo", None, 0.6),
    ]
    query = Query("q", 1, 30)
    a1, _, b1, solo = FusedRelevance(episode_weight=0.5, episode_top=2).score(query, candidates)
    # Episode strengths: A = mean(0.6, 0.5) = 0.55, B = 0.6 (best), solo = 0.6.
    assert b1 == pytest.approx((0.6 + 0.5 * 1.0) / 1.5)
    assert a1 == pytest.approx((0.6 + 0.5 * 0.55 / 0.6) / 1.5)
    assert solo == pytest.approx(b1)
    assert a1 < b1
    assert FusedRelevance(episode_weight=0.0).score(query, candidates) == [0.6, 0.5, 0.6, 0.6]


def test_fusion_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="dense_weight"):
        Fusion(dense_weight=1.5)
    with pytest.raises(ValueError, match="pool"):
        Fusion(pool=0)


async def _generator(services: Services, lexical: WordOverlapIndex | None) -> CandidateGenerator:
    return CandidateGenerator(
        services.store,
        services.vectors,
        services.embedder,
        lexical,
        Fusion(),
        relevance=FusedRelevance(episode_weight=0),
    )


def _filter(*keys: str, alive_at: float | None = None) -> VectorFilter:
    return VectorFilter(scope_keys=list(keys), alive_at=alive_at)


async def test_lexical_candidates_join_the_dense_ones(services: Services) -> None:
    alice = ScopeIds(user_id="alice")
    stored = await services.memory.add_batch(
        [NewMemory(f"note number {i} about gardening", alice) for i in range(6)]
        + [NewMemory("Zanzibar trip booked", alice)]
    )
    lexical = WordOverlapIndex(services.store)
    generator = CandidateGenerator(
        services.store,
        services.vectors,
        services.embedder,
        lexical,
        Fusion(pool=2),
        relevance=FusedRelevance(episode_weight=0),
    )
    now = services.clock()
    found = await generator.generate("zanzibar", _filter("user:alice"), 2, None, now)
    assert found[0].memory.id == stored[-1].id
    assert lexical.calls == 1
    assert all(0.0 <= r.relevance <= 1.0 for r in found)
    high = await generator.generate("zanzibar", _filter("user:alice"), 10, 0.5, now)
    assert [r.memory.id for r in high] == [stored[-1].id]


async def test_a_lexical_only_candidate_is_scored_by_its_own_cosine(services: Services) -> None:
    alice = ScopeIds(user_id="alice")
    stored = await services.memory.add_batch(
        [NewMemory(f"note number {i} about gardening", alice) for i in range(4)]
        # two query words among many others: a weak cosine, the best word overlap
        + [NewMemory("Zanzibar trip " + " ".join(f"detail{i}" for i in range(30)), alice)]
    )
    zanzibar = stored[-1]
    await services.memory.indexed()
    generator = CandidateGenerator(
        services.store,
        services.vectors,
        services.embedder,
        WordOverlapIndex(services.store),
        Fusion(pool=1),
        relevance=FusedRelevance(episode_weight=0),
    )
    query = "zanzibar trip gardening"
    vector = (await services.embedder.embed([query]))[0]
    everyone = await services.vectors.search(vector, _filter("user:alice"), 10)
    assert everyone[0].id != zanzibar.id  # the dense side (pool 1) does not return it
    own = next(hit.score for hit in everyone if hit.id == zanzibar.id)
    assert own != everyone[0].score  # its cosine differs from the dense side's floor

    found = await generator.generate(query, _filter("user:alice"), 5, None, services.clock())

    relevance = {r.memory.id: r.relevance for r in found}
    # its own cosine, and the best BM25 times its coverage (2 of the 3 query words)
    assert relevance[zanzibar.id] == pytest.approx(0.4 * min(max(own, 0.0), 1.0) + 0.6 * 2 / 3)


async def test_only_live_memories_of_the_filter_scopes_are_candidates(services: Services) -> None:
    alice, bob = ScopeIds(user_id="alice"), ScopeIds(user_id="bob")
    (kept, expiring) = await services.memory.add_batch(
        [NewMemory("blue kettle", alice), NewMemory("blue kettle soon gone", alice, ttl_seconds=60)]
    )
    await services.memory.add(NewMemory("blue kettle", bob))
    deleted = await services.memory.add(NewMemory("blue kettle deleted", alice))
    services.vectors.failing = True  # the vector delete stays queued: a stale dense hit
    await services.memory.delete(deleted.id, alice)
    services.vectors.failing = False
    generator = await _generator(services, WordOverlapIndex(services.store))

    later = services.clock() + timedelta(seconds=120)
    found = await generator.generate(
        "blue kettle", _filter("user:alice", alive_at=later.timestamp()), 10, None, later
    )
    assert [r.memory.id for r in found] == [kept.id]
    assert expiring.id in services.vectors.points  # still a dense hit, but expired


async def test_without_a_lexical_index_relevance_is_the_clipped_cosine(services: Services) -> None:
    alice = ScopeIds(user_id="alice")
    (memory,) = await services.memory.add_batch([NewMemory("red bicycle in the shed", alice)])
    generator = await _generator(services, None)
    ((found, relevance, _, _),) = await generator.generate(
        "red bicycle in the shed", _filter("user:alice"), 5, None, services.clock()
    )
    assert found.id == memory.id
    assert relevance == pytest.approx(1.0, abs=1e-5)


class QueryCountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries = 0

    async def embed_query(self, text: str) -> Vectors:
        self.queries += 1
        return await super().embed_query(text)


async def test_near_duplicate_checks_embed_the_query_like_a_stored_text(
    services: Services,
) -> None:
    alice = ScopeIds(user_id="alice")
    await services.memory.add_batch([NewMemory("red bicycle in the shed", alice)])
    embedder = QueryCountingEmbedder()
    generator = CandidateGenerator(services.store, services.vectors, embedder, None, Fusion())
    flt, now = _filter("user:alice"), services.clock()
    assert await generator.generate("red bicycle", flt, 5, None, now)
    assert (embedder.queries, embedder.calls) == (1, 1)  # a search: the query path
    assert await generator.generate("red bicycle", flt, 5, None, now, dense_only=True)
    assert (embedder.queries, embedder.calls) == (1, 2)  # a cosine bar: embedded as stored
