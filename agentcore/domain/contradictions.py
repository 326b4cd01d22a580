"""Contradictions between memories returned together (issue 5 item 6, FR-5.4). Pure and
precise rather than broad: a paraphrase or two different facts about one subject must not be
flagged, so two clauses (never questions) contradict only when they say nearly the same thing
and differ in exactly one way:

- **negation**: opposite polarity (an odd versus even count of "not", "never", "no"...) over
  the same numbers and nearly the same content words (a fifth of them may differ, rounded
  down): "Jo likes tea" / "Jo does not like tea" (a leading "No," and a tag question such as
  "..., don't they" negate nothing);
- **number**: the same content words (three, or two with a proper name) with different
  numbers: "the meeting is at 3pm on Friday" / "... at 5pm on Friday", "Jo has 2 kids" /
  "Jo has 3 kids";
- **value**: the same content words but one on each side, where the shared words name a
  single-valued attribute: a favourite, a name, a birthday, an address... (with three shared
  words, or proper names as values: "Jo's favorite color is blue" / "red"), or a residence
  or employer whose values are both proper names ("Jo lives in Paris" / "Jo lives in
  Berlin", "works at Acme" / "works at Initech").

Words are compared as ``fact_text.terms`` does: lowercase, crudely stemmed, stopwords
removed. Of two contradicting memories the **preferred** one is the one of the more
specific scope (DESIGN §1 precedence), else the more recently updated one; the other is
**superseded** by it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from agentcore.domain.fact_text import Terms, split_clauses, split_sentences, stem, terms, tokens
from agentcore.domain.models import Memory

SCAN_CHARS = 2_000  # the part of each memory compared; long documents are not facts
# Words a negated clause may differ by: a fifth of both clauses' words, rounded down (none
# for short clauses: "keep going" / "don't stop dreaming, keep going" say different things).
NEGATION_SLACK = 0.2


def _stems(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


_LEADING_NO = re.compile(r"^\s*(?:no|nope|nah)\s*[,.!…-]+\s*", re.IGNORECASE)
# A tag question asks for agreement and negates nothing: "they bring joy, don't they".
_TAG_QUESTION = re.compile(
    r",?\s*\b(?:do|does|did|is|are|was|were|wo|ca|have|has|had|would|should|could)n['’]t\s+"
    r"(?:i|you|he|she|it|we|they|there|that)\s*[.!?…]*\s*$",
    re.IGNORECASE,
)
# Inflections of words ``terms`` drops as stopwords: "likes" must compare like "like".
_STOPWORD_FORMS = re.compile(r"\b(?:lik(?:es|ed|ing)|get(?:s|ting))\b", re.IGNORECASE)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)?\b")
# Attributes with one value at a time: any different value contradicts.
_SINGLE_VALUED = _stems(
    "favorite favourite name birthday born address email phone nationality occupation "
    "job title capital hometown"
)
# Residence, employer, partner: a contradiction only between two proper names.
_NAMED_VALUED = _stems(
    "live lives living reside resides based located moved works working employed married "
    "wife husband partner boss manager"
)


@dataclass(frozen=True, slots=True)
class Clause:
    terms: Terms
    names: frozenset[str]  # stems of its capitalized content words (proper names, mostly)


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Memories ``first`` and ``second`` (ids) contradict; ``kind``: negation, number, value."""

    first: str
    second: str
    kind: str


def clauses(text: str) -> tuple[Clause, ...]:
    """The comparable clauses of ``text``: statements with at least two content words."""
    return _clauses(text[:SCAN_CHARS])


@lru_cache(maxsize=16_384)  # the same memories come back search after search (~1 KB each)
def _clauses(text: str) -> tuple[Clause, ...]:
    out: list[Clause] = []
    for sentence in split_sentences(text):
        if sentence.rstrip(" \"')]").endswith("?"):
            continue
        sentence = _LEADING_NO.sub("", _TAG_QUESTION.sub("", sentence))
        for clause in split_clauses(sentence):
            t = _terms(clause)
            if len(t.words) < 2:
                continue
            names = frozenset(stem(name.lower()) for name in _NAME.findall(clause))
            out.append(Clause(t, names & t.words))
    return tuple(out)


def _terms(clause: str) -> Terms:
    """``fact_text.terms`` of the clause, word by word (each word's terms cached)."""
    words, numbers, negations = set(), set(), 0
    for token in tokens(clause):
        kind, value = _word(token)
        if kind == "word":
            words.add(value)
        elif kind == "number":
            numbers.add(value)
        elif kind == "negation":
            negations += 1
    return Terms(frozenset(words), frozenset(numbers), negations)


@lru_cache(maxsize=65_536)
def _word(token: str) -> tuple[str, str]:
    if _STOPWORD_FORMS.fullmatch(token):
        return "", ""
    t = terms(token)
    if t.negations:
        return "negation", ""
    if t.numbers:
        return "number", next(iter(t.numbers))
    if t.words:
        return "word", next(iter(t.words))
    return "", ""


