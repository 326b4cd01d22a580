"""A fact extractor that needs no LLM: general English first-person patterns, clause by clause.

It finds preferences ("I love hiking"), constraints ("I'm allergic to nuts", "I must...",
"I never..."), stated facts ("my sister is a nurse", "I live in Paris", "I have a dog named
Max", "I went to a conference yesterday"), plans ("I'm going to...") and learnings ("I
learned that..."). First person resolves to the speaker's name when known (else "The user");
relative dates resolve against the text's timestamp. It favours precision: a clause whose
object leans on context it cannot resolve ("it", "you", "that") yields nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentcore.adapters.extractors.dates import TIME, resolve_times, split_leading_time
from agentcore.adapters.extractors.rules import ADV, ADVERBS, RULES, Rule
from agentcore.services.semantic import (
    ExtractedFact,
    SourceText,
    normalize_fact,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE_BREAK = re.compile(
    r"\s*(?:[,;:]|\s-+\s|—|–)\s*(?:(?:and|but|so|because|since|though|although|plus|as)\s+)?"
    r"(?=(?:I|my|My)\b)"
    r"|\s+(?:and|but|so|because|since|though|although|plus|cause|cuz)\s+(?=(?:I|my)\b)"
)
_LEAD_FILLER = re.compile(
    r"^(?:(?:oh|wow|yeah|yes|yep|yup|well|honestly|actually|also|plus|and|but|so|now|haha|lol|"
    r"hey|hi|ok|okay|sure|absolutely|definitely|totally|right|true|aww|omg|anyway|anyways|btw|"
    r"by the way|gosh|man|cool|great|nice|hmm|um|uh|ah|funny enough|in fact|personally)"
    r"\b[\s,!.]*)+",
    re.IGNORECASE,
)
_REPORTING = re.compile(
    rf"^I {ADV}(?:think|guess|know|believe|feel like|reckon|suppose|mean|admit|swear|"
    r"must say|realized|realised|found out|discovered|noticed|learned|learnt)"
    r"(?: recently| lately| today)? (?:that )?(?=I\b|I'|my\b)",
    re.IGNORECASE,
)
_OBJECT_END = re.compile(
    r"\s*(?:[;:!?()]|\s-+\s|—|–|\.\s|\.$)"
    r"|,?\s+(?:but|because|'?cause|cuz|since|even though|even if|though|although|while|whereas"
    r"|unless|until|if"
    r"|so that)\s|,\s*(?:for example|for instance|I guess|I think|you know|I mean)\b"
    r"|,\s*(?:so|which|as|especially|when|where|bye|goodbye|see you|talk soon|thanks)\b"
    r"|,?\s+(?:and|so)\s+(?:I|I'm|it|it's|that's|they|we|he|she|you|there)\b"
    r"|,\s*(?:I|I'm|I've|I'll|we|we're|we'll|we've|they|they're|it|it's|he|she|you|there)\b",
    re.IGNORECASE,
)
_TRAILING = re.compile(
    r"(?:[\s,.!]+|\s+(?:too|as well|also|a lot|so much|very much|lately|anymore|haha|lol|"
    r"though|now|again|right now|tbh))+$",
    re.IGNORECASE,
)
_UNRESOLVED = re.compile(
    r"\b(?:you|your|yours|yourself|yourselves|u|ur|it|its|he|she|him|her|hers|they|them|their|"
    r"theirs|this|these|those|here|there|that's|what's)\b|\bthat (?:same\b|\w+$)"
    r"|(?<!number )\bone$"
    r"|\bthat(?=\s*$|\s+(?:in|on|at|for|with|to|of|up|out|too|again|one|way|day|time)\b)",
    re.IGNORECASE,
)
_VAGUE_START = re.compile(
    r"^(?:that|how|what|when|where|why|who|whether|which|so|such|one|some|something|anything|"
    r"everything|nothing|all|both|each|every|being|doing (?:good|well|great|fine|ok|okay|"
    r"alright|better|amazing|awesome))\b",
    re.IGNORECASE,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS = _words(
    "a an the to of in on at for with and or but is are be been being was were do does did "
    "have has had go going get got make made some any more most much many very really just "
    "so too also about out up down over all can will would could should good great well fine "
    "okay ok busy awesome amazing cool nice fun lot lots ton bunch thing things stuff doing "
    "something anything thinking wondering real pretty super"
)
_FIRST_PERSON = re.compile(
    r"(?<![\w-])(?:I'm|I am|I've|I'd|I'll|I|my|mine|myself|me|our|ours|we|us)(?![\w-])"
    rf"(?:\s+(?:{ADVERBS})\b)*"
    r"(?:\s+(?P<verb>love|like|enjoy|have|do|want|need|know|think|feel|make|go|get|see|care|"
    r"use|play|work|live|hope|wish|prefer|hate|miss|believe|try|plan|keep|find|take))?(?!\w)"
)
_MAX_WORDS = 25
_PAST_IRREGULAR = _words(
    "thought knew saw went felt had did was were got made said took expected wanted could "
    "would should told found gave came kept left heard meant grew began ran bought met"
)

_PRESENT_IN_ED = _words("need feed bleed breed speed proceed succeed exceed seed heed shed wed")


class RuleBasedFactExtractor:
    """The embedded default ``FactExtractor``: deterministic, offline, no model."""

    async def extract(self, texts: Sequence[SourceText]) -> list[ExtractedFact]:
        found: dict[str, ExtractedFact] = {}
        for text in texts:
            for fact in extract_facts(text):
                key = normalize_fact(fact.content)
                earlier = found.get(key)
                if earlier is not None:  # the same fact twice: one fact, both sources
                    ids = tuple(dict.fromkeys([*earlier.source_ids, *fact.source_ids]))
                    fact = _with_sources(earlier, ids, fact)
                found[key] = fact
        return list(found.values())


def extract_facts(text: SourceText) -> list[ExtractedFact]:
    """The facts stated in one text, in order, without repeats."""
    subject = subject_of(text)
    facts: dict[str, ExtractedFact] = {}
    for sentence in _sentences(text.content):
        if sentence.rstrip().endswith("?"):
            continue  # a question states nothing
        pending_time: str | None = None
        for clause in _CLAUSE_BREAK.split(sentence):
            clause = _LEAD_FILLER.sub("", clause.strip(" .!"))
            time_phrase, clause = split_leading_time(clause)
            clause = _LEAD_FILLER.sub("", clause)
            if time_phrase and not clause:
                pending_time = time_phrase
                continue
            fact = _clause_fact(clause, subject, time_phrase or pending_time, text)
            pending_time = None
            if fact is not None:
                facts.setdefault(normalize_fact(fact.content), fact)
    return list(facts.values())


def subject_of(text: SourceText) -> str:
    """Who "I" is: the speaker's name, else their role ("The assistant"), else "The user"."""
    if text.speaker:
        return text.speaker
    if text.role and text.role.lower() not in ("user", "human"):
        return f"The {text.role.lower()}"
    return "The user"


