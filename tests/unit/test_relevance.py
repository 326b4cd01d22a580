"""The features a ranking model reads of each candidate, and the learned relevance over a
small hand-written tree ensemble."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentcore.adapters.rankers.learned import RERANKED, LearnedRelevance
from agentcore.domain.errors import ConfigurationError
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory, build_memory
from agentcore.services.relevance import FEATURES, Candidate, Query, features, query_names

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _candidate(
    text: str,
    *,
    minutes: int = 0,
    session: str | None = "s1",
    speaker: str | None = None,
    fused: float = 0.5,
    dense_rank: int | None = 1,
    lexical_rank: int | None = None,
    bm25: float = 0.0,
) -> Candidate:
    memory = build_memory(
        NewMemory(
            text,
            ScopeIds(user_id="u", session_id=session),
            metadata={} if speaker is None else {"speaker": speaker},
        ),
        T0 + timedelta(minutes=minutes),
        1000,
        "model",
    )
    return Candidate(memory, 0.6, 0.6, bm25, 0.5, dense_rank, lexical_rank, fused)


def _column(matrix: object, name: str) -> list[float]:
    return [float(v) for v in matrix[:, FEATURES.index(name)]]  # type: ignore[index]


def test_features_read_what_the_query_asks_and_what_each_candidate_says() -> None:
    query = Query("When did Caroline go to the support group?", 7, 30)
    candidates = [
        _candidate("Caroline: I went to a support group yesterday.", speaker="Caroline"),
        _candidate("Melanie: How was it?", minutes=1, speaker="Melanie", fused=0.2),
        _candidate("Melanie: I ran 5 km.", minutes=2, session="s2", lexical_rank=3, bm25=2.0),
    ]
    rows = features(query, candidates)
    assert rows.shape == (3, len(FEATURES))
    assert _column(rows, "speaker_named") == [1.0, 0.0, 0.0]
    assert _column(rows, "question") == [0.0, 1.0, 0.0]
    assert _column(rows, "time_said") == [1.0, 0.0, 0.0]
    assert _column(rows, "number_said") == [0.0, 0.0, 1.0]
    assert _column(rows, "newest") == [0.0, 0.5, 1.0]
    assert _column(rows, "asks_when") == [1.0] * 3
    assert _column(rows, "asks_who") == [0.0] * 3
    assert _column(rows, "lexical") == [0.0, 0.0, 1.0]  # the best BM25 of the candidates
    assert _column(rows, "lexical_rank")[2] == 2.0  # log2(1 + 3)
    assert (
        _column(rows, "lexical_rank")[0] == _column(rows, "lexical_rank")[1]
    )  # absent: past the end
    # s1 holds two candidates: each supports the other
    assert _column(rows, "session_support") == pytest.approx([0.2, 0.5, 0.0])
    assert features(query, []).shape == (0, len(FEATURES))


def test_query_names_leave_out_question_words_and_its_first_word() -> None:
    assert query_names("What did Caroline research in Paris?") == ["caroline", "paris"]
    assert query_names("Is Melanie's dog called Oscar?") == ["melanie", "oscar"]


def _model(**extra: object) -> dict[str, object]:
    # one tree of depth 1 on "speaker_named": 2 when named, -2 when not
    return {
        "version": "test",
        "embedder": "model",
        "features": ["speaker_named", "dense"],
        "calibration": [1.0, 0.0],
        "spread": 8.0,
        "reference": 0.5,
        "depth": 1,
        "feature": [[0]],
        "threshold": [[0.5]],
        "leaves": [[-2.0, 2.0]],
        **extra,
    }


def test_the_learned_relevance_orders_and_the_fusion_says_how_well_the_query_is_matched() -> None:
    ranker = LearnedRelevance(_model())
    query = Query("What does Caroline like?", 3, 30)
    candidates = [
        _candidate("Caroline: I like tea", speaker="Caroline", fused=0.4),
        _candidate("Mel: I like tea", speaker="Mel", fused=0.7),
    ]
    named, other = ranker.score(query, candidates)
    # the model prefers the turn of the person asked about; the best fused value (0.7) is
    # above the reference (0.5): level 1; the other is 4 log-odds below, of a spread of 8
    assert named == pytest.approx(1.0)
    assert other == pytest.approx(1 - 4 / 8)
    far = LearnedRelevance(_model(leaves=[[-20.0, 0.0]]))
    assert far.score(query, candidates) == pytest.approx([1.0, 0.0])  # beyond the spread
    # a query the fusion matches poorly (best fused 0.2 of a reference 0.5) stays low
    weak = [
        _candidate(c.memory.content, speaker=c.memory.metadata["speaker"], fused=0.2)
        for c in candidates
    ]
    assert ranker.score(query, weak) == pytest.approx([0.4, 0.4 * (1 - 4 / 8)])
    assert ranker.score(query, []) == []
    assert ranker.name == "learned:test"
    (why_named, why_other) = ranker.explain(query, candidates)
    assert why_named == {"base": 0.0, "speaker_named": 2.0}
    assert why_other == {"base": 0.0, "speaker_named": -2.0}


def test_the_model_ranks_the_fusions_best_and_the_rest_follow_in_the_fusions_order() -> None:
    ranker = LearnedRelevance(_model())
    query = Query("What does Caroline like?", 3, 30)
    # Mel's turns first by the fusion; the model prefers Caroline's, but her lowest one is
    # beyond the fusion's best RERANKED and keeps the fusion's place
    candidates = [
        _candidate(f"Mel: turn {n}", speaker="Mel", session=f"m{n}", fused=0.9 - n / 100)
        for n in range(RERANKED - 1)
    ] + [
        _candidate("Caroline: I like tea", speaker="Caroline", session="c1", fused=0.5),
        _candidate("Caroline: I like cake", speaker="Caroline", session="c2", fused=0.1),
    ]
    values = ranker.score(query, candidates)
    assert values[RERANKED - 1] == pytest.approx(1.0)  # ranked by the model: first
    chosen = values[:RERANKED]
    assert values[-1] < min(chosen)  # not ranked by the model: below every ranked one
    assert values[-1] > 0
    why = ranker.explain(query, candidates)
    assert "speaker_named" in why[RERANKED - 1]
    assert set(why[-1]) == {"dense", "lexical", "session"}  # the fusion placed it


def test_a_model_of_unknown_features_or_broken_arrays_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="features this service does not compute"):
        LearnedRelevance(_model(features=["speaker_named", "shoe_size"]))
    with pytest.raises(ConfigurationError, match="cannot be read"):
        LearnedRelevance(_model(leaves=[[1.0]]))
    with pytest.raises(ConfigurationError, match="cannot be read"):
        LearnedRelevance({k: v for k, v in _model().items() if k != "calibration"})
