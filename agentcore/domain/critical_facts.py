"""Critical facts of a text (FR-3.3): the clauses a compression must keep. Pure English
heuristics, no model: the same rules for every engine.

A **critical fact** is a clause a reader must not lose: a standing constraint ("must",
"never"/"always" + a present-tense verb, "do not ...", "required", "deadline", a numeric limit
such as "at most 3", a date as a deadline: "by Friday", "until 3 May"), a decision ("decided
to ..."), the fix of an error mentioned just before, an essential identifier (a money amount,
a URL, an e-mail address), or any sentence of a memory flagged critical. Epistemic and
narrative uses are not constraints: "that must be hard", "I've always wanted...", "I never
thought...", "we met on 3 May". Questions state nothing and hold no fact.

Whether a summary retains a fact, or contradicts its source, is ``fact_checks``'; the text
units both work on (sentences, clauses, terms) are ``fact_text``'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from agentcore.domain.fact_checks import covered
from agentcore.domain.fact_text import (
    NUMBER_WORDS,
    STOPWORDS,
    Terms,
    clause_spans,
    compact,
    split_sentences,
    terms,
    word_set,
)

_SUBORDINATOR = re.compile(
    r"^(?:if|unless|when|whenever|until|before|after|because|since|although|though|while|"
    r"once|as long as|in case|otherwise|except|so that|or else|by|within|no later than|"
    r"per|as per|ahead of|according to|in line with|due to|given)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"`[^`]*`")
SHORT_FACT = 24  # words: a fact this short keeps its clauses together
_RELATIVE = re.compile(r"^(?:which|who|whom|whose|where)\b", re.IGNORECASE)
_PARTICIPLE_IRREGULAR = word_set(
    "done made kept set sent paid built held put run shut met read written taken given seen "
    "known shown brought bought told left found got gotten had"
)
_PAST_IRREGULAR = word_set(
    "was were had did went thought knew saw got made felt said told took came became found "
    "gave heard left met ran won wrote understood forgot imagined dreamed been"
)
_NOT_RULE_AFTER = word_set(
    "be been being there here so too very a an the my your our his her their it that this "
    "mind ever again"
)
_NOT_IMPERATIVE = word_set("worry mind know think care feel be get")
_ADVERBS = word_set("really just also still ever even truly")
_KEYWORDS = re.compile(
    r"\b(?:required|mandatory|compulsory|prohibited|forbidden|not allowed|"
    r"not permitted|deadline|due (?:by|on|date)|no later than|allergic to|allergy)\b",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"\b(?:at most|at least|no more than|no less than|not more than|(?:not |never )?exceeds?|"
    r"maximum(?: of)?|minimum(?: of)?|max|min|up to|limit(?:ed)? (?:of|to|is)|capped at|"
    r"budget (?:of|is))\s+(?:\$|€|£)?(?:\d|(?:" + "|".join(NUMBER_WORDS) + r")\b)",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decision (?:is|was) to|agreed (?:to|on|that)|(?:we|i)(?:'ll| will) "
    r"go with|chose to|opted (?:to|for)|settled on|the plan is)\b",
    re.IGNORECASE,
)
_FIX = re.compile(
    r"\b(?:fixed|fixes|fix (?:is|was)|resolved|solved|workaround|the solution|worked around|"
    r"patched|root cause)\b",
    re.IGNORECASE,
)
ERROR_MARKER = re.compile(
    r"\b(?:errors?|exceptions?|failed|failure|failing|traceback|timeout|timed out|crash(?:ed)?|"
    r"bug|broke|broken|refused|denied|[A-Z]\w+(?:Error|Exception))\b",
    re.IGNORECASE,
)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DATE = (
    rf"(?:\d{{4}}-\d{{2}}-\d{{2}}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|{_DAY}|tomorrow|tonight|noon|midnight|"
    r"(?:the )?end of (?:the )?(?:day|week|month|quarter|year|sprint))"
)
# A date is critical as a deadline or a start ("by Friday", "until 3 May"), not as the date
# something happened ("we met on 3 May").
_DEADLINE = re.compile(
    rf"\b(?:by|until|till|before|due(?: on| by)?|no later than|starting|effective|"
    rf"expires?(?: on)?)\s+(?:the\s+|next\s+|this\s+)?{_DATE}",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(
    r"(?:[$€£]\s?\d|\b\d[\d,.]*\s?(?:usd|eur|gbp|dollars|euros)\b|https?://\S+|"
    r"\b[\w.+-]+@[\w-]+\.[\w.]+\b)",
    re.IGNORECASE,
)


class FactKind(StrEnum):
    FLAGGED = "flagged"  # the memory was stored with critical=true
    CONSTRAINT = "constraint"
    DECISION = "decision"
    ERROR_FIX = "error_fix"
    IDENTIFIER = "identifier"
    MODEL = "model"  # named critical by the compression model (LLM engine)


# Which facts win the budget first when not all fit.
PRIORITY = (
    FactKind.FLAGGED,
    FactKind.CONSTRAINT,
    FactKind.ERROR_FIX,
    FactKind.DECISION,
    FactKind.IDENTIFIER,
    FactKind.MODEL,
)


@dataclass(frozen=True, slots=True)
class Passage:
    """One source text: a memory of a stage, or a stage summary of a task."""

    id: str
    text: str
    flagged: bool = False


@dataclass(frozen=True, slots=True)
class CriticalFact:
    content: str
    kind: FactKind
    source_ids: tuple[str, ...]
    position: tuple[int, int] = (0, 0)  # (passage index, sentence index): chronological order

    def to_dict(self) -> dict[str, object]:
        return {
            "content": self.content,
            "kind": self.kind.value,
            "source_ids": list(self.source_ids),
        }


def extract_critical_facts(passages: Sequence[Passage]) -> list[CriticalFact]:
    """The critical facts of ``passages`` in order, duplicates merged (see the module doc)."""
    facts: list[CriticalFact] = []
    recent_error = -10
    for p_index, passage in enumerate(passages):
        for s_index, sentence in enumerate(split_sentences(passage.text)):
            position = (p_index, s_index)
            if ERROR_MARKER.search(sentence):
                recent_error = p_index
            if passage.flagged:
                if compact(sentence):
                    facts.append(CriticalFact(sentence, FactKind.FLAGGED, (passage.id,), position))
                continue
            if sentence.rstrip().endswith("?"):
                continue  # a question states nothing
            found = _sentence_facts(sentence)
            rule = any(kind is FactKind.CONSTRAINT for _, kind in found)
            if not rule and _FIX.search(sentence) and p_index - recent_error <= 3:
                found = [(sentence, FactKind.ERROR_FIX)]  # a rule about fixes stays a rule
            for content, kind in found:
                facts.append(CriticalFact(content, kind, (passage.id,), position))
    return merge_duplicates(facts)


def _sentence_facts(sentence: str) -> list[tuple[str, FactKind]]:
    spans = clause_spans(sentence)
    clauses = [sentence[a:b] for a, b in spans]
    # Quoted code (`...`: an error message, a command) states no rule of its own.
    prose = _CODE.sub(lambda code: " " * len(code.group()), sentence)
    kinds = [_clause_kind(prose[a:b]) for a, b in spans]
    found: list[tuple[str, FactKind]] = []
    taken: set[int] = set()
    for index, kind in enumerate(kinds):
        if kind is None or index in taken:
            continue
        start, end = index, index + 1
        # A relative clause needs what it refers to ("the admin export, which holds at most
        # 500 rows"); a condition or deadline attached to the clause belongs to the fact.
        if start > 0 and _RELATIVE.match(clauses[start]):
            start -= 1
        if start > 0 and _SUBORDINATOR.match(clauses[start - 1]):
            start -= 1
        while (
            end < len(clauses)
            and (
                _SUBORDINATOR.match(clauses[end])
                or len(clauses[end].split()) < 3
                # a short rule is one thought: "...; they go in as new commits"
                or (
                    kinds[end] is None
                    and len(sentence[spans[start][0] : spans[end][1]].split()) <= SHORT_FACT
                )
            )
        ):
            end += 1
        taken.update(range(start, end))
        text = sentence[spans[start][0] : spans[end - 1][1]].strip()
        if end == len(clauses):
            text = sentence[spans[start][0] :].strip()  # with its closing punctuation
        found.append((text, kind))
    return found


def _clause_kind(clause: str) -> FactKind | None:
    if _is_constraint(clause):
        return FactKind.CONSTRAINT
    if _DECISION.search(clause):
        return FactKind.DECISION
    if _IDENTIFIER.search(clause):
        return FactKind.IDENTIFIER
    return None


def _is_constraint(clause: str) -> bool:
    if _KEYWORDS.search(clause) or _LIMIT.search(clause) or _DEADLINE.search(clause):
        return True
    raw = [w for w in re.findall(r"[A-Za-z']+", clause.replace("’", "'")) if w.lower() != "please"]
    words = [w.lower() for w in raw]
    if words[:1] in (["never"], ["don't"]) or words[:2] == ["do", "not"]:
        verb = words[2 if words[0] == "do" else 1 : 3 if words[0] == "do" else 2]
        return bool(verb) and verb[0] not in _NOT_IMPERATIVE and _base_form(verb[0])
    return any(_is_rule_word(raw, words, i) for i, w in enumerate(words) if w in _RULE_WORDS)


_RULE_WORDS = frozenset({"must", "mustn't", "never", "always"})
# Who may hold a standing rule ("I always...", "you must never..."), or a modal of obligation.
_RULE_SUBJECTS = word_set(
    "i we you he she they one everyone everybody nobody should shall will 'll must"
)


def _is_rule_word(raw: list[str], words: list[str], i: int) -> bool:
    """Whether ``words[i]`` ("must", "never", "always") states a rule rather than a guess, a
    habit of a thing or a memory: "must be hard", "I've never been", "always wanted", "that
    always helps" are not rules; "I always check", "never deploy", "Jo never eats meat" are."""
    after = [w for w in words[i + 1 :] if w not in _ADVERBS]
    nxt = after[0] if after else ""
    if words[i] in ("must", "mustn't"):
        if words[i] == "mustn't" or nxt == "not":
            return True
        if nxt in ("say", "admit", "confess", "mean", "feel", "know", "love"):
            return False
        second = after[1] if len(after) > 1 else ""
        if nxt == "be":
            return _participle(second)
        if nxt == "have":
            return not (second == "been" or _participle(second))
        return bool(nxt)
    before = words[i - 1] if i > 0 else ""
    before = before if "'" not in before else "'" + before.split("'", 1)[1]
    # "Jo never...": a name, not a capitalized first word such as "That" or "Painting".
    named = i > 0 and raw[i - 1][:1].isupper() and before not in STOPWORDS
    named = named and not before.endswith("ing")
    if i > 0 and before not in _RULE_SUBJECTS and not named:
        return False
    return nxt not in _NOT_RULE_AFTER and _base_form(nxt)


