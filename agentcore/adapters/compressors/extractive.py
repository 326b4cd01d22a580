"""The extractive compression engine: no model, deterministic, about 60 ms for 100 memories.

1. Every sentence of every item is a candidate, compacted (interjections and filler words
   dropped) and scored: TF-IDF cosine to the whole input (centrality), plus
   ``SPECIFIC_BONUS`` per specific token (numbers, identifiers, names: the details a reader
   asks for), less for questions and near-empty sentences.
2. The critical facts go first (compacted; word for word on the last-resort step), by kind
   priority, within the request's ``max_tokens`` (the upper tolerance of the ratio). Key facts
   (decisions, error fixes, identifiers) are not required: their sentences score
   ``KEY_FACT_BONUS`` more. Facts listed beside the summary (a task brief's constraints)
   are not repeated: their sentences score ``LISTED_FACTOR`` times less.
3. Then the most valuable set of other whole sentences that fits ``budget_tokens`` (a
   knapsack over the best 64, value = score × √content words; greedy by score when the room
   passes 400 tokens), skipping any that repeats a chosen one. If the printed summary is
   still under ``min_tokens``, unused sentences (or their cuts after a clause) are added
   while it stays within ``max_tokens``.
4. The chosen units are printed in chronological order, one line per item, prefixed with the
   item's label (speaker, or stage type) when the items have at least two labels (one
   speaker throughout says nothing worth its tokens).

Insights are the best-scored sentences stating a lesson, a decision or an outcome; error
patterns are errors of one type or normalized message seen at least twice in the items.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from agentcore.domain.critical_facts import ERROR_MARKER, PRIORITY
from agentcore.domain.fact_checks import covered
from agentcore.domain.fact_text import Terms, compact, split_sentences, stem, terms, terse
from agentcore.services.compass.drafts import (
    CompressionItem,
    CompressionRequest,
    Draft,
    ErrorPattern,
    display_labels,
)
from agentcore.services.working_memory import TokenCounter

REDUNDANT = 0.7  # share of the smaller unit's words already in a chosen unit
SPECIFIC_BONUS, SPECIFIC_MAX = 0.2, 3  # per specific token: the details a reader asks for
KEY_FACT_BONUS = 0.3  # added to the score of a sentence that states a key fact
LISTED_FACTOR = 0.2  # the score of a sentence stating a fact that is listed beside the summary
_CANDIDATES = 64  # best-scored sentences considered for the summary
_EXACT_FILL_TOKENS = 400  # up to this room, pick the best set that fits (knapsack), else greedy
_INSIGHT = re.compile(
    r"\b(?:learn(?:ed|t)|lessons?|reali[sz]ed?|insights?|takeaway|turn(?:s|ed) out|noticed that|"
    r"found (?:out|that)|discovered|the key (?:is|was)|the trick|next time|should have|"
    r"worked (?:well|because)|(?:did not|didn't) work|resulted in|outcome|succeeded|decided|"
    r"figured out)\b",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception))\b")
_HTTP = re.compile(r"\b(?:HTTP|status(?: code)?)\s*([1-5]\d\d)\b", re.IGNORECASE)
_VOLATILE = re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{8,}(?:-[0-9a-f]{4,})*\b|\d+|'[^']*'|\"[^\"]*\"")
_BOUNDARY = re.compile(r"\s*(?:[,;:]|\s[-–—])\s+|\s+(?=(?:and|so|because|which|where)\s)")
_QUALIFIER = re.compile(
    r"(?i)(?:if|unless|until|except|but|though|although|however|yet|by|within|before|after|"
    r"no later than|only)\b"
)
_EVALUATIVE_WORDS = (
    "great good awesome amazing cool nice glad happy wonderful fantastic lovely beautiful "
    "incredible interesting exciting excited fun proud sorry sure true thank thanks hope "
    "wish agree appreciate sound sounds feel feeling stuff"
)
_EVALUATIVE = frozenset(stem(w) for w in _EVALUATIVE_WORDS.split())
_NAME = re.compile(r"(?<=\w[\s,])[A-Z][a-z]+")
# What makes a sentence specific: numbers, identifiers (paths, hosts, versions, snake_case,
# CamelCase, ticket keys) and names that are not the first word.
_SPECIFIC = re.compile(
    r"\d[\d.,:%]*|\b\w+(?:[_/.:-]\w+)+\b|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]+[A-Z]\w*"
    r"|(?<=\w[\s,])[A-Z][a-z]+"
)


def _specifics(text: str) -> int:
    """How many specific tokens (``_SPECIFIC``) the text holds, each counted once."""
    return len(set(_SPECIFIC.findall(text)))


@dataclass
class _Unit:
    item: int
    order: int  # sentence index, or 10_000+ for a fact placed after its item's sentences
    text: str
    terms: Terms
    score: float
    fact_rank: int | None = None  # the kind priority when the unit is a critical fact


class ExtractiveEngine:
    """``CompressionEngine`` without a model (module doc)."""

    def __init__(
        self, tokens: TokenCounter, *, max_insights: int = 5, min_error_occurrences: int = 2
    ) -> None:
        self._tokens = tokens
        self._max_insights = max_insights
        self._min_errors = min_error_occurrences

    @property
    def name(self) -> str:
        return "extractive"

    async def draft(self, request: CompressionRequest) -> Draft:
        return self.compose(request)

    def compose(self, request: CompressionRequest) -> Draft:
        """The draft, synchronously (CPU only)."""
        units = _score(_sentence_units(request.items))
        key = {fact.position for fact in request.key_facts}
        listed = [terms(fact.content) for fact in request.listed_facts]
        for unit in units:
            if (unit.item, unit.order) in key:  # decisions, fixes and identifiers win
                unit.score += KEY_FACT_BONUS
            if any(covered(fact, unit.terms) for fact in listed):  # said beside the summary
                unit.score *= LISTED_FACTOR
        labels = display_labels(request.items)
        chosen, candidates = self._select(request, labels, units, _fact_units(request))
        self._trim(request, labels, chosen)
        summary = self._top_up(request, labels, chosen, candidates)
        if self._tokens.count(summary) < request.min_tokens:
            # Repetitive input (a loop's log lines) runs out of new sentences: the variants
            # (other numbers, other names) fill the budget rather than leave it unused.
            variants = sorted(units, key=lambda u: -u.score)
            summary = self._top_up(request, labels, chosen, variants, allow_repeats=True)
        return Draft(
            summary=summary,
            insights=self._insights(units),
            error_patterns=tuple(_error_patterns(request.items, self._min_errors)),
        )

    def _select(
        self,
        request: CompressionRequest,
        labels: list[str | None],
        units: list[_Unit],
        facts: list[_Unit],
    ) -> tuple[list[_Unit], list[_Unit]]:
        """The units of the summary (facts first, then the best sentences for the budget), and
        the candidate sentences considered, best first."""
        chosen: list[_Unit] = []
        labelled: set[int] = set()
        used = 0

        def cost(unit: _Unit) -> int:
            label = labels[unit.item] if unit.item < len(labels) else None
            # Separators cost nothing: ".\n" and " I" are single tokens in o200k.
            prefix = self._tokens.count(f"{label}:") if label and unit.item not in labelled else 0
            return self._tokens.count(unit.text) + prefix

        def take(unit: _Unit, price: int) -> None:
            nonlocal used
            chosen.append(unit)
            labelled.add(unit.item)
            used += price

        for fact in sorted(facts, key=lambda u: (u.fact_rank, u.item, u.order)):
            price = cost(fact)
            if request.verbatim_facts or used + price <= request.max_tokens:
                take(fact, price)
        candidates: list[_Unit] = []
        for unit in sorted(units, key=lambda u: -u.score):
            if len(candidates) < _CANDIDATES and not _repeats(unit, [*chosen, *candidates]):
                candidates.append(unit)
        room = request.budget_tokens - used
        if room <= _EXACT_FILL_TOKENS:
            # Whole sentences (a cut loses what it drops): the most valuable set that fits.
            options = [[(cost(unit), _value(unit))] for unit in candidates]
            for g, _ in _knapsack(options, room):
                take(candidates[g], cost(candidates[g]))
        else:  # big budgets: sentence granularity is fine, greedy by score
            for unit in candidates:
                if used + cost(unit) <= request.budget_tokens:
                    take(unit, cost(unit))
        taken = {(u.item, u.order) for u in chosen}
        for unit in candidates:  # one more sentence when it lands nearer the budget
            price = cost(unit)
            nearer = abs(used + price - request.budget_tokens) < request.budget_tokens - used
            if (
                nearer
                and used + price <= request.max_tokens
                and (unit.item, unit.order) not in taken
            ):
                take(unit, price)
        return chosen, candidates

    def _cuts(self, unit: _Unit) -> list[_Unit]:
        """The unit cut at each clause boundary, longest first, with "…"; never before a
        clause that qualifies or contrasts ("unless...", "by Friday", "but...") or that a
        colon introduces, nor dropping a negation or a number, nor leaving fewer than three
        content words."""
        cuts = []
        for boundary in reversed(list(_BOUNDARY.finditer(unit.text))):
            rest = unit.text[boundary.end() :]
            if boundary.group().strip() == ":" or _QUALIFIER.match(rest):
                continue  # what a colon introduces is the point of the sentence
            dropped = terms(rest)
            if dropped.negations or dropped.numbers:
                continue  # counts, sizes and times are the details worth keeping
            cut = unit.text[: boundary.start()].rstrip(" ,;:-–—") + "…"
            kept = terms(cut)
            if len(kept.words) >= 3:
                cuts.append(_Unit(unit.item, unit.order, cut, kept, unit.score))
        return cuts

    def _top_up(
        self,
        request: CompressionRequest,
        labels: list[str | None],
        chosen: list[_Unit],
        candidates: list[_Unit],
        *,
        allow_repeats: bool = False,
    ) -> str:
        """The printed summary; when its exact count is under ``min_tokens``, the best unused
        sentences (or their cuts) that keep it within ``max_tokens`` are added: sentences that
        repeat a chosen one only with ``allow_repeats``, and never the same text twice."""
        summary = _render(labels, chosen)
        size = self._tokens.count(summary)
        taken = {(u.item, u.order) for u in chosen}
        texts = {u.text for u in chosen}
        for unit in candidates:
            if size >= request.min_tokens:
                break
            if (unit.item, unit.order) in taken or unit.text in texts:
                continue
            if not allow_repeats and _repeats(unit, chosen):
                continue
            for option in [unit, *self._cuts(unit)]:
                trial = _render(labels, [*chosen, option])
                if self._tokens.count(trial) <= request.max_tokens:
                    chosen.append(option)
                    texts.add(option.text)
                    summary, size = trial, self._tokens.count(trial)
                    break
        return summary

    def _trim(
        self, request: CompressionRequest, labels: list[str | None], chosen: list[_Unit]
    ) -> None:
        """Drops the weakest non-fact units while the printed summary is over ``max_tokens``
        (a unit's estimated cost can be off by a token from the printed count)."""
        while self._tokens.count(_render(labels, chosen)) > request.max_tokens:
            others = [u for u in chosen if u.fact_rank is None]
            if not others:
                return
            chosen.remove(min(others, key=lambda u: u.score))

    def _insights(self, units: list[_Unit]) -> tuple[str, ...]:
        found = [u for u in units if _INSIGHT.search(u.text) and not u.text.endswith("?")]
        best: list[_Unit] = []
        for unit in sorted(found, key=lambda u: -u.score):
            if len(best) < self._max_insights and not _repeats(unit, best):
                best.append(unit)
        return tuple(_sentence(u.text) for u in sorted(best, key=lambda u: (u.item, u.order)))


def _render(labels: list[str | None], chosen: list[_Unit]) -> str:
    lines: list[str] = []
    current: int | None = None
    for unit in sorted(chosen, key=lambda u: (u.item, u.order)):
        text = _sentence(unit.text)
        if unit.item == current:
            lines[-1] += f" {text}"
            continue
        current = unit.item
        label = labels[unit.item] if unit.item < len(labels) else None
        lines.append(f"{label}: {text}" if label else text)
    return "\n".join(lines)


def _sentence_units(items: Sequence[CompressionItem]) -> list[_Unit]:
    units = []
    for i, item in enumerate(items):
        for j, sentence in enumerate(split_sentences(item.content)):
            text = compact(sentence)
            content = terms(text)
            if len(content.words) + len(content.numbers) >= 2:  # "Melanie!" says nothing
                units.append(_Unit(i, j, text, content, 0.0))
    return units


def _fact_units(request: CompressionRequest) -> list[_Unit]:
    units = []
    for fact in request.critical_facts:
        text = fact.content.strip() if request.verbatim_facts else terse(fact.content)
        text = text or fact.content.strip()
        item, order = fact.position
        units.append(_Unit(item, order, text, terms(text), 1.0, PRIORITY.index(fact.kind)))
    return units


def _score(units: list[_Unit]) -> list[_Unit]:
    """Centrality: cosine of each unit's binary word vector, IDF-weighted, to the input's word
    counts, evaluative and phatic words ("great", "thanks") left out as they state no fact;
    plus ``SPECIFIC_BONUS`` per specific token (``SPECIFIC_MAX`` at most); questions ×0.6;
    units with fewer than three content words ×0.5. Normalized so the best is about 1."""
    if not units:
        return units
    df = Counter(w for u in units for w in u.terms.words if w not in _EVALUATIVE)
    idf = {w: math.log(1 + len(units) / n) for w, n in df.items()}
    centroid = {w: df[w] * idf[w] for w in df}
    raw = []
    for unit in units:
        words = unit.terms.words - _EVALUATIVE
        norm = math.sqrt(sum(idf[w] ** 2 for w in words)) or 1.0
        raw.append(sum(idf[w] * centroid[w] for w in words) / norm)
    top = max(raw) or 1.0
    for unit, value in zip(units, raw, strict=True):
        score = value / top
        score += SPECIFIC_BONUS * min(_specifics(unit.text), SPECIFIC_MAX)
        if unit.text.endswith("?"):
            score *= 0.6
        if len(unit.terms.words) < 3:
            score *= 0.5
        unit.score = score
    return units


def _value(unit: _Unit) -> float:
    return unit.score * math.sqrt(len(unit.terms.words))


def _knapsack(groups: list[list[tuple[int, float]]], capacity: int) -> list[tuple[int, int]]:
    """The most valuable choice of at most one (cost, value) option per group whose costs
    fit ``capacity``, as (group, option) indices (a multiple-choice 0/1 knapsack)."""
    if capacity <= 0:
        return []
    best = [0.0] * (capacity + 1)  # best[r]: the best value costing at most r
    choices: list[list[int]] = []
    for options in groups:
        after, row = best[:], [-1] * (capacity + 1)
        for index, (price, value) in enumerate(options):
            for room in range(price, capacity + 1):
                if best[room - price] + value > after[room]:
                    after[room], row[room] = best[room - price] + value, index
        best = after
        choices.append(row)
    picks, room = [], capacity
    for group in range(len(groups) - 1, -1, -1):
        option = choices[group][room]
        if option >= 0:
            picks.append((group, option))
            room -= groups[group][option][0]
    return picks[::-1]


def _repeats(unit: _Unit, chosen: list[_Unit]) -> bool:
    words = unit.terms.words
    for other in chosen:
        small = min(len(words), len(other.terms.words))
        if small and len(words & other.terms.words) >= REDUNDANT * small:
            return True
    return False


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."


def _error_patterns(items: Sequence[CompressionItem], minimum: int) -> list[ErrorPattern]:
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for item in items:
        signature, example = _error_signature(item)
        if signature:
            groups[signature].append((item.memory_id, example))
    patterns = [
        ErrorPattern(signature, len(seen), seen[0][1], tuple(dict.fromkeys(i for i, _ in seen)))
        for signature, seen in groups.items()
        if len(seen) >= minimum
    ]
    return sorted(patterns, key=lambda p: -p.occurrences)


def _error_signature(item: CompressionItem) -> tuple[str | None, str]:
    """An error's type: ``metadata.error_type``, an exception class, an HTTP status, or its
    first error sentence with numbers, ids and quoted values blanked out."""
    sentence = next((s for s in split_sentences(item.content) if ERROR_MARKER.search(s)), None)
    example = (sentence or item.content).strip()[:200]
    declared = item.metadata.get("error_type")
    if isinstance(declared, str) and declared.strip():
        return declared.strip(), example
    if sentence is None:
        return None, example
    for pattern, template in ((_EXCEPTION, "{}"), (_HTTP, "HTTP {}")):
        match = pattern.search(sentence)
        if match:
            return template.format(match.group(1)), example
    words = _VOLATILE.sub("#", sentence.lower()).split()
    return " ".join(words[:8]), example
