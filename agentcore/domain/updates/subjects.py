"""Whose fact a statement states (``subject_of``): the speaker ("I live in Berlin", "Moved to
Munich", an agent's "User lives in Berlin"), or a person ("My sister Ana lives in Madrid",
"Nina drives a Golf", "Jonas's wife works at Siemens", "The neighbours got a puppy").
Questions are read too: whom a question about the user asks about (``asked_people``) and
whether a statement states the fact of one of them (``states_for``).

General English, not a list of attributes: a statement is the speaker's unless it opens on
someone else (a relative, a friend, a group, a named person); the people it mentions beside
its subject ("I got my mum a new phone") count as others it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentcore.domain.fact_text import stem
from agentcore.domain.updates.vocabulary import NOT_NAMES, opening, plain, word_set

# People and groups a speaker talks about by their relation to the speaker.
RELATIONS = word_set(
    "mother mom mum mommy mama father dad daddy papa parent parents sister sis brother bro "
    "sibling siblings son daughter kid kids child children baby wife husband partner spouse "
    "girlfriend boyfriend fiance fiancee fiancé fiancée grandma grandmother granny nan nana "
    "grandpa grandfather grandparents aunt auntie uncle cousin niece nephew twin friend "
    "friends mate mates buddy bestie roommate roomie flatmate housemate neighbour neighbor "
    "neighbours neighbors colleague colleagues coworker coworkers co-worker teammate "
    "teammates classmate classmates cofounder co-founder client clients customer customers "
    "family in-laws stepmom stepdad stepson stepdaughter team company department club"
)
# People named by their role: someone else only when the role owns something ("my manager's
# favourite language") or acts ("Our CEO sits in Boston"); "My manager is Sam" is the
# speaker's fact.
ROLES = word_set(
    "manager boss supervisor lead doctor dentist gp teacher coach lawyer landlord landlady "
    "therapist trainer mentor tutor ceo cto cfo founder assistant agent accountant barber "
    "hairdresser vet nanny babysitter"
)
_FIRST = word_set("i i'm i've i'd i'll we we're we've we'd we'll me us my our myself ourselves")
# An agent's note on the user of the scope ("User's manager is Sam", "The user moved to
# Munich") states the user's own fact, as "My manager is Sam" would.
_THE_USERS = re.compile(r"\b(?:the\s+)?user's\b", re.IGNORECASE)
_THE_USER = re.compile(r"\b(?:the\s+)?user\b", re.IGNORECASE)
# Capitalized words that open a sentence without naming anyone.
_NOT_OPENERS = NOT_NAMES | word_set(
    "after all also and any anyone anything as at because been before being both but by can "
    "can't could couldn't did didn't do does doesn't don't down during each either even every "
    "everyone everything for from had has have having he her here his how if in into is it's "
    "its just last less let let's many may maybe more most much my never next no none not "
    "nothing of off on once one only or other our out over own please same she should since "
    "some someone something soon such than that's their them they this through to too under "
    "until up upon us very was we were what's when where whether which while who why will "
    "with within without would yet you your"
)
_NAME = r"(?-i:[A-Z][a-z]+(?:[ -][A-Z][a-z]+)?)"
_MODIFIERS = (
    r"(?:(?:new|old|best|little|big|older|younger|elder|baby|twin|late|ex|step|close|good)"
    r"[ -])*"
)


def _alternatives(words: frozenset[str]) -> str:
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


_PERSON_REF = re.compile(
    rf"\b(?:(?:my|our|the|their)\s+|(?P<owner>{_NAME})'s\s+){_MODIFIERS}(?:[a-z-]+\s+)??"
    rf"(?P<rel>{_alternatives(RELATIONS | ROLES)})(?P<own>'s|s'|')?(?:-in-laws?)?"
    rf"(?:\s+(?P<name>{_NAME}))?(?=\W|$)(?!\s+(?:lead|leader|leads|member|members|manager|"
    r"mate|mates)\b)",
    re.IGNORECASE,
)
_VALUE_FIRST = re.compile(r"^\S+\s+(?:is|are|was|'s)\s+(?:now\s+)?(?:my|our)\b", re.IGNORECASE)
_ACTING_ROLE = re.compile(r"\S+\s+([a-z]+)\s+(?!is\b|are\b|was\b|'s\b)[a-z]+s\b", re.IGNORECASE)
_VERBISH = re.compile(
    r"(?:is|are|was|were|has|have|had|'s|got|gets|will|can|just|now|still|also|and|finally|"
    r"recently|never|always|[a-z]+s|[a-z]+ed)\b"
)
_OPENING_WORD = re.compile(r"(?P<word>[A-Z][\w.+&-]*[\w+]|[A-Z])(?P<own>'s)?")
_WORDS = re.compile(r"[A-Za-z][\w'-]*")


@dataclass(frozen=True, slots=True)
class Subject:
    """``holder``: whose fact it states: "" for the speaker, else a person ("ana",
    "brother", "sam's brother"). ``people``: everyone it mentions by relation (or by the name
    a relation is given), besides the speaker. ``words``: all its words, lower-cased,
    stemmed."""

    holder: str
    people: frozenset[str]
    words: frozenset[str]
    first_person: bool  # it says "I", "my", "we"... somewhere


@lru_cache(maxsize=8_192)  # a search reads the same candidates again and again
def subject_of(text: str) -> Subject:
    """Whose fact ``text`` states (see the module docstring). A conversation turn's speaker
    prefix ("Caroline: ...") is skipped: "I" is whoever speaks; "the user" of an agent's note
    is the speaker too."""
    head = _THE_USER.sub("I", _THE_USERS.sub("my", opening(text)))
    lowered = [w.lower() for w in _WORDS.findall(head)]
    people = _people(head)
    first_person = any(w in _FIRST for w in lowered)
    return Subject(
        holder=_holder(head, people, first_person),
        people=frozenset(people.values()),
        words=frozenset(stem(w.removesuffix("'s")) for w in lowered),
        first_person=first_person,
    )


def opening_name(text: str) -> str:
    """The proper name a statement opens on, lower-cased ("Nina drives a Golf" -> "nina",
    "TypeScript ruined ..." -> "typescript"), or "" (a pronoun, a verb: "Cancelled the gym",
    "Marco and I broke up")."""
    head = opening(text)
    match = _OPENING_WORD.match(head)
    if match is None:
        return ""
    word = match.group("word")
    lowered = word.lower()
    rest = head[match.end() :].lstrip()
    if re.match(r"and (?:i|we|me)\b", rest, re.IGNORECASE):
        return ""
    if lowered in _NOT_OPENERS or lowered in _FIRST or lowered.endswith(("ed", "ing", "ly")):
        return ""
    if re.search(r"[A-Z0-9]", word[1:]) or match.group("own") or _VERBISH.match(rest):
        return lowered
    return ""


_USER = re.compile(r"\b(?:the\s+)?user(?:'s)?\b|\b(?:i|i'm|my|me|mine)\b", re.IGNORECASE)
_USERS_PERSON = re.compile(
    rf"\b(?:(?:the\s+)?user's|my)\s+(?:[a-z-]+\s+)?(?P<rel>{_alternatives(RELATIONS)})\b",
    re.IGNORECASE,
)


def asked_people(question: str) -> frozenset[str] | None:
    """Whom a question about the user asks about: nobody else for the user's own facts
    ("Where does the user live now?", "Who is the user's partner?": an empty set), the people
    it names by their relation to the user ("What does the user's wife do?": {"wife"}); None
    when it does not ask about the user ("Where does Ana live?")."""
    text = plain(question)
    if _USER.search(text) is None:
        return None
    return frozenset(m.group("rel").lower() for m in _USERS_PERSON.finditer(text))


def states_for(text: str, people: frozenset[str]) -> bool:
    """Whether a statement states the speaker's fact or a fact of one of ``people`` (by
    relation or name): "My wife's GP is Dr. Singh" does not, for nobody but the user."""
    subject = subject_of(text)
    if not subject.holder:
        return True
    relations = {
        relation for relation, person in _people(opening(text)).items() if person == subject.holder
    }
    return subject.holder in people or bool(relations & people)


def _people(head: str) -> dict[str, str]:
    """relation (or "owner's relation") -> the person: the name that follows ("my sister
    Ana" -> "ana"), else the relation itself."""
    found: dict[str, str] = {}
    for match in _PERSON_REF.finditer(head):
        relation = match.group("rel").lower()
        owner = match.group("owner")
        if relation in ROLES:
            if match.group("own") and owner is None:
                found[relation] = relation  # "my manager's favourite language"
            continue
        if owner is not None and owner.lower() not in _NOT_OPENERS:
            found[f"{owner.lower()}'s {relation}"] = f"{owner.lower()}'s {relation}"
            continue
        name = match.group("name")
        found[relation] = name.lower() if name and name.lower() not in _NOT_OPENERS else relation
    return found


def _holder(head: str, people: dict[str, str], first_person: bool) -> str:
    """The person ``head`` opens on, "" for the speaker (or a thing, or no subject said)."""
    words = head.split(maxsplit=3)
    if not words:
        return ""
    first = words[0].lower().strip(",.!:")
    if first in ("my", "our", "the", "their"):
        role = _ACTING_ROLE.match(head)
        if role is not None and role.group(1).lower() in ROLES:
            return role.group(1).lower()  # "Our CEO sits in Boston"
        following = [
            re.sub(r"'s$|s'$|'$|-in-laws?$", "", w.lower().strip(",.!")) for w in words[1:4]
        ]
        for relation, person in people.items():
            if "'s " not in relation and relation in following:
                return person
        return ""
    if first in _FIRST or first in ("you", "you're"):
        return ""
    for relation, person in people.items():  # "Sam's brother is staying with us"
        if relation.startswith(first.removesuffix("'s") + "'s "):
            return person
    name = opening_name(head)
    if name in RELATIONS:
        return name  # "Grandma uses an old Nokia"
    # With "I" or "my" in it, a name it opens on is a value or a thing ("Fatima started as
    # my boss", "Pottery has taken over my free time"); "Tom is my boss" is the speaker's.
    if not name or first_person or _VALUE_FIRST.match(head):
        return ""
    return name
