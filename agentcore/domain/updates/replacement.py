"""Whether a newer statement gives an older one's attribute a new value (``replaces``): meaning
relates them, no reader vetoes the pair, and a signal besides meaning confirms it.

- **Meaning** relates: the newer statement, read as a question, retrieves the older one (the
  embedder's query/passage similarity) above the model's background and above an ordinary
  neighbour in the scope (``Bars``).
- **The vetoes** rule out what meaning cannot tell apart: a statement that is no fact, adds
  rather than replaces, or states nothing current (``cues``); another subject (``subjects``);
  two rule slots that differ, or agree on the value (``statements``); a newer statement that
  names nothing the older one did not ("Max got a new collar" after "We have a golden
  retriever named Max"), moves something else ("I moved the meeting notes to Notion"), is
  about another thing of the speaker's ("my desktop" / "my work laptop"), or names no value
  where the older one named one ("I switched my notes to dark mode" after "I use Obsidian")
  — unless it says that value ended ("Sold the Civic").
- **The confirmation** (``confirmation``): the rules read the same slot with another value,
  or the newer statement says that a value the older one named ended ("Sold the Civic",
  "we cancelled Netflix"). A pair that only meaning relates, or that words of change or of
  "now" alone relate, is not recorded ("I speak English at work" after "I speak German at
  home", "The ML team moved their deploys to Argo" after "Our team deploys with
  Spinnaker"); a question about how things are still ranks the newer first (``ranking``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agentcore.domain.fact_text import terms
from agentcore.domain.updates import cues
from agentcore.domain.updates.subjects import (
    Subject,
    moved_thing,
    opening_name,
    possessions,
    same_subject,
    subject_of,
)
from agentcore.domain.updates.vocabulary import opening

# What a verdict says (``Verdict.reason``).
REPLACES = "replaces"
NOT_A_FACT = "not a fact"
ADDS = "adds to it"
NOT_NOW = "states no current change"
SAME_VALUE = "the same value"
OTHER_SUBJECT = "another subject"
OTHER_SLOT = "another slot"
NOTHING_NEW = "names nothing new"
OTHER_THING = "about another thing of the speaker's"
NO_NEW_VALUE = "names no value in place of a named one"
MOVES_SOMETHING_ELSE = "moves something else"
FAR = "not close enough"
NOT_DISTINCT = "not distinct in its scope"
UNCONFIRMED = "related by meaning alone"

# What a verdict's confirmation says (``Verdict.confirmed_by``).
BY_SLOT = "the rules read its slot with another value"
BY_ENDING = "it says the old value ended"

_NAMES = re.compile(r"[A-Z][\w.+&'-]*[\w+]|[A-Z]|\S*\d[\w.,:/+-]*|\S+@\S+")
_TITLES = re.compile(r"\b(Dr|Mr|Mrs|Ms|Mx|Prof|St|Mt|Jr|Sr)\.")
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n\s*)$")
_I = frozenset(("i", "i'm", "i've", "i'd", "i'll"))
_NO_VALUES = frozenset(("user",))  # "User is ..." in an agent's note: the speaker, no value


@dataclass(frozen=True, slots=True)
class Reading:
    """What the readers make of one statement (``reading_of``)."""

    text: str
    subject: Subject
    names: frozenset[str]  # proper names and numbers, lower-cased, not its holder's
    holder_names: frozenset[str]  # those of its holder ("nina")
    things: frozenset[str]  # what it says the speaker has ("my work laptop"), stemmed
    moved: str | None  # what it says was moved to something else ("the meeting notes")
    words: frozenset[str]  # its content words and numbers, stemmed
    slot: str | None  # what the rules read: "slot=value" ("user|home=berlin")
    fact: bool  # ``cues.reads_as_fact``
    state: bool  # ``cues.states_a_state``
    current: bool  # ``cues.states_now``
    adds: bool  # ``cues.adds_to``
    change: bool  # ``cues.tells_a_change``
    listener: bool  # ``cues.addresses_listener``
    ending: bool  # it has a word that says a value ended (``cues.ends`` near a name)

    @property
    def may_replace(self) -> bool:
        """Whether, by its words alone, it may replace an older statement (checked before
        anything is embedded): it states one current fact that adds nothing, and it has what
        could confirm a replacement (``confirmation``): a rule slot, or a word that says a
        value ended."""
        return (
            self.fact
            and self.current
            and self.change
            and not (self.adds or self.listener)
            and (self.slot is not None or self.ending)
        )


def may_replace(text: str, slot: str | None = None, value: str | None = None) -> bool:
    """``Reading.may_replace``, its cheapest checks first: most conversation turns are too
    long, ask something or say nothing new, and are not read further."""
    head = opening(text)
    if len(head.split()) > cues.MAX_WORDS or "?" in head:
        return False
    if slot is None and not cues.has_ending(text):
        return False  # nothing could confirm a replacement (``confirmation``)
    return reading_of(text, slot, value).may_replace


@lru_cache(maxsize=4_096)
def reading_of(text: str, slot: str | None = None, value: str | None = None) -> Reading:
    """Read ``text`` once (a stored memory's content; ``slot``/``value``: what the rules read
    of it, if anything)."""
    subject = subject_of(text)
    opener = opening_name(text)
    names = (_names(text) | ({opener} if opener else set())) - _NO_VALUES
    holder = set(subject.holder.replace("'s", "").split())
    found = terms(text)
    return Reading(
        text=text,
        subject=subject,
        names=frozenset(n for n in names if n not in holder),
        holder_names=frozenset(n for n in names if n in holder),
        things=possessions(text),
        moved=moved_thing(text),
        words=found.words | found.numbers,
        slot=None if slot is None else f"{slot}={value or ''}",
        fact=cues.reads_as_fact(text),
        state=cues.states_a_state(text),
        current=cues.states_now(text),
        adds=cues.adds_to(text),
        change=cues.tells_a_change(text),
        listener=cues.addresses_listener(text),
        ending=cues.has_ending(text),
    )


@dataclass(frozen=True, slots=True)
class Calibration:
    """The model's background: the mean similarity of unrelated statements (one read as a
    query, the other as a passage), measured on ``references.REFERENCES`` by
    ``services.supersession.UpdateReader``. Similarities are compared as ``lift``: 0 at the
    background, 1 for a perfect match, so that a bar means the same under models whose
    cosines sit in different ranges (multilingual-e5-small's unrelated statements score about
    0.74, all-MiniLM-L6-v2's about 0.05)."""

    background: float

    def lift(self, similarity: float) -> float:
        return (similarity - self.background) / max(1.0 - self.background, 1e-6)


@dataclass(frozen=True, slots=True)
class Bars:
    """How close, in ``Calibration.lift``, a newer statement must be to the older one: at
    least ``lift``, or ``linked`` where its words name the older one's value, slot or matter
    (``confirmation`` by slot, ending or matter: meaning then only has to agree), and
    ``margin`` more than the scope's ordinary neighbour."""

    lift: float
    margin: float
    linked: float | None = None  # None: ``lift`` for every confirmation


@dataclass(frozen=True, slots=True)
class Verdict:
    replaces: bool
    reason: str
    confirmed_by: str | None = None  # the signal besides meaning (``confirmation``)

    @property
    def vetoed(self) -> bool:
        """The readers ruled the pair out whatever its similarity, or nothing but meaning
        relates it (another neighbour may still fit)."""
        return self.reason not in (REPLACES, FAR, NOT_DISTINCT)


def replaces(
    old: Reading,
    new: Reading,
    similarity: float,
    typical: float,
    calibration: Calibration,
    bars: Bars,
) -> Verdict:
    """Whether ``new`` (stored after ``old``, in the same scope) gives ``old``'s attribute a
    new value. ``similarity``: ``new`` read as a query against ``old`` as a passage;
    ``typical``: the same for an ordinary neighbour of ``new`` in the scope (its k-th nearest
    memory; the background when the scope is small)."""
    veto = vetoes(old, new)
    if veto is not None:
        return Verdict(False, veto)
    confirmed_by = confirmation(old, new)
    if confirmed_by is None:
        return Verdict(False, UNCONFIRMED)
    lift = calibration.lift(similarity)
    linked = bars.linked if bars.linked is not None else bars.lift
    if lift < linked:
        return Verdict(False, FAR, confirmed_by)
    if lift - calibration.lift(typical) < bars.margin:
        return Verdict(False, NOT_DISTINCT, confirmed_by)
    return Verdict(True, REPLACES, confirmed_by)


def confirmation(old: Reading, new: Reading) -> str | None:
    """What, besides meaning, says that ``new`` replaces ``old`` (the vetoes passed): the rules
    read the same slot with another value, or ``new`` says that a value ``old`` named ended
    ("Sold the Civic", "Dana left"; not its holder: "Mum retired" does not end "Mum loves her
    garden"). None: only meaning, or only words of change or of now, relate them: "I speak
    English at work" after "I speak German at home", "Switched gluten-free bread brands"
    after "I'm gluten-free", "Hamza transferred his pension to PensionBee" after "My pension
    is with Aviva" (on a held-out set such words confirmed as many pairs wrongly as rightly:
    docs/decisions.md, Knowledge updates)."""
    if old.slot is not None and new.slot is not None:
        return BY_SLOT  # ``vetoes`` let through only the same slot with another value
    if new.ending and cues.ends(new.text, old.names):
        return BY_ENDING
    return None


def vetoes(old: Reading, new: Reading) -> str | None:
    """Why the readers rule out that ``new`` replaces ``old``, whatever their similarity (None:
    they do not)."""
    if not (old.fact and old.state and new.fact) or old.listener or new.listener:
        return NOT_A_FACT
    if new.adds:
        return ADDS
    if not (new.current and new.change):
        return NOT_NOW
    if new.words <= old.words:
        return SAME_VALUE  # a restatement
    if not same_subject(old.subject, new.subject):
        return OTHER_SUBJECT
    if old.slot is not None and new.slot is not None:
        old_slot, old_value = old.slot.split("=", 1)
        new_slot, new_value = new.slot.split("=", 1)
        if old_slot != new_slot:
            return OTHER_SLOT
        if old_value == new_value:
            return SAME_VALUE
    return _value_veto(old, new)


def _value_veto(old: Reading, new: Reading) -> str | None:
    """Vetoes from the values the two name (proper names and numbers)."""
    old_names = old.names | old.holder_names
    if cues.ends(new.text, old_names):
        return None  # "Dana left", "Sold the Civic": the old value ended
    if new.names and new.names <= old_names:
        return NOTHING_NEW
    if new.moved is not None and new.moved not in old.subject.words:
        return MOVES_SOMETHING_ELSE  # "I moved the meeting notes to Notion"
    if (
        old.things
        and new.things
        and not old.things & new.subject.words
        and not new.things & old.subject.words
    ):
        return OTHER_THING  # "I run Windows on my desktop" / "My work laptop runs macOS"
    if old.names and not new.names:
        return NO_NEW_VALUE
    return None


def _names(text: str) -> set[str]:
    """Proper names and numbers, lower-cased: capitalized words that do not open a sentence
    (or that also appear elsewhere), words with digits, e-mail addresses."""
    head = _TITLES.sub(r"\1", opening(text))  # "Dr. Okafor" opens no sentence
    found: set[str] = set()
    openers: set[str] = set()
    for match in _NAMES.finditer(head):
        word = match.group(0).strip(".,;:!?'\"()").removesuffix("'s").lower()
        if not word or word in _I:
            continue
        if _SENTENCE_START.search(head[: match.start()]) and match.group(0)[0].isupper():
            openers.add(word)
        else:
            found.add(word)
    return found | (openers & found)