def _sentences(content: str) -> list[str]:
    content = (
        content.replace("’", "'")
        .replace("`", "'")
        .replace("‘", "'")
        .replace("“", '"')
        .replace("”", '"')
    )
    content = re.sub(r"\bi\b", "I", content)
    content = re.sub(r"\bi'(m|ve|d|ll)\b", r"I'\1", content)
    return [s.strip() for s in _SENTENCE_END.split(content) if s.strip()]


def _clause_fact(
    clause: str, subject: str, time_phrase: str | None, text: SourceText
) -> ExtractedFact | None:
    clause = _REPORTING.sub("", clause)
    for rule in RULES:
        match = rule.pattern.match(clause)
        if match is None:
            continue
        statement = _fill(rule, match, subject)
        if statement is None:
            continue
        if rule.needs_time and not (time_phrase or TIME.search(statement)):
            continue
        if time_phrase and not TIME.search(statement):
            statement = f"{statement} {time_phrase.lower()}"
        statement = resolve_times(statement, text.at)
        return ExtractedFact(
            content=statement[0].upper() + statement[1:],
            category=rule.category,
            importance=rule.importance,
            critical=rule.critical,
            source_ids=(text.memory_id,),
        )
    return None


def _fill(rule: Rule, match: re.Match[str], subject: str) -> str | None:
    groups = match.groupdict()
    raw = groups.get("x")
    obj = None if raw is None else _object(raw, subject)
    if raw is not None and obj is None:
        return None
    if obj and match.start("x") == 0:  # the clause opened with it: "Hiking is what I love"
        obj = _decapitalize(obj)
    verb = (groups.get("v") or "").lower()
    if "{w}" in rule.template and _looks_past(verb):
        return None  # "I never thought..." is a memory, not a standing rule
    values = {
        "S": subject,
        "Sp": f"{subject}'s",
        "x": obj or "",
        "v": verb,
        "v3": _third_person(verb),
        "w": (groups.get("w") or "").lower(),
        "r": (groups.get("r") or "").lower(),
        "r_is": "name is" if groups.get("r") == "name" else f"{groups.get('r')} is named",
        "k": (groups.get("k") or "thing").strip().lower(),
        "n": groups.get("n") or "",
        "p": (groups.get("p") or "").lower(),
        "q": (groups.get("q") or "").lower(),
        "m": (groups.get("m") or "").lower(),
        "named": f" named {groups['n']}" if groups.get("n") else "",
        "that": groups.get("that") or "",
    }
    statement = rule.template.format(**values)
    return re.sub(r"\s+", " ", statement).strip()


