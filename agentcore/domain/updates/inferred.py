"""Updates that name the old value instead of stating the new one as a slot reads it
(``updated_slot``): "Finally sold the Civic and bought a Tesla" after "I drive a Honda Civic"."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentcore.domain.critical_facts import stem
from agentcore.domain.updates.vocabulary import (
    LEAD,
    NAMED_ATTRIBUTES,
    NOT_ATTRIBUTES,
    NOT_NAMES,
    SPEAKER,
    word_set,
)

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
_TITLES = word_set("dr mr mrs ms miss prof professor sir")
_COMMON = word_set(
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
    named = SPEAKER.match(head)
    if named is not None and not LEAD.match(named.group(0)):
        speaker = speaker or named.group(0).rstrip(": ")
        head = head[named.end() :]
    words = frozenset(re.findall(r"[a-z0-9][a-z0-9.+#-]*[a-z0-9]|[a-z0-9]", head.lower()))
    subject = _text_subject(head, speaker)
    for memory in known:
        owner, _, attribute = memory.slot.partition("|")
        value = _value_words(memory.value)
        if (
            memory.value.startswith(INFERRED)
            or attribute.split(":")[0] not in NAMED_ATTRIBUTES
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
    first = LEAD.sub("", text.strip())
    match = re.match(r"(?:(my|our)\s+(\w+)|(\w+)(?:'s)?)", first, re.IGNORECASE)
    if match is not None and match.group(1):
        relation = match.group(2).lower()
        return relation if stem(relation) in NOT_ATTRIBUTES else (speaker or "user").lower()
    if speaker:  # a conversation turn is its speaker's, unless it opens on someone else's
        return speaker.lower()
    if match is None:
        return None
    word = match.group(3)
    lowered = word.lower()
    if lowered in ("i", "we", "me", "us") or first.lower().startswith(("the user", "user ")):
        return (speaker or "user").lower()
    if not word[:1].isupper() or lowered in NOT_NAMES or lowered in _TITLES:
        return None
    if lowered.endswith(("ed", "ly", "ing")):
        return None
    return lowered
