"""The context block of ``memory.context``: labelled sections packed into a token budget.

Pure: the service gathers the candidates of each section (best first) and hands them to
``pack`` with a token counter; ``pack`` deduplicates them, shares the budget, renders the block
and guarantees the rendered text (headers included) counts at most ``max_tokens``.

**Sections**, in this order (``SECTIONS``): critical facts and constraints, the task and its
current stage, the session's working memory, the memories relevant to the query, procedures,
error lessons. An empty section is left out, header and all.

**Deduplication.** A candidate is never chosen when an item already chosen has its memory
id, or its text once normalized (case, spacing and punctuation ignored; labels such as
"user: " left aside), or holds that text whole (a stage summary quoting a memory), or nine
tenths of the same words: sections are filled in order, so a repeat shows in the highest
section that has room for it.

**Budget** (the policy, README "Context block"):

1. Critical facts take what they need, before anything else: a lower section never displaces
   one. If they alone exceed the budget, the most important that fit are kept, the block
   says ``truncated`` and holds nothing else.
2. The rest of the budget is shared by the other sections in order, each capped at its share
   (``SHARES``); what a section leaves of its cap passes to the next one down.
3. What is still left after the last section goes back to the sections in order, for the
   items their caps held out.
4. Within a section items are taken best first; one that does not fit is skipped and smaller
   ones after it may still fit. An item is never cut.

The final text is counted again as a whole (tokens across line breaks need not add up item by
item); while it exceeds the budget the last item of the lowest section is removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

TokenCount = Callable[[str], int]
MIN_TOKENS, MAX_TOKENS = 50, 32_000  # the budgets a block may be asked for


class Section(StrEnum):
    CRITICAL = "critical"
    STAGE = "stage"
    WORKING = "working"
    MEMORIES = "memories"
    PROCEDURES = "procedures"
    ERRORS = "errors"


SECTIONS = tuple(Section)
TITLES = {
    Section.CRITICAL: "Critical facts and constraints",
    Section.STAGE: "Task and current stage",
    Section.WORKING: "Working memory (this session, oldest first)",
    Section.MEMORIES: "Relevant memories",
    Section.PROCEDURES: "Procedures",
    Section.ERRORS: "Error lessons",
}
# Shares of the budget left after the critical facts, before redistribution.
SHARES = {
    Section.STAGE: 0.15,
    Section.WORKING: 0.25,
    Section.MEMORIES: 0.40,
    Section.PROCEDURES: 0.10,
    Section.ERRORS: 0.10,
}
TRUNCATED_MARK = " (truncated)"
_CHRONOLOGICAL = {Section.WORKING}  # chosen newest first, rendered oldest first
_NEAR_DUPLICATE = 0.9  # share of words two texts must share (Jaccard) to be one
_MIN_WORDS = 5  # shorter texts are duplicates only when equal
_NON_WORD = re.compile(r"[^\w]+")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One item a section offers. ``id`` names what the text came from; ``kind`` says what
    the id is (``memory``, ``working_item``, ``stage``, ``task``, ``error``,
    ``error_pattern``); only memory and working item ids are compared for duplicates.
    ``label`` is shown before the text but not compared ("user: ", "Progress so far: ")."""

    id: str
    kind: str
    text: str
    label: str = ""

    @property
    def shown(self) -> str:
        return f"{self.label}{self.text}"


@dataclass(frozen=True, slots=True)
class Included:
    ref: int  # the item's number in the text: "[ref] ..."
    id: str
    kind: str
    section: Section
    tokens: int  # of its line


@dataclass(frozen=True, slots=True)
class SectionSummary:
    section: Section
    title: str
    tokens: int  # of the section's text, header included
    items: int
    omitted: int  # left out for the budget