def clause_conflict(a: Clause, b: Clause) -> str | None:
    """The kind of contradiction between two clauses, or None (see the module doc)."""
    x, y = a.terms, b.terms
    shared = x.words & y.words
    if len(shared) < 2:
        return None
    only_x, only_y = x.words - y.words, y.words - x.words
    if x.negations % 2 != y.negations % 2:
        slack = int(NEGATION_SLACK * len(x.words | y.words))
        aligned = len(only_x) + len(only_y) <= slack
        return "negation" if aligned and x.numbers == y.numbers else None
    if only_x or only_y:
        if len(only_x) != 1 or len(only_y) != 1 or x.numbers != y.numbers:
            return None
        named_values = only_x <= a.names and only_y <= b.names
        if shared & _SINGLE_VALUED and (len(shared) >= 3 or named_values):
            return "value"
        if shared & _NAMED_VALUED and named_values:
            return "value"
        return None
    # Two words and a number rarely pin a subject ("he is 8 years old" / "she is 5 years
    # old"): a third shared word or a shared name must.
    pinned = len(shared) >= 3 or bool(shared & (a.names | b.names))
    if x.numbers and y.numbers and x.numbers != y.numbers and pinned:
        return "number"
    return None


def text_conflict(a: Sequence[Clause], b: Sequence[Clause]) -> str | None:
    for left in a:
        for right in b:
            kind = clause_conflict(left, right)
            if kind is not None:
                return kind
    return None


def find_contradictions(memories: Sequence[Memory]) -> list[Contradiction]:
    """Every contradicting pair among ``memories``, in their order. Two clauses conflict only
    if they share two content words, so only memories sharing two words are compared (a
    speaker's name alone, which every turn of a conversation holds, pairs nothing)."""
    parsed = [clauses(m.content) for m in memories]
    by_word: dict[str, list[int]] = {}
    for index, found in enumerate(parsed):
        for word in {word for clause in found for word in clause.terms.words}:
            by_word.setdefault(word, []).append(index)
    shared: dict[tuple[int, int], int] = {}
    for holders in by_word.values():
        for at, i in enumerate(holders):
            for j in holders[at + 1 :]:
                shared[i, j] = shared.get((i, j), 0) + 1
    pairs: list[Contradiction] = []
    for i, j in sorted(pair for pair, count in shared.items() if count >= 2):
        first, second = memories[i], memories[j]
        if first.id == second.id or first.content == second.content:
            continue
        kind = text_conflict(parsed[i], parsed[j])
        if kind is not None:
            pairs.append(Contradiction(first.id, second.id, kind))
    return pairs


def preferred(a: Memory, b: Memory) -> Memory:
    """The one to believe: the more specific scope, else the newer update (then creation,
    then id, so the choice never depends on the order of the arguments)."""

    def rank(m: Memory) -> tuple[int, float, float, str]:
        return (-m.scope_level.precedence, m.updated_at.timestamp(), m.created_at.timestamp(), m.id)

    return a if rank(a) >= rank(b) else b


@dataclass(frozen=True, slots=True)
class Resolution:
    contradicts: dict[str, list[str]]  # id → ids it contradicts
    superseded_by: dict[str, str]  # id → an id preferred over it (the first pair found)


def resolve(memories: Sequence[Memory]) -> Resolution:
    """Which memories contradict which, and which are superseded, for memories in rank order."""
    by_id = {m.id: m for m in memories}
    contradicts: dict[str, list[str]] = {}
    superseded_by: dict[str, str] = {}
    for pair in find_contradictions(memories):
        contradicts.setdefault(pair.first, []).append(pair.second)
        contradicts.setdefault(pair.second, []).append(pair.first)
        winner = preferred(by_id[pair.first], by_id[pair.second])
        loser = pair.second if winner.id == pair.first else pair.first
        superseded_by.setdefault(loser, winner.id)
    return Resolution(contradicts, superseded_by)


T = TypeVar("T")


def superseded_last(
    items: Sequence[T], id_of: Callable[[T], str], superseded_by: dict[str, str]
) -> list[T]:
    """``items`` in their order, except that a superseded item comes right after the item
    preferred over it (and after everything that item itself moves along)."""
    present = {id_of(item) for item in items}
    waiting: dict[str, list[T]] = {}
    emitted: set[str] = set()
    out: list[T] = []

    def emit(item: T) -> None:
        out.append(item)
        emitted.add(id_of(item))
        for follower in waiting.pop(id_of(item), []):
            emit(follower)

    for item in items:
        winner = superseded_by.get(id_of(item))
        if winner is not None and winner in present and winner not in emitted:
            waiting.setdefault(winner, []).append(item)
        else:
            emit(item)
    for followers in waiting.values():  # unreachable while preference is a strict order
        out.extend(followers)
    return out
