"""Which slot a question asks the current value of (``asked_slot``): "Where does the user
live now?" asks ``user|home``; a question about the past asks none."""

from __future__ import annotations

import re
from collections.abc import Callable

from agentcore.domain.fact_text import stem
from agentcore.domain.updates.vocabulary import (
    NAMED_ATTRIBUTES,
    NOT_ATTRIBUTES,
    NOT_NAMES,
    PETS,
    Rule,
    Statement,
    group_attribute,
    head_noun,
    make_rule,
    norm_subject,
    norm_words,
    word_set,
)

_Q_SUBJECT = r"(?P<s>the user|user|I|we|you|[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
_Q_POSSESSIVE = r"(?P<s>the user's|user's|my|our|your|[A-Z][a-z]+(?: [A-Z][a-z]+)?'s)"
_Q_NOW = r"(?:\s+(?:now|currently|these days|nowadays|at the moment|today))?"
_Q_DO = r"(?:does|do|is|are)"


def _q(pattern: str, attribute: str | Callable[[re.Match[str]], str]) -> Rule:
    rule = make_rule(r"^\s*" + pattern, attribute)
    return Rule(re.compile(rule.pattern.pattern, re.IGNORECASE), rule.attribute, False, False)


_QUESTIONS: tuple[Rule, ...] = (
    _q(
        rf"(?:where|which (?:city|town|country|place))\s+{_Q_DO}\s+{_Q_SUBJECT}\s+"
        r"(?:currently\s+|now\s+)?(?:live|living|reside|residing|based|stay|staying)\b",
        "home",
    ),
    _q(rf"where\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+)?(?:home|house|place)\b", "home"),
    _q(
        rf"(?:where|which (?:company|firm|employer|organi[sz]ation))\s+{_Q_DO}\s+{_Q_SUBJECT}"
        r"\s+(?:currently\s+|now\s+)?(?:work|working|employed)\b",
        "employer",
    ),
    _q(rf"who\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:currently\s+|now\s+)?work(?:ing)?\s+for\b", "employer"),
    _q(
        rf"(?:what|which)\s+(?:is|company is)\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?"
        r"(?:employer|company)\b",
        "employer",
    ),
    _q(
        rf"what\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?(?:job title|title|role|"
        r"position|job)\b",
        "job title",
    ),
    _q(
        rf"what\s+(?:role|job|position|title)\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:have|hold)",
        "job title",
    ),
    _q(
        rf"who\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?(?:manager|boss|supervisor|"
        r"team lead)\b",
        "manager",
    ),
    _q(
        rf"who\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:currently\s+|now\s+)?report(?:ing)?\s+to\b",
        "manager",
    ),
    _q(
        rf"who\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?(?:partner|girlfriend|"
        r"boyfriend|wife|husband|spouse)\b",
        "partner",
    ),
    _q(
        rf"who\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:currently\s+|now\s+)?(?:dating|seeing|"
        r"married to)\b",
        "partner",
    ),
    _q(
        rf"what\s+is\s+{_Q_POSSESSIVE}\s+{PETS}(?:'s name|\s+called|\s+named)",
        lambda m: f"pet:{m.group('k')}",
    ),
    _q(
        rf"what\s+is\s+the\s+name\s+of\s+{_Q_POSSESSIVE}\s+{PETS}\b",
        lambda m: f"pet:{m.group('k')}",
    ),
    _q(
        rf"(?:what|which)\s+(?:car|vehicle)\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:currently\s+|"
        r"now\s+)?(?:drive|driving|have|own)\b",
        "car",
    ),
    _q(rf"what\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?car\b", "car"),
    _q(rf"what\s+(?:diet|kind of diet)\s+{_Q_DO}\s+{_Q_SUBJECT}\b", "diet"),
    _q(
        rf"is\s+{_Q_SUBJECT}\s+(?:still\s+|now\s+)?(?:a\s+)?(?:vegetarian|vegan|pescatarian|"
        r"keto)\b",
        "diet",
    ),
    _q(
        rf"what\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?favou?rite\s+(?P<k>[\w ]{{1,30}}?)"
        + _Q_NOW
        + r"\s*\??$",
        group_attribute("k", "favorite"),
    ),
    _q(
        rf"(?:what|which)\s+(?P<k>[\w ]{{1,30}}?)\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:like|love)\s+"
        r"(?:the\s+)?(?:best|most)\b",
        group_attribute("k", "favorite"),
    ),
    _q(
        rf"(?:what|which)\s+(?:kind of\s+)?(?P<k>[\w ]{{1,30}}?)\s+{_Q_DO}\s+{_Q_SUBJECT}\s+"
        r"(?:currently\s+|now\s+)?prefer",
        group_attribute("k", "prefers"),
    ),
    _q(
        r"(?:what|which)\s+version\s+of\s+(?:the\s+)?(?P<t>[\w+#.-]+)\b",
        lambda m: f"version:{m.group('t').lower()}",
    ),
    _q(
        r"(?:what|which)\s+(?P<t>[\w+#.-]+)\s+version\b",
        lambda m: f"version:{m.group('t').lower()}",
    ),
    _q(
        r"when\s+is\s+(?:the\s+|our\s+|my\s+)?(?P<k>[\w -]{1,40}?)\s+(?:due|deadline)\b",
        lambda m: f"deadline:{head_noun(m.group('k'))}",
    ),
    _q(
        r"what\s+is\s+the\s+(?:current\s+|new\s+)?(?:deadline|due date)\s+for\s+(?:the\s+)?"
        r"(?P<k>[\w -]{1,40}?)\s*\??$",
        lambda m: f"deadline:{head_noun(m.group('k'))}",
    ),
    _q(
        rf"(?:which|what)\s+team\s+is\s+{_Q_SUBJECT}\s+(?:currently\s+|now\s+)?(?:on|in)\b",
        "team",
    ),
    _q(
        rf"(?:which|what)\s+team\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:belong to|work (?:on|in))",
        "team",
    ),
    _q(
        rf"what\s+is\s+{_Q_POSSESSIVE}\s+(?:current\s+|new\s+)?(?P<k>[a-z]+(?: [a-z]+){{0,2}}?)"
        + _Q_NOW
        + r"\s*\??$",
        lambda m: norm_words(m.group("k")),
    ),
)


