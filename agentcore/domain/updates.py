"""Knowledge that updates: what a statement says about which attribute of which subject.

A memory that states a single-valued attribute of a subject ("I live in Berlin": the user's
home is Berlin) fills a **slot** (``user|home``) with a **value** (``berlin``). A newer memory
of the same scope that fills the same slot with another value supersedes it ("I moved to
Munich last month": ``user|home`` = ``munich``): the old memory gets ``valid_to`` and
``superseded_by`` and ranks below the current one (after Graphiti's bi-temporal edges, with
the memory's creation as the time the fact became valid).

Offline the slot is read by the patterns below: general English about attributes that hold
one value at a time (home, employer, job title, manager, partner, car, diet, a pet's name, a
favourite, a preference by its head noun, a tool's version, a deadline) and the generic "my
<attribute> is <value>". The LLM extractor names the slot itself. Precision comes first:
a sentence that is not clearly about one such attribute fills no slot (two facts about one
subject are not an update), and a question, a wish or a plan states no current value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentcore.domain.critical_facts import stem

MAX_SLOT = 120  # characters of a slot key or value kept (columns of that width)


def _words(text: str) -> frozenset[str]:
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


def slot_key(subject: str, attribute: str) -> str:
    """The slot of an attribute named by a caller or a model (normalized like ours)."""
    return Statement(_norm_subject(subject), _norm_words(attribute), "").slot


def normalize_value(value: str) -> str:
    return _clean_value(value)[:MAX_SLOT]


# --- subjects ------------------------------------------------------------------------------

_FIRST = r"(?:I|we|We)"
_NAME = r"[A-Z][a-z]+(?: [A-Z][a-z]+)?"
_SUBJECT = rf"(?P<s>{_FIRST}|[Tt]he user|{_NAME})(?:\s+|(?='))"  # "I work", "I'm"
_POSSESSIVE = rf"(?P<s>[Mm]y|[Oo]ur|[Tt]he user's|{_NAME}'s)"
_ADVERB = (
    r"(?:(?:now|currently|recently|just|finally|officially|actually|still|already|"
    r"also|eventually|permanently)\s+)*"
)
_NEW = r"(?:(?:new|current|latest|present)\s+)?"
_BE = r"(?:is|are|was|'s|am|'m|are|'re)"
_BE_NOW = rf"{_BE}\s+{_ADVERB}"
_HAVE = r"(?:have|has|'ve|'s)\s+"
_VALUE = r"(?P<v>[^,;.!?]+)"
_PLACE = r"(?P<v>(?:[A-Z][\w'-]*|the|St\.?|of|de|la|del|upon|on|am|an|\s)+?)"
_ORG = r"(?P<v>(?:[A-Z0-9][\w&'.-]*|of|and|&|the|de|\s)+?)"
_PERSON = r"(?P<v>[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
_END = r"(?=\s*(?:$|[,;.!?]|\s(?:now|again|last|this|next|in|on|since|as of|after|and|but|"
_END += r"with|because|for|from|starting|effective|back|two|three|a|an|the|as|after)\b))"
_MONTHS = (
    r"[Jj]an(?:uary)?|[Ff]eb(?:ruary)?|[Mm]ar(?:ch)?|[Aa]pr(?:il)?|[Mm]ay|[Jj]une?|[Jj]uly?|"
    r"[Aa]ug(?:ust)?|[Ss]ep(?:t|tember)?|[Oo]ct(?:ober)?|[Nn]ov(?:ember)?|[Dd]ec(?:ember)?"
)
_VERSION = r"(?P<v>v?\d+(?:\.\d+)+[a-z0-9-]*|v\d+)"
_TOOL = r"(?P<t>[A-Za-z][\w+#.-]*(?: [A-Z][\w+#.-]*)?)"

_RELATIONS = (
    "manager boss supervisor lead partner girlfriend boyfriend wife husband spouse fiance "
    "fiancee fiancé fiancée"
)
_PETS = r"(?P<k>dog|cat|puppy|kitten|pet|bird|parrot|rabbit|hamster|fish|horse|turtle|snake)"
_DIETS = (
    r"(?P<v>vegetarian|vegan|pescatarian|keto|paleo|gluten[- ]free|dairy[- ]free|"
    r"carnivore|flexitarian|lactose[- ]free|plant[- ]based|raw vegan)"
)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    attribute: Callable[[re.Match[str]], str]
    ended: bool  # the value no longer holds ("I left Initech": the employer is not Initech)
    anywhere: bool  # may start mid-sentence (else at its start)


def _rule(
    pattern: str,
    attribute: str | Callable[[re.Match[str]], str],
    *,
    ended: bool = False,
    anywhere: bool = False,
) -> _Rule:
    name = attribute if callable(attribute) else (lambda _m, a=attribute: a)
    return _Rule(re.compile(pattern), name, ended, anywhere)


def _group(name: str, prefix: str) -> Callable[[re.Match[str]], str]:
    return lambda m: f"{prefix}:{_head(m.group(name))}"


_VERB_ATTRIBUTES = {
    "live": "home", "living": "home", "drive": "car", "driving": "car", "work": "employer",
    "working": "employer", "eat": "diet", "eating": "diet", "use": "tool", "using": "tool",
    "run": "tool", "running": "tool",
}  # fmt: skip

_LEFT = "(?:left|quit|resigned from|no longer work (?:at|for)|stopped working (?:at|for))"
_RULES: tuple[_Rule, ...] = (
    # Team (before home: "I moved to the Billing team").
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:moved to|joined|switched to|transferred "
        rf"to|{_BE}\s+{_ADVERB}on|{_BE}\s+{_ADVERB}in)\s+the\s+"
        r"(?P<v>[A-Z][\w&-]*(?: [A-Z][\w&-]*)?)\s+team\b",
        "team",
    ),
    # Home.
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:(?:do|does)\s+|{_BE}\s+{_ADVERB}|{_HAVE}(?:been\s+)?"
        r")?(?:live|lives|living|reside|resides|residing|based|settled|staying)\s+"
        rf"{_ADVERB}in\s+{_PLACE}{_END}",
        "home",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:moved|relocated|moved back|"
        rf"relocated back)\s+(?:from\s+[A-Z][\w ]*?\s+)?to\s+{_PLACE}{_END}",
        "home",
    ),
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:home|house|place|apartment|flat|residence)\s+{_BE_NOW}"
        rf"(?:in|at)\s+{_PLACE}{_END}",
        "home",
    ),
    _rule(rf"{_POSSESSIVE}\s+{_NEW}address\s+{_BE_NOW}{_VALUE}", "address"),
    # Employer and job.
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:work|works|am working|'m working|is working|are working)"
        rf"\s+{_ADVERB}(?:at|for)\s+{_ORG}{_END}",
        "employer",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:joined|started (?:a new job |working )?"
        rf"at|started (?:working )?for|got (?:a|an) (?:new )?(?:job|position|offer) (?:at|with)|"
        rf"accepted (?:a|an) (?:job|offer|position) (?:at|from|with)|signed with|"
        rf"switched jobs to|moved to a new job at)\s+{_ORG}{_END}",
        "employer",
    ),
    _rule(
        rf"{_SUBJECT}{_BE_NOW}(?:employed|hired)\s+(?:at|by)\s+{_ORG}{_END}",
        "employer",
    ),
    _rule(rf"{_POSSESSIVE}\s+{_NEW}(?:employer|company)\s+{_BE_NOW}{_ORG}{_END}", "employer"),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}{_LEFT}\s+{_ORG}{_END}", "employer", ended=True
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:work|works|am working|'m working|is working)\s+as\s+"
        r"(?:an?\s+)?(?P<v>[\w -]+?)" + _END,
        "job title",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_BE}\s+|{_HAVE}been\s+|got\s+|was\s+|were\s+)"
        rf"{_ADVERB}promoted\s+to\s+(?:an?\s+)?(?P<v>[\w -]+?){_END}",
        "job title",
    ),
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:job title|title|role|position|job)\s+{_BE_NOW}"
        r"(?:an?\s+)?(?P<v>[\w -]+?)" + _END,
        "job title",
    ),
    # People: manager, partner.
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?P<k>manager|boss|supervisor|team lead|line manager)\s+"
        rf"{_BE_NOW}{_PERSON}{_END}",
        lambda m: "manager",
    ),
    _rule(
        rf"{_PERSON}\s+{_BE_NOW}(?P<s>my|our|the user's)\s+{_NEW}(?:manager|boss|supervisor|"
        rf"team lead|line manager){_END}",
        "manager",
    ),
    _rule(
        rf"{_PERSON}\s+{_ADVERB}(?:became|has become|is now)\s+(?P<s>my|our|the user's)\s+"
        r"(?:new\s+)?(?:manager|boss|supervisor|team lead)",
        "manager",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:report|reports|am reporting|'m reporting|is reporting)\s+"
        rf"{_ADVERB}(?:directly\s+)?to\s+{_PERSON}{_END}",
        "manager",
    ),
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:partner|girlfriend|boyfriend|wife|husband|spouse|"
        rf"fianc[ée]e?)(?:'s name)?\s+{_BE_NOW}{_PERSON}{_END}",
        "partner",
    ),
    _rule(
        rf"{_SUBJECT}{_BE_NOW}(?:dating|seeing|married to|engaged to|in a relationship "
        rf"with|going out with)\s+{_PERSON}{_END}",
        "partner",
    ),
    # Things: car, diet, pets.
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:drive|drives|am driving|'m driving|is driving)\s+"
        r"(?:an?\s+|the\s+)?(?:new\s+|used\s+)?(?P<v>[\w -]+?)" + _END,
        "car",
    ),
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:car|vehicle|ride)\s+{_BE_NOW}(?:an?\s+)?(?P<v>[\w -]+?)" + _END,
        "car",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?{_ADVERB}(?:bought|got|leased|traded (?:it )?"
        r"(?:in )?for)\s+(?:an?\s+)?(?:new\s+|used\s+)?(?P<v>[\w -]+?)\s+(?:car|SUV|truck)\b",
        "car",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_BE}\s+|{_HAVE}(?:been|become|gone)\s+|went\s+|became\s+|"
        rf"turned\s+|(?:have|has|'ve)\s+turned\s+|switched to (?:being )?|"
        rf"(?:am|'m|is) going\s+|eat\s+|eats\s+){_ADVERB}(?:(?:fully|strictly|mostly|a)\s+)?"
        rf"{_DIETS}\b",
        "diet",
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:{_HAVE})?(?:(?:started|stopped|quit|gave up)\s+eating|"
        r"(?:eat|eats) (?P<again>meat|fish|dairy|eggs) again)"
        r"(?:\s+(?P<v>meat|fish|dairy|eggs|animal products|red meat))?",
        "diet",
    ),
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}{_PETS}(?:'s name\s+{_BE}|\s+{_BE}\s+{_ADVERB}(?:named|called))\s+"
        rf"{_ADVERB}{_PERSON}{_END}",
        lambda m: f"pet:{m.group('k')}",
    ),
    # Favourites and preferences.
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?:all[- ]time\s+)?favou?rite\s+(?P<k>[\w ]{{1,30}}?)\s+"
        rf"{_BE_NOW}{_VALUE}",
        _group("k", "favorite"),
    ),
    _rule(
        rf"(?P<v>[\w ]{{1,40}}?)\s+{_BE_NOW}(?P<s>my|our|the user's)\s+{_NEW}"
        r"(?:all[- ]time\s+)?favou?rite\s+(?P<k>[\w ]{1,30}?)(?:\s+(?:now|these days))?$",
        _group("k", "favorite"),
    ),
    _rule(
        rf"{_SUBJECT}{_ADVERB}(?:prefer|prefers)\s+(?P<v>[\w -]{{1,40}}?)"
        r"(?=\s*(?:$|[,;.!?]|\s(?:over|to|than|instead|rather|now|these days|because|on|in|at|"
        r"for|with|when|during|whenever|if)\b))",
        _group("v", "prefers"),
    ),
    # Versions and deadlines (the subject is the tool or the thing due).
    _rule(
        rf"(?:{_SUBJECT}{_ADVERB}(?:{_HAVE})?(?:been\s+)?{_ADVERB}(?:use|uses|using|run|runs|running|"
        rf"upgraded|updated|bumped|migrated|moved|switched|pinned|deployed|{_BE}\s+{_ADVERB}on)"
        r"\s+(?:\w+\s+){0,3}?(?:to\s+|on\s+)?)?"
        rf"(?:[Tt]he\s+|[Oo]ur\s+)?{_TOOL}\s+(?:(?:is|was)\s+)?(?:now\s+)?(?:(?:at|on)\s+)?(?:version\s+)?{_VERSION}\b",
        lambda m: f"version:{m.group('t').lower()}",
    ),
    _rule(
        rf"{_POSSESSIVE}?\s*(?:the\s+)?(?P<k>[\w -]{{0,40}}?)\s*(?:deadline|due date)"
        r"(?:\s+for\s+(?:the\s+)?(?P<k2>[\w -]{1,40}?))?\s+(?:is|was|has been|got|had been)?\s*"
        r"(?:now\s+)?(?:moved|pushed|shifted|changed|extended|brought forward|set)?\s*"
        r"(?:back|out|up)?\s*(?:to|until|for|on)?\s*(?P<v>[\w ,/-]*\d[\w ,/-]*|"
        r"(?:next\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|"
        r"end of (?:the )?(?:month|week|quarter|year)))",
        lambda m: f"deadline:{_head(m.group('k2') or m.group('k') or 'task')}",
    ),
    _rule(
        r"(?:the\s+|our\s+|my\s+)?(?P<k>[\w -]{1,40}?)\s+(?:is|are)\s+(?:now\s+)?due\s+"
        r"(?:on\s+|by\s+)?(?P<v>[\w ,/-]+)",
        lambda m: f"deadline:{_head(m.group('k'))}",
    ),
    _rule(  # anywhere after a verb of upgrading: "we bumped Node to 20 for the frontend"
        r"\b(?i:upgraded|updated|bumped|migrated|moved|switched|pinned|rolled out|deployed)\s+"
        rf"(?:\w+\s+){{0,3}}?(?:to\s+|on\s+)?(?:the\s+|our\s+)?(?!(?:{_MONTHS})\b)(?P<t>[A-Za-z][\w+#.-]*)\s+"
        r"(?:to\s+)?(?:version\s+|v)?(?P<v>\d+(?:\.\d+)*(?:-\d+)*)\b",
        lambda m: f"version:{m.group('t').lower()}",
        anywhere=True,
    ),
    # "Vienna is where I live now", "a BMW i3 is what I'm driving now".
    _rule(
        r"(?P<v>[\w .'-]{1,50}?)\s+(?:is|are)\s+(?:what|where|who)\s+(?P<s>I|we)"
        r"(?:'m|'re|\s+am|\s+are)?\s+(?:now\s+|currently\s+)?(?P<k>live|living|drive|"
        r"driving|work|working|eat|eating|use|using|run|running)\b",
        lambda m: _VERB_ATTRIBUTES[m.group("k")],
    ),
    # The generic "my <attribute> is <value>", and "<value> is my (new) <attribute> (now)".
    _rule(
        rf"{_POSSESSIVE}\s+{_NEW}(?P<k>[a-z]+(?: [a-z]+){{0,2}}?)\s+{_BE_NOW}{_VALUE}",
        lambda m: _norm_words(m.group("k")),
    ),
    _rule(
        rf"(?P<v>[^,;]{{1,60}}?)\s+{_BE_NOW}(?P<s>my|our|the user's)\s+{_NEW}"
        r"(?P<k>[a-z]+(?: [a-z]+){0,2}?)(?:\s+(?:now|these days|nowadays))?$",
        lambda m: _norm_words(m.group("k")),
    ),
)

# A generic attribute that names a person or an activity is not one value at a time ("my
# sister is visiting", "my sister is a nurse" and "my sister is in Rome" are all true).
_NOT_ATTRIBUTES = frozenset(
    stem(w)
    for w in _words(
        "sister brother mom mother mum dad father parent parents son daughter kid kids child "
        "children baby friend friends family cousin aunt uncle grandma grandmother grandpa "
        "grandfather niece nephew roommate neighbor neighbour colleague coworker team dog cat "
        "pet day week weekend life plan plans goal goals question point idea guess hope worry "
        "problem concern issue mistake fault bad turn experience feeling heart mind head back "
        "body knee leg arm"
    )
)
_NOT_VALUES = re.compile(
    r"^(?:\w+ing|so|very|really|too|not|also|still|quite|a bit|kind of|sort of|getting|"
    r"going|coming|visiting|doing|feeling|being)\b",
    re.IGNORECASE,
)
_NOT_STATEMENTS = re.compile(
    r"\?\s*$|^(?:if|when|whether|maybe|perhaps|do|does|did|should|would|could|can|will|"
    r"what|where|who|which|how|why)\b|\b(?:want|wants|wanted|hope|hopes|wish|wishes|plan|"
    r"plans|planning|might|may|thinking about|considering|would like|used to|dream)\b",
    re.IGNORECASE,
)
_ARTICLES = re.compile(r"^(?:the|a|an|my|our|their|his|her)\s+", re.IGNORECASE)
_TRAILING = re.compile(
    r"\s+(?:now|again|these days|nowadays|anymore|any more|as well|too|for good|"
    r"last \w+|this \w+|next \w+|in (?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december|\d{4})|since \w+|recently)$",
    re.IGNORECASE,
)
_SENTENCES = re.compile(
    r"(?<=[.!?;:])\s+|\s*\n+\s*|,\s+(?:and|but|so)\s+|\s+[—–-]+\s+|,\s+(?=(?:I|we|We)\b)"
)
_LEAD = re.compile(
    r"^(?:(?:oh|ok|okay|so|and|but|now|well|yes|yeah|hey|hi|anyway|btw|by the way|update|fyi|"
    r"honestly|actually|in fact|fun fact|finally|officially|"
    r"good news|big news|news|quick update|heads up|just so you know|as of \w+|yesterday|"
    r"today|these days|nowadays|lately|so now|since then|after (?:the|a|our|my) [\w-]+|"
    r"last (?:week|month|year|night)|this (?:week|month|year|morning)|recently|"
    r"(?:a few|two|three|some) (?:days|weeks|months) ago)\s*[,:!-]*\s*)+",
    re.IGNORECASE,
)
_SPEAKER = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)?:\s+")  # "Caroline: I moved ..."


# "green's my favourite colour", "Ravi's a coffee person", "Prod's been upgraded": "is"/"has"
# (a possessive "Fatima's mobile" is left alone).
_CONTRACTIONS = re.compile(r"\b(\w+)'s\s+(my|our|the|a|an|now|been|got|gone|become)\b")


def _expand(match: re.Match[str]) -> str:
    verb = "has" if match.group(2) in ("been", "got", "gone", "become") else "is"
    return f"{match.group(1)} {verb} {match.group(2)}"


def statement_of(text: str, speaker: str | None = None) -> Statement | None:
    """The first slot a text fills, if any. ``speaker`` names who "I" is (else "user")."""
    head = _CONTRACTIONS.sub(_expand, text[:2_000].replace("’", "'"))
    named = _SPEAKER.match(head)
    if named is not None and not _LEAD.match(named.group(0)):
        speaker = speaker or named.group(0).rstrip(": ")
        head = head[named.end() :]
    for sentence in _SENTENCES.split(head):
        sentence = _LEAD.sub("", sentence.strip()).rstrip(".!;: ")
        if not sentence or _NOT_STATEMENTS.search(sentence):
            continue
        for rule in _RULES:
            found = _statement(rule, sentence, speaker)
            if found is not None:
                return found
    return None


def _statement(rule: _Rule, sentence: str, speaker: str | None) -> Statement | None:
    match = (rule.pattern.search if rule.anywhere else rule.pattern.match)(sentence)
    if match is None:
        return None
    attribute = rule.attribute(match)
    if not attribute or attribute.endswith(":"):
        return None
    groups = match.groupdict()
    raw = groups.get("v") or ""
    if attribute == "diet":
        raw = _diet_value(sentence, groups)
    value = _clean_value(raw)
    proper = raw.strip()[:1].isupper()  # "Billing", "Reading": names, not activities
    if not value or (_NOT_VALUES.match(value) and not proper) or len(value.split()) > 8:
        return None
    if rule.ended:
        value = f"not {value}"
    if attribute.split(":")[0] not in _NAMED_ATTRIBUTES and (
        stem(attribute.split()[-1]) in _NOT_ATTRIBUTES
    ):
        return None
    subject = _norm_subject(groups.get("s") or "", speaker)
    if attribute.startswith(("version:", "deadline:")):
        subject = "*"  # a tool's version or a thing's deadline is the same for everyone
    return Statement(subject, attribute[:MAX_SLOT], value[:MAX_SLOT])


_NAMED_ATTRIBUTES = _words(
    "home address employer manager partner car diet pet favorite prefers version deadline team"
) | {"job title"}


def _diet_value(sentence: str, groups: dict[str, str | None]) -> str:
    if groups.get("again"):
        return f"eats {groups['again']}"
    lowered = sentence.lower()
    for verb in ("stopped eating", "quit eating", "gave up eating", "started eating"):
        if verb in lowered:
            return f"{verb} {groups.get('v') or 'meat'}"
    return groups.get("v") or ""


def _norm_subject(raw: str, speaker: str | None = None) -> str:
    word = raw.strip().lower().removesuffix("'s")
    if word in ("", "i", "we", "my", "our", "the user", "user"):
        return (speaker or "user").strip().lower()
    return word


def _clean_value(raw: str) -> str:
    value = raw.strip(" \t'\"").lower()
    for _ in range(3):
        value = _TRAILING.sub("", _ARTICLES.sub("", value)).strip(" .,'\"")
    return re.sub(r"\s+", " ", value)


def _norm_words(text: str) -> str:
    return re.sub(r"\s+", " ", _ARTICLES.sub("", text.strip().lower()))


def _head(phrase: str | None) -> str:
    """The last word of a noun phrase, stemmed, in American spelling: "aisle seats" ->
    "seat", "colour" -> "color"."""
    words = re.findall(r"[a-z0-9+#.-]+", (phrase or "").lower())
    if not words:
        return ""
    word = _SPELLING.get(words[-1], words[-1])
    return stem(word)


_SPELLING = {"colour": "color", "colours": "colors", "flavour": "flavor", "theatre": "theater"}


# --- questions -----------------------------------------------------------------------------

_Q_SUBJECT = r"(?P<s>the user|user|I|we|you|[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
_Q_POSSESSIVE = r"(?P<s>the user's|user's|my|our|your|[A-Z][a-z]+(?: [A-Z][a-z]+)?'s)"
_Q_NOW = r"(?:\s+(?:now|currently|these days|nowadays|at the moment|today))?"
_Q_DO = r"(?:does|do|is|are)"


def _q(pattern: str, attribute: str | Callable[[re.Match[str]], str]) -> _Rule:
    rule = _rule(r"^\s*" + pattern, attribute)
    return _Rule(re.compile(rule.pattern.pattern, re.IGNORECASE), rule.attribute, False, False)


_QUESTIONS: tuple[_Rule, ...] = (
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
        rf"what\s+is\s+{_Q_POSSESSIVE}\s+{_PETS}(?:'s name|\s+called|\s+named)",
        lambda m: f"pet:{m.group('k')}",
    ),
    _q(
        rf"what\s+is\s+the\s+name\s+of\s+{_Q_POSSESSIVE}\s+{_PETS}\b",
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
        _group("k", "favorite"),
    ),
    _q(
        rf"(?:what|which)\s+(?P<k>[\w ]{{1,30}}?)\s+{_Q_DO}\s+{_Q_SUBJECT}\s+(?:like|love)\s+"
        r"(?:the\s+)?(?:best|most)\b",
        _group("k", "favorite"),
    ),
    _q(
        rf"(?:what|which)\s+(?:kind of\s+)?(?P<k>[\w ]{{1,30}}?)\s+{_Q_DO}\s+{_Q_SUBJECT}\s+"
        r"(?:currently\s+|now\s+)?prefer",
        _group("k", "prefers"),
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
        lambda m: f"deadline:{_head(m.group('k'))}",
    ),
    _q(
        r"what\s+is\s+the\s+(?:current\s+|new\s+)?(?:deadline|due date)\s+for\s+(?:the\s+)?"
        r"(?P<k>[\w -]{1,40}?)\s*\??$",
        lambda m: f"deadline:{_head(m.group('k'))}",
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
        lambda m: _norm_words(m.group("k")),
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
            or (base not in _NAMED_ATTRIBUTES and stem(attribute.split()[-1]) in _NOT_ATTRIBUTES)
        ):
            return None
        subject = _norm_subject(_q_subject(match.groupdict().get("s") or ""))
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
        names = [n for n in _Q_NAME.findall(text) if n.lower() not in _NOT_NAMES | _Q_NOT_NAMES]
        subject = names[0].lower() if names else "user"
        return Statement(subject, attribute, "").slot
    return None


_Q_NOT_NAMES = _words("user current currently api")
_Q_TAIL = re.compile(
    r"\s*(?:now|currently|these days|nowadays|at the moment|right now|at present|today)?\s*\??$",
    re.IGNORECASE,
)


def _asked_of_thing(text: str, attribute: str, match: re.Match[str]) -> str | None:
    """ "favourite band" -> favorite:band; "Python version" -> version:python; "thesis due"
    -> deadline:thesis."""
    if attribute == "favorite":
        after = _Q_TAIL.sub("", text[match.end() :]).split()
        return Statement("user", f"favorite:{_head(after[0])}", "").slot if after else None
    before = re.findall(r"[A-Za-z][\w+#.-]*", text[: match.start()])
    thing = [w for w in before if w.lower() not in _NOT_NAMES | _Q_NOT_NAMES | {"due"}]
    if not thing:
        return None
    name = thing[-1].lower() if attribute == "version" else _head(thing[-1])  # as stated
    return Statement("*", f"{attribute}:{name}", "").slot


_CONTRACTED = re.compile(r"\b(what|who|where|when|which)'s\b", re.IGNORECASE)


def _q_subject(raw: str) -> str:
    """A question's subject as a statement's: "you"/"I" is the user asking about themselves."""
    word = raw.strip().lower().removesuffix("'s")
    return "user" if word in ("you", "your", "i", "me", "my", "we", "our", "the user") else word


# --- updates that name the old value ------------------------------------------------------

# Words that say something changed ("sold", "no longer", "now", "switched", "retired"...).
_CHANGE = re.compile(
    r"\b(?:now|new|newly|no longer|anymore|any more|switched|switching|changed|moved|"
    r"relocated|replaced|instead|since|sold|traded|swapped|upgraded|bumped|migrated|updated|"
    r"extended|pushed|postponed|slipped|delayed|reassigned|transferred|promoted|quit|left|"
    r"resigned|retired|passed away|died|split up|broke up|divorced|separated|overtaken|"
    r"renamed|nowadays|going forward|from now on|as of|used to|got rid of|gave up|stopped|"
    r"gone|ended|over)\b",
    re.IGNORECASE,
)
_TITLES = _words("dr mr mrs ms miss prof professor sir")
_NOT_NAMES = _words(
    "hey hi hello thanks thank sorry wow yay congrats congratulations nice great good glad "
    "finally just got sold switched moved quit left oh ok okay so btw well yes yeah also "
    "still now then after before since today yesterday honestly update fyi big good news "
    "sadly luckily unfortunately actually basically anyway the a an this that these those "
    "it there here what when where who why how"
)
_COMMON = _words(
    "about after again also always and any are back been before being but can city could "
    "does doing done from going good great have into just like made make mode more most "
    "much need never next only other over really same seat since some still such than "
    "that their them then there these they thing this those time very want well were what "
    "when where which while will with work would year years your team"
)


INFERRED = "~"  # the value of a slot an update filled without stating a value
_MAX_VALUE_WORDS = 4


def inferred_value(memory_id: str) -> str:
    """The value of a slot filled by ``updated_slot``: its own, equal to no other."""
    return f"{INFERRED}{memory_id}"


@dataclass(frozen=True, slots=True)
class Known:
    """A current memory of the scope that fills a slot."""

    id: str
    slot: str
    value: str


def says_change(text: str) -> bool:
    """Whether a text says something changed (cheap: checked before anything is read)."""
    return _CHANGE.search(text[:2_000]) is not None


def updated_slot(text: str, speaker: str | None, known: Sequence[Known]) -> Known | None:
    """The slot a text updates without stating it in a form ``statement_of`` reads: it says
    something changed and names the value a current memory of the scope holds, about the
    same subject ("Finally sold the Civic and bought a Tesla" after "I drive a Honda
    Civic"; "Dana left, so now I report to Kevin" after "My manager is Dana"). ``known`` is
    newest first; the newest match wins."""
    head = text[:2_000].replace("’", "'")
    if not says_change(head):
        return None
    named = _SPEAKER.match(head)
    if named is not None and not _LEAD.match(named.group(0)):
        speaker = speaker or named.group(0).rstrip(": ")
        head = head[named.end() :]
    words = frozenset(re.findall(r"[a-z0-9][a-z0-9.+#-]*[a-z0-9]|[a-z0-9]", head.lower()))
    subject = _text_subject(head, speaker)
    for memory in known:
        owner, _, attribute = memory.slot.partition("|")
        value = _value_words(memory.value)
        if (
            memory.value.startswith(INFERRED)
            or attribute.split(":")[0] not in _NAMED_ATTRIBUTES
            or not value
            or len(memory.value.split()) > _MAX_VALUE_WORDS
        ):
            continue  # a value stated as one, of an attribute that is one
        if not (value & words):
            continue
        if subject is not None and owner != "*" and subject != owner and subject not in value:
            continue  # about someone else ("My sister sold her Civic")
        if owner not in ("*", "user", (speaker or "").lower()) and owner not in words:
            continue  # a named subject must be named
        return memory
    return None


def _value_words(value: str) -> frozenset[str]:
    """The words of a value that identify it: not short, not common."""
    found = re.findall(r"[a-z0-9][a-z0-9.+#-]*[a-z0-9]", value.lower())
    return frozenset(w for w in found if (len(w) >= 4 or w[0].isdigit()) and w not in _COMMON)


def _text_subject(text: str, speaker: str | None) -> str | None:
    """Who a text is about, from its first words: the speaker for "I"/"my"/"we", a named
    person, someone else's ("my sister"), or None when it does not say (a dropped subject,
    "Finally sold the Civic", is the speaker's too)."""
    first = _LEAD.sub("", text.strip())
    match = re.match(r"(?:(my|our)\s+(\w+)|(\w+)(?:'s)?)", first, re.IGNORECASE)
    if match is not None and match.group(1):
        relation = match.group(2).lower()
        return relation if stem(relation) in _NOT_ATTRIBUTES else (speaker or "user").lower()
    if speaker:  # a conversation turn is its speaker's, unless it opens on someone else's
        return speaker.lower()
    if match is None:
        return None
    word = match.group(3)
    lowered = word.lower()
    if lowered in ("i", "we", "me", "us") or first.lower().startswith(("the user", "user ")):
        return (speaker or "user").lower()
    if not word[:1].isupper() or lowered in _NOT_NAMES or lowered in _TITLES:
        return None
    if lowered.endswith(("ed", "ly", "ing")):
        return None
    return lowered
