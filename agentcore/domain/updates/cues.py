"""What the words of one statement say about whether it may be the newer statement of what an
older one said (``ranking``): whether it is no statement of its own (a question, a reaction, a
request, a long story), adds to what held ("also", "a second"), or says a wish or a plan.

General English, not a list of attributes.
"""

from __future__ import annotations

import re

from agentcore.domain.updates.vocabulary import opening, plain, said

MAX_WORDS = 40  # a statement of one fact, said in passing, is short; a longer text tells several

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
# A request to the assistant or a to-do states no fact ("Remind me to...", "I need to...").
_REQUEST = re.compile(
    r"^(?:please\s+)?(?:remind|write|draft|summari[sz]e|translate|explain|give|tell|show|help|"
    r"find|list|convert|compare|suggest|recommend|let's|let us|can you|could you|would you|"
    r"do you|i need|i needed|we need|i should|we should|i have to|we have to|i must|i've got to|"
    r"i gotta|don't forget)\b",
    re.IGNORECASE,
)
# A wish, a plan or a maybe: what it says is not how things stand ("I'm thinking of cycling").
_WISH = re.compile(
    r"\b(?:want|wants|wanted|hope|hopes|hoping|wish|wishes|plan to|plans to|planning to|"
    r"planning on|thinking about|thinking of|considering|maybe|perhaps|would like|'d like|"
    r"someday|one day|if|unless)\b|\b(?-i:may|might)\b",
    re.IGNORECASE,
)


def wishes(text: str) -> bool:
    """Whether a statement says a wish, a plan or a maybe rather than how things stand
    ("I'm thinking of cycling to work", "We might move to Leeds")."""
    return _WISH.search(plain(text)) is not None


def asks_or_reacts(text: str) -> bool:
    """Whether a text is no statement of its own: a question, a reaction to someone else, a
    request, or longer than ``MAX_WORDS`` (several things told at once)."""
    head = opening(text)
    return (
        len(head.split()) > MAX_WORDS
        or "?" in head
        or _REACTION.match(said(text)) is not None
        or _REACTION.match(head) is not None
        or _REQUEST.match(head) is not None
    )


def adds_to(text: str) -> bool:
    """Whether a statement adds to what held ("We also got a cat", "a second car", "..., too")
    rather than replacing it."""
    return _ADDS.search(plain(text)) is not None
