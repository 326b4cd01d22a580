"""The text units the critical-fact rules and the compression checks work on: sentences,
clauses, word tokens, a crude stemmer, and a text's comparable terms (content stems, exact
numbers, negations); ``compact`` and ``terse`` write a fact shorter without changing its
terms. Pure English heuristics, no model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_SENTENCE = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_ABBREVIATION = re.compile(r"\b(?:[A-Z]|Mr|Mrs|Ms|Dr|Prof|St|vs|etc|e\.g|i\.e|approx|No)\.$")
_CLAUSE = re.compile(r"\s*(?:[,;:](?=\s)|\s[-–—](?=\s))\s*")
_TOKEN = re.compile(r"[A-Za-z0-9$€£]+(?:['’.:/@-][A-Za-z0-9]+)*")
NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}  # fmt: skip
_NEGATIONS = {"not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "without"}
STOPWORDS = word_set(
    "a an the and or but if then so as of at by for from in into on onto to with about over "
    "under up down out off again further once here there when where why how all any both each "
    "few more most other some such own same than too very can will just should now i me my "
    "myself we our ours you your yours he him his she her hers it its they them their theirs "
    "what which who whom this that these those am is are was were be been being have has had "
    "having do does did doing would could might may shall also really it's i'm i've i'll i'd "
    "you're you've that's there's let's oh yeah yes hey hi wow okay ok well like get got "
    "gonna wanna lot lots thing things something anything everything much many even still "
    "though although because while during before after since until actually basically "
    "literally totally honestly definitely absolutely kinda super"
)
_FILLER = re.compile(
    r"\b(?:really|just|actually|basically|literally|totally|honestly|definitely|absolutely|"
    r"kinda|super|kind of|sort of|you know|i mean)\b\s*",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"\b(?:the|a|an)\s+(?=[\w$€£])", re.IGNORECASE)
_INTERJECTION = re.compile(
    r"^(?:(?:hey|hi|hello|oh|ooh|wow|whoa|yeah|yep|yes|ok|okay|well|haha|hah|lol|omg|aw+|"
    r"thanks|thank you|sure|great|cool|nice|awesome|amazing|ah|um|uh|hmm)"
    r"(?:\s+[A-Z][a-z]+)?\s*[,!.…]+\s*)+",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Terms:
    """What the checks compare: content stems, exact numbers, and the count of negations."""

    words: frozenset[str]
    numbers: frozenset[str]
    negations: int


def split_sentences(text: str) -> list[str]:
    parts: list[str] = []
    for piece in _SENTENCE.split(text.strip()):
        piece = piece.strip()
        if not piece:
            continue
        if parts and _ABBREVIATION.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    return parts


def split_clauses(sentence: str) -> list[str]:
    return [sentence[start:end] for start, end in clause_spans(sentence)]


def clause_spans(sentence: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for separator in [*_CLAUSE.finditer(sentence), None]:
        end = len(sentence) if separator is None else separator.start()
        if sentence[start:end].strip():
            spans.append((start, end))
        start = len(sentence) if separator is None else separator.end()
    return spans


def tokens(text: str) -> list[str]:
    """Lowercase word tokens; "don't" becomes "do", "not", "we'll" "we"; number words become
    digits."""
    out: list[str] = []
    for raw in _TOKEN.findall(text.replace("’", "'")):
        token = raw.lower().strip("$€£")
        if token in ("cannot", "can't", "won't"):
            out += ["can" if token != "won't" else "will", "not"]
        elif token.endswith("n't"):
            out += [token[:-3], "not"]
        elif token.endswith(("'s", "'d", "'m")):
            out.append(token[:-2])
        elif token.endswith(("'ll", "'re", "'ve")):
            out.append(token[:-3])
        elif token:
            out.append(NUMBER_WORDS.get(token, token))
    return out


def stem(word: str) -> str:
    """A crude, consistent stemmer: "fixes", "fixed", "fixing" → "fix"; "likes" → "lik"."""
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 3 and word[-1] == "e":
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    return word


@lru_cache(maxsize=16_384)  # a compression asks for the same sentences' terms many times
def terms(text: str) -> Terms:
    """The comparable content of ``text``; interjections and fillers (what ``compact`` drops)
    do not count, so a fact and its compacted form have the same terms."""
    words, numbers, negations = set(), set(), 0
    for token in tokens(_strip_filler(text)):
        if token in _NEGATIONS:
            negations += 1
        elif any(ch.isdigit() for ch in token):
            numbers.add(token)
        elif token not in STOPWORDS and len(token) > 1:
            words.add(stem(token))
    return Terms(frozenset(words), frozenset(numbers), negations)


def compact(text: str) -> str:
    """``text`` without leading interjections ("Hey Mel!", "Wow,") and filler words ("really",
    "you know"). Negations, modals, numbers and content words are never removed."""
    out = _strip_filler(text)
    if out and out[0].islower() and text[:1].isupper():
        out = out[0].upper() + out[1:]
    content = terms(out)
    return out if content.words or content.numbers else ""


def terse(text: str) -> str:
    """``compact`` without articles: how a fact is written into a tight summary ("Export
    must keep column order of 2019 spec"). Its terms are the fact's terms."""
    out = _ARTICLE.sub("", compact(text))
    return out[:1].upper() + out[1:] if out[:1].islower() and text[:1].isupper() else out


def _strip_filler(text: str) -> str:
    out = _FILLER.sub("", _INTERJECTION.sub("", text.strip()))
    out = re.sub(r"\s+([,.!?;:])", r"\1", re.sub(r"\s{2,}", " ", out))
    out = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", out)
    return re.sub(r"[,;:]+([.!?…])", r"\1", out).strip(" ,;:-")