def _base_form(verb: str) -> bool:
    """A present-tense or base verb, as far as spelling tells: not "went", "tried", "going"."""
    if not verb or verb in _PAST_IRREGULAR or verb.endswith("ing"):
        return False
    return not (verb.endswith("ed") and len(verb) > 4)


def _participle(word: str) -> bool:
    return word in _PARTICIPLE_IRREGULAR or (len(word) > 4 and word.endswith(("ed", "en")))


def merge_duplicates(facts: Sequence[CriticalFact]) -> list[CriticalFact]:
    """Facts that another fact retains (a repeated or restated rule) merge into it: the one
    that says more keeps its content, the earlier its position; sources are joined. A flagged
    fact keeps its words: it absorbs what it retains, is merged only into the same text, and
    a wider unflagged fact stays beside it."""
    kept: list[CriticalFact] = []
    kept_terms: list[Terms] = []
    for fact in facts:
        t = terms(fact.content)
        for index, other in enumerate(kept_terms):
            wider = _wider(kept[index], other, fact, t)
            if wider is not None:
                first = kept[index]
                ids = tuple(dict.fromkeys((*first.source_ids, *fact.source_ids)))
                kind = min(first.kind, fact.kind, key=PRIORITY.index)
                kept[index] = CriticalFact(wider.content, kind, ids, first.position)
                kept_terms[index] = terms(wider.content)
                break
        else:
            kept.append(fact)
            kept_terms.append(t)
    return kept


def _wider(
    old: CriticalFact, old_terms: Terms, new: CriticalFact, new_terms: Terms
) -> CriticalFact | None:
    """The fact whose content stands when ``new`` merges into ``old``; None: no merge."""
    if old_terms.negations % 2 != new_terms.negations % 2:
        return None
    flagged = (old.kind is FactKind.FLAGGED, new.kind is FactKind.FLAGGED)
    if all(flagged):
        return old if old.content.strip() == new.content.strip() else None
    if covered(new_terms, old_terms) and not flagged[1]:
        return old
    if covered(old_terms, new_terms) and not flagged[0]:
        return new
    return None