def _object(raw: str, subject: str) -> str | None:
    """The object of a clause, cut at the clause's end and made standalone; None if it
    cannot stand alone (unresolved pronouns, nothing of substance, a run-on)."""
    cut = _OBJECT_END.split(raw, maxsplit=1)[0]
    words = cut.split()
    if len(words) > _MAX_WORDS and "," in cut:
        cut = cut.split(",", 1)[0]
    cut = _TRAILING.sub("", cut).strip(" ,.'\"")
    if not cut or len(cut.split()) > _MAX_WORDS:
        return None
    timeless = TIME.sub(" ", cut)  # "this month" is when, not what
    if _UNRESOLVED.search(timeless) or _VAGUE_START.match(timeless):
        return None
    content_words = [w for w in re.findall(r"[A-Za-z']+", timeless) if w.lower() not in _STOPWORDS]
    if not any(len(w) > 2 for w in content_words):
        return None
    return _FIRST_PERSON.sub(lambda m: _third_words(m, subject), cut)


def _decapitalize(phrase: str) -> str:
    first = phrase.split(" ", 1)[0]
    common = first.lower() in ("the", "a", "an", "my", "our", "being", "going", "getting")
    if common or (first.endswith("ing") and first[1:].islower()):
        return phrase[0].lower() + phrase[1:]
    return phrase  # maybe a name: "Paris is what I love"


def _third_words(match: re.Match[str], subject: str) -> str:
    """First-person words in the third person, the verb after "I" agreeing ("I enjoy" ->
    "Tim enjoys")."""
    words = match.group(0)
    verb = match.group("verb")
    pronoun = re.match(r"\S+(?: am)?", words)
    assert pronoun is not None
    head = _third(pronoun.group(0), subject)
    rest = words[pronoun.end() :]
    if verb and pronoun.group(0) == "I":
        rest = rest[: -len(verb)] + _third_person(verb.lower())
    return head + rest


def _third(word: str, subject: str) -> str:
    mid = subject if not subject.startswith("The ") else subject.lower()
    table = {
        "I'm": f"{mid} is", "I am": f"{mid} is", "I've": f"{mid} has", "I'd": f"{mid} would",
        "I'll": f"{mid} will", "I": mid, "my": "their", "mine": "theirs",
        "myself": "themselves", "me": "them", "our": "their", "ours": "theirs", "we": "they",
        "us": "them",
    }  # fmt: skip
    return table.get(word, word)


def _third_person(verb: str) -> str:
    """The verb group as "she" says it: present tense agrees ("live" -> "lives", "grow up"
    -> "grows up"), a past tense is already right ("moved", "grew up", "was born")."""
    head, space, rest = verb.partition(" ")
    if not head or _looks_past(head):
        return verb
    irregular = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
    if head in irregular:
        head = irregular[head]
    elif re.search(r"(?:s|sh|ch|x|z|o)$", head):
        head += "es"
    elif re.search(r"[^aeiou]y$", head):
        head = head[:-1] + "ies"
    else:
        head += "s"
    return head + space + rest


def _looks_past(verb: str) -> bool:
    return (verb.endswith("ed") and verb not in _PRESENT_IN_ED) or verb in _PAST_IRREGULAR


def _with_sources(
    earlier: ExtractedFact, ids: tuple[str, ...], later: ExtractedFact
) -> ExtractedFact:
    return ExtractedFact(
        content=earlier.content,
        category=earlier.category,
        importance=max(earlier.importance, later.importance),
        critical=earlier.critical or later.critical,
        source_ids=ids,
    )
