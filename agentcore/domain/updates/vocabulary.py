"""The vocabulary of knowledge updates (``agentcore.domain.updates``): a slot, its value, how
texts are normalized, and the rule type the statement and question readers share."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agentcore.domain.fact_text import stem

MAX_SLOT = 120  # characters of a slot key or value kept (columns of that width)


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Statement:
    """``subject``'s ``attribute`` is ``value`` (all normalized: lower case, no articles)."""

    subject: str
    attribute: str
    value: str

    @property
    def slot(self) -> str:
        return f"{self.subject}|{self.attribute}"[:MAX_SLOT]


INFERRED = "~"  # the value of a slot a memory took over from the one it superseded


def normalized_statement(subject: str, attribute: str, value: str) -> Statement:
    """A statement named by a caller or a model, normalized as the rules' are ("The User" ->
    "user")."""
    return Statement(
        norm_subject(subject), norm_words(attribute)[:MAX_SLOT], clean_value(value)[:MAX_SLOT]
    )


PETS = r"(?P<k>dog|cat|puppy|kitten|pet|bird|parrot|rabbit|hamster|fish|horse|turtle|snake)"


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    attribute: Callable[[re.Match[str]], str]
    ended: bool  # the value no longer holds ("I left Initech": the employer is not Initech)
    anywhere: bool  # may start mid-sentence (else at its start)


def make_rule(
    pattern: str,
    attribute: str | Callable[[re.Match[str]], str],
    *,
    ended: bool = False,
    anywhere: bool = False,
) -> Rule:
    name = attribute if callable(attribute) else (lambda _m, a=attribute: a)
    return Rule(re.compile(pattern), name, ended, anywhere)


def group_attribute(name: str, prefix: str) -> Callable[[re.Match[str]], str]:
    return lambda m: f"{prefix}:{head_noun(m.group(name))}"


# A generic attribute that names a person or an activity is not one value at a time ("my
# sister is visiting", "my sister is a nurse" and "my sister is in Rome" are all true).
NOT_ATTRIBUTES = frozenset(
    stem(w)
    for w in word_set(
        "sister brother mom mother mum dad father parent parents son daughter kid kids child "
        "children baby friend friends family cousin aunt uncle grandma grandmother grandpa "
        "grandfather niece nephew roommate neighbor neighbour colleague coworker team dog cat "
        "pet day week weekend life plan plans goal goals question point idea guess hope worry "
        "problem concern issue mistake fault bad turn experience feeling heart mind head back "
        "body knee leg arm"
    )
)
# Normalizing: articles and trailing times are not part of a value ("the Billing team now").
ARTICLES = re.compile(r"^(?:the|a|an|my|our|their|his|her)\s+", re.IGNORECASE)
TRAILING = re.compile(
    r"\s+(?:now|again|these days|nowadays|anymore|any more|as well|too|for good|"
    r"last \w+|this \w+|next \w+|in (?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december|\d{4})|since \w+|recently)$",
    re.IGNORECASE,
)
# What a clause may open with before its subject ("Oh and btw, ...", "Last month ...").
LEAD = re.compile(
    r"^(?:(?:oh|ok|okay|so|and|but|now|well|yes|yeah|hey|hi|anyway|btw|by the way|update|fyi|"
    r"honestly|actually|in fact|fun fact|finally|officially|"
    r"good news|big news|news|quick update|heads up|just so you know|as of \w+|yesterday|"
    r"today|these days|nowadays|lately|so now|since then|after (?:the|a|our|my) [\w-]+|"
    r"last (?:week|month|year|night)|this (?:week|month|year|morning)|recently|"
    r"(?:a few|two|three|some) (?:days|weeks|months) ago)\s*[,:!-]*\s*)+",
    re.IGNORECASE,
)
SPEAKER = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)?:\s+")  # "Caroline: I moved ..."


def plain(text: str) -> str:
    """The first 2,000 characters, apostrophes made plain ("’" and "`" as "'")."""
    return text[:2_000].replace("’", "'").replace("`", "'")


def said(text: str) -> str:
    """``plain`` text without a conversation turn's speaker prefix ("Caroline: ")."""
    head = plain(text).strip()
    named = SPEAKER.match(head)
    if named is not None and not LEAD.fullmatch(named.group(0)):  # "Update: ..." is no one
        head = head[named.end() :]
    return head


def opening(text: str) -> str:
    """``said`` text without the words a clause may open with before its subject ("Oh and
    btw, ...", "Last month ...")."""
    return LEAD.sub("", said(text)).strip()


# The attributes the rules name (a generic "my <attribute> is" names others).
NAMED_ATTRIBUTES = word_set(
    "home address employer manager partner car diet pet favorite prefers version deadline team"
) | {"job title"}


def norm_subject(raw: str, speaker: str | None = None) -> str:
    word = raw.strip().lower().removesuffix("'s")
    if word in ("", "i", "we", "my", "our", "the user", "user"):
        return (speaker or "user").strip().lower()
    return word


def clean_value(raw: str) -> str:
    value = raw.strip(" \t'\"").lower()
    for _ in range(3):
        value = TRAILING.sub("", ARTICLES.sub("", value)).strip(" .,'\"")
    return re.sub(r"\s+", " ", value)


def norm_words(text: str) -> str:
    return re.sub(r"\s+", " ", ARTICLES.sub("", text.strip().lower()))


def head_noun(phrase: str | None) -> str:
    """The last word of a noun phrase, stemmed, in American spelling: "aisle seats" ->
    "seat", "colour" -> "color"."""
    words = re.findall(r"[a-z0-9+#.-]+", (phrase or "").lower())
    if not words:
        return ""
    word = SPELLING.get(words[-1], words[-1])
    return stem(word)


SPELLING = {"colour": "color", "colours": "colors", "flavour": "flavor", "theatre": "theater"}


# Capitalized words that open a sentence without being a person's name.
NOT_NAMES = word_set(
    "hey hi hello thanks thank sorry wow yay congrats congratulations nice great good glad "
    "finally just got sold switched moved quit left oh ok okay so btw well yes yeah also "
    "still now then after before since today yesterday honestly update fyi big good news "
    "sadly luckily unfortunately actually basically anyway the a an this that these those "
    "it there here what when where who why how"
)