def asked_slot(question: str) -> str | None:
    """The slot a question asks the current value of ("Where does the user live now?":
    ``user|home``), or None. Only present-tense questions: "Where did Jo live in 2019?" asks
    about the past, which ranking answers as usual."""
    text = _CONTRACTED.sub(r"\1 is", question.strip().replace("’", "'"))
    for rule in _QUESTIONS:
        match = rule.pattern.match(text)
        if match is None:
            continue
        attribute = rule.attribute(match)
        base = attribute.split(":")[0]
        if (
            not attribute
            or attribute.endswith(":")
            or (base not in NAMED_ATTRIBUTES and stem(attribute.split()[-1]) in NOT_ATTRIBUTES)
        ):
            return None
        subject = norm_subject(_q_subject(match.groupdict().get("s") or ""))
        if attribute.startswith(("version:", "deadline:")):
            subject = "*"
        return Statement(subject, attribute, "").slot
    return _asked_by_words(text)


# Short or loosely phrased questions ("Current employer?", "user's current vehicle"): the
# attribute by its words, the subject by a name, if the question is about the present.
_Q_PAST = re.compile(
    r"\b(?:did|was|were|had|used to|before|ago|previously|originally|at first|back then|"
    r"(?:in|since) (?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_Q_WORDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"\b(?:{words})\b", re.IGNORECASE), attribute)
    for words, attribute in (
        (r"favou?rite", "favorite"),
        (r"version", "version"),
        (r"deadline|due date|due", "deadline"),
        (r"employer|employs|company|work(?:ing|s)? for|work(?:ing|s)? at", "employer"),
        (r"job title|title|role|position|do for work|do for a living", "job title"),
        (r"manager|boss|supervisor|supervises|reports? to|line manager", "manager"),
        (r"partner|girlfriend|boyfriend|wife|husband|spouse|dating", "partner"),
        (r"car|vehicle|drive|driving", "car"),
        (r"diet|dietary|vegetarian|vegan", "diet"),
        (r"team|squad", "team"),
        (r"e-?mail(?: address)?", "email"),
        (r"phone(?: number)?|mobile(?: number)?", "phone number"),
        (r"address", "address"),
        (r"live|lives|living|reside|residence|home|based|city", "home"),
    )
)
_Q_NAME = re.compile(r"(?<!^)\b([A-Z][a-z]+)(?:'s)?\b")