@dataclass(frozen=True, slots=True)
class ContextBlock:
    text: str
    tokens_used: int
    max_tokens: int
    sections: list[SectionSummary]  # the sections in the text, in order
    included: list[Included]  # in the order of the text
    omitted: dict[Section, int]  # per section: candidates left out for the budget
    duplicates: int  # candidates left out as a repeat of an item shown
    truncated: bool  # critical facts were left out for the budget


def normalized(text: str) -> str:
    """Lower case, words only, single spaces: what two texts are compared on."""
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class _Key:
    """What a candidate is compared on."""

    id: str | None  # memory and working item ids only
    text: str
    words: frozenset[str]

    @classmethod
    def of(cls, candidate: Candidate) -> _Key:
        text = normalized(candidate.text)
        tracked = candidate.kind in ("memory", "working_item")
        return cls(candidate.id if tracked else None, text, frozenset(text.split()))


class _Shown:
    """The ids and texts of the items chosen so far."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._texts: set[str] = set()
        self._word_sets: list[frozenset[str]] = []
        self._padded: list[str] = []  # " text ": a repeat may be held whole in a longer one

    def repeats(self, key: _Key) -> bool:
        if (key.id is not None and key.id in self._ids) or key.text in self._texts:
            return True
        if len(key.words) < _MIN_WORDS:
            return False
        padded = f" {key.text} "
        return any(padded in shown for shown in self._padded) or any(
            len(key.words & seen) >= _NEAR_DUPLICATE * len(key.words | seen)
            for seen in self._word_sets
        )

    def add(self, key: _Key) -> None:
        if key.id is not None:
            self._ids.add(key.id)
        self._texts.add(key.text)
        self._padded.append(f" {key.text} ")
        if len(key.words) >= _MIN_WORDS:
            self._word_sets.append(key.words)


def header(section: Section, truncated: bool = False) -> str:
    return f"## {TITLES[section]}{TRUNCATED_MARK if truncated else ''}"


class _Packer:
    """Chooses the items of each section within the budget (module doc, steps 1-4), never
    one that repeats an item already chosen."""

    def __init__(
        self,
        offered: Mapping[Section, Sequence[Candidate]],
        max_tokens: int,
        count: TokenCount,
    ) -> None:
        self.candidates = {s: [c for c in offered.get(s, ()) if c.text.strip()] for s in SECTIONS}
        self.blank = sum(len(offered.get(s, ())) - len(self.candidates[s]) for s in SECTIONS)
        self.max_tokens = max_tokens
        self.keys = {s: [_Key.of(c) for c in self.candidates[s]] for s in SECTIONS}
        # a line's cost, with a two-digit reference as most blocks have
        self.cost = {s: [count(f"[10] {c.shown}\n") for c in self.candidates[s]] for s in SECTIONS}
        self.header_cost = {s: count(f"\n{header(s)}\n") for s in SECTIONS}
        self.chosen: dict[Section, list[int]] = {s: [] for s in SECTIONS}
        self.repeated: dict[Section, set[int]] = {s: set() for s in SECTIONS}
        self.shown = _Shown()
        self.used = 0

    def left_out(self, section: Section) -> int:
        """Candidates of the section left out for the budget (not as repeats)."""
        section_total = len(self.candidates[section])
        return section_total - len(self.chosen[section]) - len(self.repeated[section])

    def fill(self, section: Section, allowance: int) -> int:
        """Add the section's items not chosen yet, best first, within ``allowance`` tokens
        (and the whole budget); returns the tokens spent."""
        spent = 0
        chosen, repeated = self.chosen[section], self.repeated[section]
        for index, cost in enumerate(self.cost[section]):
            if index in chosen or index in repeated:
                continue
            key = self.keys[section][index]
            if self.shown.repeats(key):
                repeated.add(index)
                continue
            extra = cost + (0 if chosen else self.header_cost[section])
            if spent + extra > allowance or self.used + extra > self.max_tokens:
                continue
            chosen.append(index)
            self.shown.add(key)
            spent += extra
            self.used += extra
            self._absorb(section, key)
        return spent

    def _absorb(self, section: Section, key: _Key) -> None:
        """Items of lower sections chosen earlier (in the first pass) whose text ``key`` holds
        whole are repeats now: left out, their tokens free for the sections still to fill."""
        padded = f" {key.text} "
        for lower in SECTIONS[SECTIONS.index(section) + 1 :]:
            held = [
                index
                for index in self.chosen[lower]
                if len(self.keys[lower][index].words) >= _MIN_WORDS
                and f" {self.keys[lower][index].text} " in padded
            ]
            for index in held:
                self.chosen[lower].remove(index)
                self.repeated[lower].add(index)
                self.used -= self.cost[lower][index]
            if held and not self.chosen[lower]:
                self.used -= self.header_cost[lower]

    def run(self) -> None:
        self.fill(Section.CRITICAL, self.max_tokens)
        if self.left_out(Section.CRITICAL):
            return  # critical facts alone exceed the budget: the block is theirs
        left = self.max_tokens - self.used
        carry = 0.0
        for section in SECTIONS[1:]:
            cap = SHARES[section] * left + carry
            carry = cap - self.fill(section, int(cap))
        for section in SECTIONS[1:]:
            self.fill(section, self.max_tokens - self.used)

    def drop_last(self) -> bool:
        """Remove the last item of the lowest section that has one; False when none is left."""
        for section in reversed(SECTIONS):
            if self.chosen[section]:
                self.chosen[section].pop()
                return True
        return False


def pack(
    offered: Mapping[Section, Sequence[Candidate]], max_tokens: int, count: TokenCount
) -> ContextBlock:
    """The block of the offered candidates (each section's best first) within ``max_tokens``
    tokens as ``count`` counts them (module doc)."""
    packer = _Packer(offered, max_tokens, count)
    packer.run()
    while True:
        truncated = packer.left_out(Section.CRITICAL) > 0
        text, lines = _render(packer.candidates, packer.chosen, truncated)
        tokens = count(text)
        if tokens <= max_tokens or not packer.drop_last():
            break
    return _block(packer, text, tokens, lines, count)


_Line = tuple[Section, Candidate, str]


def _render(
    candidates: dict[Section, list[Candidate]],
    chosen: dict[Section, list[int]],
    truncated: bool,
) -> tuple[str, list[_Line]]:
    parts: list[str] = []
    lines: list[_Line] = []
    for section in SECTIONS:
        indices = sorted(chosen[section])
        if not indices:
            continue
        if section in _CHRONOLOGICAL:
            indices.reverse()
        block = [header(section, truncated and section is Section.CRITICAL)]
        for index in indices:
            candidate = candidates[section][index]
            line = f"[{len(lines) + 1}] {candidate.shown}"
            block.append(line)
            lines.append((section, candidate, line))
        parts.append("\n".join(block))
    return "\n\n".join(parts), lines


def _block(
    packer: _Packer, text: str, tokens: int, lines: list[_Line], count: TokenCount
) -> ContextBlock:
    included = [
        Included(ref, c.id, c.kind, section, count(line))
        for ref, (section, c, line) in enumerate(lines, start=1)
    ]
    omitted = {s: n for s in SECTIONS if (n := packer.left_out(s))}
    truncated = Section.CRITICAL in omitted
    summaries = []
    for section in SECTIONS:
        body = [line for s, _, line in lines if s is section]
        if not body:
            continue
        shown = "\n".join([header(section, truncated and section is Section.CRITICAL), *body])
        summaries.append(
            SectionSummary(
                section, TITLES[section], count(shown), len(body), omitted.get(section, 0)
            )
        )
    return ContextBlock(
        text=text,
        tokens_used=tokens,
        max_tokens=packer.max_tokens,
        sections=summaries,
        included=included,
        omitted=omitted,
        duplicates=packer.blank + sum(len(r) for r in packer.repeated.values()),
        truncated=truncated,
    )
