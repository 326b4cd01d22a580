"""How important a memory is: scored from its text when the caller gives no importance, then
moved by use (accesses; ACE intervention outcomes move the stored value), and aged.

``score_importance`` (0-1), the first match wins:

- 0.9: flagged critical, or a requirement (``states_requirement``);
- 0.8: something to remember about a person or the work that lasts: a preference, an allergy
  or a health fact, a name, a birthday, where someone lives or works, an explicit "remember";
- 0.7: a decision, a lesson, an error's fix;
- 0.3: an acknowledgement or small talk with no content ("ok", "thanks!", "haha");
- 0.5: anything else.

``current_importance`` is what promotion compares with its threshold: the stored importance
decayed by ``(1 - decay_per_day) ** age_in_days`` (the hierarchical-memory spec's decay, in
whole days since the last update or access), plus a use bonus of ``USE_BONUS`` per doubling
of the access count (at most ``MAX_USE_BONUS``). A critical memory never decays.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

from agentcore.domain.critical import states_requirement
from agentcore.domain.models import Memory

CRITICAL, LASTING, NOTABLE, DEFAULT, SMALL_TALK = 0.9, 0.8, 0.7, 0.5, 0.3
USE_BONUS, MAX_USE_BONUS = 0.05, 0.2

_LASTING = re.compile(
    r"\b(?:i|we|she|he|they|user|customer|client)\b[^.!?]{0,40}?\b(?:prefers?|preferred|"
    r"likes?|loves?|hates?|dislikes?|(?:am|is|are) allergic|can't eat|cannot eat|don't eat|"
    r"doesn't eat|never eats?|vegetarian|vegan)\b"
    r"|\b(?:my|his|her|their|our) (?:name|birthday|address|email|phone|wife|husband|partner|"
    r"son|daughter|kids?|children|dog|cat|manager|boss|team|company|employer)\b"
    r"|\b(?:i|we|she|he|they) (?:live|lives|work|works|moved|am moving|is moving) "
    r"(?:in|at|to|for)\b"
    r"|\b(?:remember|don't forget|note) that\b|\bfor future reference\b",
    re.IGNORECASE,
)
_NOTABLE = re.compile(
    r"\b(?:decided|we'll go with|chose to|agreed (?:to|on|that)|lesson(?:s)? learned|"
    r"root cause|fixed by|the fix (?:is|was)|resolved by|workaround)\b",
    re.IGNORECASE,
)
_SMALL_TALK = re.compile(
    r"^\W*(?:ok(?:ay)?|k|sure|thanks?(?: you)?|thx|cool|nice|great|lol|haha+|hmm+|yes|yeah|"
    r"no|nope|yep|got it|sounds good|bye|hi|hello|hey)\W*$",
    re.IGNORECASE,
)


def score_importance(content: str, critical: bool) -> float:
    """The importance of a new memory whose caller gave none (module doc)."""
    if critical or states_requirement(content):
        return CRITICAL
    text = content[:2_000]
    if _LASTING.search(text):
        return LASTING
    if _NOTABLE.search(text):
        return NOTABLE
    if _SMALL_TALK.match(text):
        return SMALL_TALK
    return DEFAULT


def current_importance(memory: Memory, now: datetime, decay_per_day: float) -> float:
    """The stored importance, aged and moved by use (module doc), in [0, 1]."""
    use = min(MAX_USE_BONUS, USE_BONUS * math.log2(1 + max(memory.access_count, 0)))
    if memory.critical:
        return min(1.0, memory.importance + use)
    touched = max(memory.updated_at, memory.last_accessed_at or memory.updated_at)
    days = max((now - touched).days, 0)  # whole days: a memory of today has not aged
    aged = memory.importance * float((1 - decay_per_day) ** days)
    return min(1.0, max(0.0, aged + use))