_Q_CURRENT = re.compile(
    r"\b(?:now|current|currently|these days|nowadays|at the moment|at present|right now)\b",
    re.IGNORECASE,
)


def _asked_by_words(text: str) -> str | None:
    """Only a question that asks for the present ("now", "currently"...) or is a few words
    ("Current employer?"): "What does Jo enjoy doing with her partner?" asks no slot."""
    if _Q_PAST.search(text) or not (_Q_CURRENT.search(text) or len(text.split()) <= 4):
        return None
    for pattern, attribute in _Q_WORDS:
        match = pattern.search(text)
        if match is None:
            continue
        if attribute in ("favorite", "version", "deadline"):
            return _asked_of_thing(text, attribute, match)
        names = [n for n in _Q_NAME.findall(text) if n.lower() not in NOT_NAMES | _Q_NOT_NAMES]
        subject = names[0].lower() if names else "user"
        return Statement(subject, attribute, "").slot
    return None


_Q_NOT_NAMES = word_set("user current currently api")
_Q_TAIL = re.compile(
    r"\s*(?:now|currently|these days|nowadays|at the moment|right now|at present|today)?\s*\??$",
    re.IGNORECASE,
)


def _asked_of_thing(text: str, attribute: str, match: re.Match[str]) -> str | None:
    """ "favourite band" -> favorite:band; "Python version" -> version:python; "thesis due"
    -> deadline:thesis."""
    if attribute == "favorite":
        after = _Q_TAIL.sub("", text[match.end() :]).split()
        return Statement("user", f"favorite:{head_noun(after[0])}", "").slot if after else None
    before = re.findall(r"[A-Za-z][\w+#.-]*", text[: match.start()])
    thing = [w for w in before if w.lower() not in NOT_NAMES | _Q_NOT_NAMES | {"due"}]
    if not thing:
        return None
    name = thing[-1].lower() if attribute == "version" else head_noun(thing[-1])  # as stated
    return Statement("*", f"{attribute}:{name}", "").slot


_CONTRACTED = re.compile(r"\b(what|who|where|when|which)'s\b", re.IGNORECASE)


def _q_subject(raw: str) -> str:
    """A question's subject as a statement's: "you"/"I" is the user asking about themselves."""
    word = raw.strip().lower().removesuffix("'s")
    return "user" if word in ("you", "your", "i", "me", "my", "we", "our", "the user") else word


# Words that say when, not what: a question about now matches statements by its other words
# ("Who does Jonas work for these days?" is not about days).
_TIME_WORDS = re.compile(
    r"\s*\b(?:right now|now|currently|current|these days|nowadays|at the moment|at present|"
    r"lately|atm|still|anymore|any more)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"\?\s*$|^\s*(?:who|whom|whose|what|what's|whats|which|where|when|how|why|is|are|does|do|"
    r"did|has|have|can)\b",
    re.IGNORECASE,
)


def asks_now(question: str) -> bool:
    """Whether a question asks how things are now ("Where does Ana live now?", "Is Raj still
    vegetarian?", "Current employer?") rather than how they were."""
    return bool(
        _QUESTION.search(question) and _TIME_WORDS.search(question) and not _Q_PAST.search(question)
    )


def asks_present(question: str) -> bool:
    """Whether a query is a question about how things are ("Where does Ana live?", "Current
    phone?"), not about how they were ("Where did Jo live in 2019?", "When did Ana move?",
    "What was her first car?") and not a phrase to match ("deploy the billing service")."""
    return bool(_QUESTION.search(question)) and _Q_PAST.search(question) is None


def timeless(question: str) -> str:
    """A question about now without its words of time, to match statements by what it asks
    ("Who does Jonas work for these days?" -> "Who does Jonas work for?"); anything else
    unchanged."""
    if not asks_now(question):
        return question
    stripped = re.sub(r"\s+([?.!,])", r"\1", _TIME_WORDS.sub("", question)).strip()
    return stripped if re.search(r"\w", stripped) else question
