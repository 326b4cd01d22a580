"""What the words of one statement say about whether it may take part in an update, whatever
it means: whether it reads as one fact (not a question, a reaction, a request, a long story),
states a standing state (what may be replaced), states something current (not a wish, a plan,
a trip, something long past), adds to what held ("also", "a second"), tells a change, and
whether it says a named value ended ("Dana left", "sold the Civic").

General English, not a list of attributes; precision first (two facts that both hold must not
be taken for an update).
"""

from __future__ import annotations

import re

from agentcore.domain.updates.vocabulary import opening, plain, said

MAX_WORDS = 25  # a statement of one fact is short; a longer text tells several

_ADDS = re.compile(
    r"\b(?:also|as well|in addition|additionally|besides|another|both|sometimes|either|"
    r"a second|one more|an extra|plus)\b|\btoo\b(?=\s*(?:[.,;:!?)]|$))",
    re.IGNORECASE,
)
# A reply to what someone else said, not a fact of one's own ("Wow, that's great!").
_REACTION = re.compile(
    r"^(?:wow|whoa|thanks|thank you|thx|awesome|cool|nice|great|congrats|congratulations|"
    r"haha|hah|lol|omg|aw+|sounds|sure|yeah|yep|yup|yes|no(?!\s+(?:more|longer))|nope|oh|ooh|"
    r"hey|hi|hello|bye|glad|sorry|amazing|wonderful|fantastic|incredible|"
    r"good (?:luck|job|idea|point|night|morning|evening)|exactly|absolutely|totally|"
    r"definitely|indeed|right|true|agreed|same|me too|ok|okay|that'?s|that is|this is|"
    r"it'?s so|what a|how|take care|see (?:you|ya)|keep (?:it up|going|at it|me posted)|"
    r"have (?:a|fun)|enjoy|stay|hang in|talk (?:soon|later|to you)|catch you|cheers|you too|"
    r"same here|c'mon|come on|remember|i (?:agree|couldn't agree|appreciate|hope|wish|bet|"
    r"guess|think|feel|love that|am so glad|'m so glad))\b",
    re.IGNORECASE,
)
# An opening pronoun leaves the subject to the conversation ("It is truly inspiring!").
_PRONOUN = re.compile(
    r"^(?:it|it's|its|they|they're|they've|this|that|these|those|he|he's|she|she's|there|"
    r"there's|here|here's)\b",
    re.IGNORECASE,
)
# A request to the assistant or a to-do states no fact ("Remind me to...", "I need to...").
_REQUEST = re.compile(
    r"^(?:please\s+)?(?:remind|write|draft|summari[sz]e|translate|explain|give|tell|show|help|"
    r"find|list|convert|compare|suggest|recommend|let's|let us|can you|could you|would you|"
    r"do you|i need|i needed|we need|i should|we should|i have to|we have to|i must|i've got to|"
    r"i gotta|don't forget)\b",
    re.IGNORECASE,
)
# A past event rather than a state: the verb after the subject is in the simple past ("I
# finally fixed the door", "We went to Rome").
_SUBJECT = (
    r"(?:i|we|he|she|they|it|you|my\s+\w+|our\s+\w+|the\s+\w+(?:\s+(?!(?:is|are|was|were|"
    r"has|have|had|be|been)\b)\w+)?|[A-Z][a-z]+(?:'s\s+\w+)?)"
)
_PAST = re.compile(
    rf"^{_SUBJECT}\s+(?:(?:just|finally|recently|already|also|then|once|really|actually|"
    r"literally|totally|even|never|still)\s+)*(?:\w+ed|went|got|had|did|made|took|saw|came|"
    r"bought|sold|found|left|ran|ate|drank|began|brought|felt|forgot|gave|kept|lost|met|paid|"
    r"put|said|sent|spent|told|thought|won|wrote|broke|chose|drove|flew|grew|knew|rode|sang|"
    r"spoke|swam|threw|wore|caught|taught|fell|hit|heard|held|built|burnt|dug|fed|fought|"
    r"hung|led|lit|read|shot|slept|stood|stuck|struck|swept|understood|woke)\b",
    re.IGNORECASE,
)
# A past event tells of a change only with a word that says so ("I ran a 10k last weekend"
# replaces nothing; "I moved to Munich", "We got a new car" may).
_CHANGE = re.compile(
    r"\b(?:now|new|newly|no longer|anymore|any more|again|instead|since|as of|from now on|"
    r"going forward|these days|nowadays|switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)|"
    r"relocat(?:ed|ing)|replac(?:ed|ing)|sold|traded|swapped|upgrad(?:ed|ing)|"
    r"migrat(?:ed|ing)|updat(?:ed|ing)|extend(?:ed|ing)|push(?:ed|ing)|postpon(?:ed|ing)|"
    r"delay(?:ed|ing)|transferr(?:ed|ing)|promot(?:ed|ing)|quit|left|resign(?:ed|ing)|"
    r"retir(?:ed|ing)|passed away|died|broke up|split up|divorc(?:ed|ing)|"
    r"separat(?:ed|ing)|renam(?:ed|ing)|join(?:ed|ing)|start(?:ed|ing)|became|become|"
    r"adopt(?:ed|ing)|hired|registered|signed|took over|taken over|dropp(?:ed|ing)|"
    r"cancell?(?:ed|ing)|finish(?:ed|ing)|gave up|stopp(?:ed|ing)|ended|port(?:ed|ing)|"
    r"rewr(?:ote|itten)|settled|engaged|married)\b",
    re.IGNORECASE,
)
# A wish, a plan, a trip, something ahead or long past: nothing current is stated.
_NOT_NOW = re.compile(
    r"\b(?:want|wants|wanted|hope|hopes|hoping|wish|wishes|plan to|plans to|planning to|"
    r"plan on|planning on|planned for|maybe|perhaps|thinking about|thinking of|considering|"
    r"would like|'d like|dream|dreams|someday|one day|if|unless|"
    r"(?<!getting )(?<!get )(?<!got )used to|back in|when i was|when we were|years ago|"
    r"interviewing|applying|visiting|trip|vacation|holiday|conference|going to|gonna|'ll|"
    r"trying|testing|trying out|trial|"
    r"would|could|'d)\b"
    r"|\b(?-i:may|might|will)\b"
    r"|(?<!starting )(?<!from )(?<!as of )(?<!for the )\bnext (?:week|month|year|weekend|"
    r"summer|spring|autumn|fall|winter|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday)\b"
    r"|\bfor (?:a|two|three|a few|a couple of) (?:days?|nights?|weeks?)\b",
    re.IGNORECASE,
)
# A wish, a plan or a maybe: what it says is not how things stand ("I'm thinking of cycling").
_WISH = re.compile(
    r"\b(?:want|wants|wanted|hope|hopes|hoping|wish|wishes|plan to|plans to|planning to|"
    r"planning on|thinking about|thinking of|considering|maybe|perhaps|would like|'d like|"
    r"someday|one day|if|unless)\b|\b(?-i:may|might)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(
    r"\b(?:you|your|you're|you've|you'd|you'll|yours|ya|u)\b", re.IGNORECASE
)
# Giving one's own contact details is no talk about the listener ("You can reach me at ...").
_CONTACT = re.compile(
    r"^(?:you can|please) (?:reach|contact|call|text|email|e-mail|find) me\b", re.IGNORECASE
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\s*\n+\s*")
# Words that say a value ended: near the name of the old value, they make a statement an
# update even when it names no new value.
_ENDED = (
    r"(?:left|leaves|leaving|quit|quits|sold|ended|ends|over|passed away|died|retired|broke up|"
    r"split up|divorced|no longer|anymore|any more|no more|gave up|given up|stopped|cancell?ed|"
    r"dropped|ditched|dumped|got rid of|moved out|moved away|moved on|resigned|closed|"
    r"shut down|finished|swapped|replaced|fired|laid off|let go|traded in|returned|gone|dead|"
    r"switched off|turned off)"
)
_NEAR = 4  # words between a name and the word that ends it


def reads_as_fact(text: str) -> bool:
    """Whether a text reads as a statement of one fact: short (``MAX_WORDS``: replacing a long
    memory because one of its facts changed would hide the others), no question in it, not a
    reaction to someone else ("Wow, that's great!", "Take care!"), not opening on a pronoun
    whose referent only the conversation knows ("It is truly inspiring")."""
    head = opening(text)
    if len(head.split()) > MAX_WORDS or "?" in head:
        return False
    return not (_REACTION.match(said(text)) or _REACTION.match(head) or _PRONOUN.match(head))


def states_a_state(text: str) -> bool:
    """Whether a text states a standing state, which a newer statement may replace ("I live
    in Berlin", "The API is built with Flask"), rather than a past event or a request ("I
    finally fixed the door", "Remind me to call Jo", "I need a new coat")."""
    head = opening(text)
    return _REQUEST.match(head) is None and _PAST.match(head) is None


def states_now(text: str) -> bool:
    """Whether a text states something as it is now: it has a sentence that is not a question,
    and it names no wish, plan, trip, future or long-past time ("I'm interviewing at Spotify
    next week", "I was an intern here back in 2018")."""
    sentences = [s for s in _SENTENCES.split(plain(text)) if s.strip() and "?" not in s]
    return bool(sentences) and not any(_NOT_NOW.search(s) for s in sentences)


def wishes(text: str) -> bool:
    """Whether a statement says a wish, a plan or a maybe rather than how things stand
    ("I'm thinking of cycling to work", "We might move to Leeds")."""
    return _WISH.search(plain(text)) is not None


def asks_or_reacts(text: str, max_words: int = MAX_WORDS) -> bool:
    """Whether a text is no statement of its own: a question, a reaction to someone else, a
    request, or longer than ``max_words`` (several things told at once)."""
    head = opening(text)
    return (
        len(head.split()) > max_words
        or "?" in head
        or _REACTION.match(said(text)) is not None
        or _REACTION.match(head) is not None
        or _REQUEST.match(head) is not None
    )


def adds_to(text: str) -> bool:
    """Whether a statement adds to what held ("We also got a cat", "a second car", "..., too")
    rather than replacing it."""
    return _ADDS.search(plain(text)) is not None


def tells_a_change(text: str) -> bool:
    """Whether a text, if it tells a past event, says that something changed: "I moved to
    Munich", "We got a new car" do; "I ran a 10k last weekend" does not. A text that tells no
    past event passes."""
    head = opening(text)
    return _PAST.match(head) is None or _CHANGE.search(head) is not None


def addresses_listener(text: str) -> bool:
    """Whether a text speaks to or about the listener ("your support means a lot"); giving
    one's contact details ("You can reach me at ...") does not count."""
    head = opening(text)
    return _SECOND_PERSON.search(head) is not None and _CONTACT.match(head) is None


def ends(text: str, names: frozenset[str]) -> bool:
    """Whether ``text`` says that one of ``names`` (lower-cased) ended: an ending word within
    a few words after it ("Dana left", "the Siemens contract ended") or before it ("sold the
    Civic", "no more amazon")."""
    head = plain(text).lower()
    for name in names:
        quoted = re.escape(name)
        after = rf"\b{quoted}\b(?:\W+\w+){{0,{_NEAR}}}?\W+{_ENDED}\b"
        before = rf"\b{_ENDED}\b(?:\W+\w+){{0,{_NEAR - 1}}}?\W+{quoted}\b"
        if re.search(after, head) or re.search(before, head):
            return True
    return False


_ENDING = re.compile(rf"\b{_ENDED}\b", re.IGNORECASE)


def has_ending(text: str) -> bool:
    """Whether a statement has a word that says a value ended (``ends`` checks that it is
    said of a given name)."""
    return _ENDING.search(plain(text)) is not None
