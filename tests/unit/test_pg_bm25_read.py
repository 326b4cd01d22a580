"""How PostgreSQL's lexical search reads a question's postings (``QueryWeights.essential``):
every posting, the rarer lexemes' postings with the frequent ones probed (MaxScore), or each
lexeme's best postings by impact; and what each lexeme can add to a score."""

from __future__ import annotations

import pytest

from agentcore.adapters.db.lexical.postgres import IMPACT_LENGTH, QueryWeights, bm25_read

PREFETCH = 120


def _weights(
    holding: list[int], weights: list[float], most: float = 1.0, length: float = IMPACT_LENGTH
) -> QueryWeights:
    lexemes = [f"l{i}" for i in range(len(holding))]
    return QueryWeights(lexemes, weights, weights, length, holding, [most] * len(holding))


def test_a_question_whose_lexemes_are_few_reads_every_posting() -> None:
    weights = _weights([50, 60, 400], [9.0, 8.5, 6.0])
    assert weights.essential(PREFETCH) == 3
    whole, params = bm25_read(weights, ["user:a"], PREFETCH)
    assert whole
    assert params["lexemes"] == ["l0", "l1", "l2"]


def test_a_rare_lexeme_is_read_whole_and_a_frequent_one_probed() -> None:
    """ "john" in a third of 100,000 documents adds at most 1.1; the rare lexeme's best 120
    score about half its bound of 9 or more, so only its 300 documents are scored in full."""
    weights = _weights([35_000, 300], [1.1, 9.0])
    assert weights.by_bound() == [1, 0]
    assert weights.essential(PREFETCH) == 1
    whole, params = bm25_read(weights, ["user:a", "user:a"], PREFETCH)
    assert not whole
    assert params["read_lexemes"] == ["l1"]
    assert params["lexemes"] == ["l0"]
    assert params["probed_bound"] == pytest.approx(1.1)
    assert params["keys"] == ["user:a"]


def test_frequent_lexemes_of_like_weight_take_the_impact_read() -> None:
    """No lexeme's documents are expected to score above what the others can add."""
    weights = _weights([20_000, 30_000, 25_000], [3.0, 2.5, 2.8])
    assert weights.essential(PREFETCH) == 0
    whole, params = bm25_read(weights, ["user:a"], PREFETCH)
    assert not whole
    assert params["read_lexemes"] == []
    assert params["probed_bound"] == pytest.approx(8.3)
    assert params["per_lexeme"] == 2 * PREFETCH


def test_a_rare_lexeme_of_fewer_documents_than_wanted_is_still_read_whole() -> None:
    """80 documents of the rare lexeme: the 120th best of them scores 0, so the frequent
    lexeme's best postings by impact are read as candidates too; its 80 are still read whole
    rather than found by impact and probed for it."""
    weights = _weights([35_000, 80], [1.1, 9.0])
    assert weights.essential(PREFETCH) == 1


def test_frequent_lexemes_alone_read_every_posting_when_that_is_cheaper() -> None:
    weights = _weights([900, 1_000], [3.0, 2.8])
    assert weights.essential(PREFETCH) == 2


def test_a_lexeme_no_document_holds_is_neither_read_nor_probed() -> None:
    weights = _weights([35_000, 300, 0], [1.1, 9.0, 12.0])
    assert weights.by_bound() == [1, 0]
    _, params = bm25_read(weights, ["user:a"], PREFETCH)
    assert "l2" not in params["lexemes"] + params["read_lexemes"]


def test_a_bound_grows_with_the_mean_length_past_the_impacts() -> None:
    """An impact is a weight against a mean of 32 lexemes; against a longer mean the same
    posting weighs up to that many times more, against a shorter one no more."""
    assert _weights([10], [2.0], most=1.5).bounds == [pytest.approx(3.0)]
    longer = _weights([10], [2.0], most=1.5, length=2 * IMPACT_LENGTH)
    assert longer.bounds == [pytest.approx(6.0)]
    shorter = _weights([10], [2.0], most=1.5, length=IMPACT_LENGTH / 2)
    assert shorter.bounds == [pytest.approx(3.0)]
