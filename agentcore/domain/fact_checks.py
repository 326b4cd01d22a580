"""The checks a compression must pass (FR-3.3), the same for every engine, so a summary is
judged the same way whoever wrote it.

A fact is **retained** by a summary when one summary sentence, or two adjacent ones, hold at
least ``MIN_COVERAGE`` of the fact's content words (lowercase, crudely stemmed, stopwords
removed), every number of the fact exactly, and a negation if the fact has one.

A summary **contradicts** its source when one of its clauses is aligned with source clauses
(they share at least two content words and ``ALIGNMENT`` of the smaller clause's words) and
every aligned source clause has the opposite polarity (an odd versus even count of negations:
"never", "not", "no"...), or states a number none of them states.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentcore.domain.fact_text import Terms, split_clauses, split_sentences, terms

MIN_COVERAGE = 0.8
ALIGNMENT = 0.75


@dataclass(frozen=True, slots=True)
class Contradiction:
    summary_clause: str
    source_clause: str
    kind: str  # "negation" | "number"


def covered(fact: Terms, window: Terms) -> bool:
    """Whether ``window`` (summary text) keeps ``fact`` (see the module doc)."""
    if not fact.numbers <= window.numbers or (fact.negations and not window.negations):
        return False
    if not fact.words:
        return bool(fact.numbers) or fact.negations > 0
    return len(fact.words & window.words) >= MIN_COVERAGE * len(fact.words)


def missing_facts(facts: Sequence[str], summary: str) -> list[str]:
    """The facts (as given) that ``summary`` does not retain."""
    sentences = [terms(s) for s in split_sentences(summary)]
    windows = sentences + [
        Terms(a.words | b.words, a.numbers | b.numbers, a.negations + b.negations)
        for a, b in itertools.pairwise(sentences)
    ]
    return [f for f in facts if not any(covered(terms(f), w) for w in windows)]


def beyond(text: str, facts: Sequence[str]) -> str:
    """``text`` without the sentences one of ``facts`` already says: what a summary adds to
    the facts listed beside it."""
    listed = [terms(f) for f in facts]
    return " ".join(
        s for s in split_sentences(text) if not any(covered(terms(s), f) for f in listed)
    )


def retention(facts: Sequence[str], summary: str) -> float:
    """Share of ``facts`` retained by ``summary``; 1.0 when there are none."""
    if not facts:
        return 1.0
    return 1 - len(missing_facts(facts, summary)) / len(facts)


class SourceIndex:
    """The source clauses of one compression, indexed by word, to check summaries against."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._clauses: list[tuple[str, Terms]] = []
        self._by_word: dict[str, list[int]] = {}
        for text in texts:
            for sentence in split_sentences(text):
                for clause in split_clauses(sentence):
                    t = terms(clause)
                    if len(t.words) < 2:
                        continue
                    for word in t.words:
                        self._by_word.setdefault(word, []).append(len(self._clauses))
                    self._clauses.append((clause, t))

    def contradictions(self, summary: str) -> list[Contradiction]:
        found: list[Contradiction] = []
        for sentence in split_sentences(summary):
            for clause in split_clauses(sentence):
                problem = self._check(clause, terms(clause))
                if problem is not None:
                    found.append(problem)
        return found

    def _check(self, clause: str, t: Terms) -> Contradiction | None:
        if len(t.words) < 2:
            return None
        candidates = {i for word in t.words for i in self._by_word.get(word, ())}
        aligned = []
        for i in sorted(candidates):
            source = self._clauses[i][1]
            shared = len(t.words & source.words)
            if shared >= 2 and shared >= ALIGNMENT * min(len(t.words), len(source.words)):
                aligned.append(i)
        if not aligned:
            return None
        sources = [self._clauses[i][1] for i in aligned]
        first = self._clauses[aligned[0]][0]
        if all(s.negations % 2 != t.negations % 2 for s in sources):
            return Contradiction(clause, first, "negation")
        numbered = [s for s in sources if s.numbers]
        # A changed number is one no aligned source states (a summary line may join two
        # source lines, a log's rows, and carry the numbers of both).
        stated = frozenset().union(*(s.numbers for s in numbered))
        if t.numbers and numbered and not t.numbers <= stated:
            return Contradiction(clause, first, "number")
        return None
