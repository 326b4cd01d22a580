"""Automatic criticality (FR-5.2, the keyword part): does a memory state a constraint or a
requirement? Pure English heuristics, tuned for precision: a memory marked critical is never
pruned and gains in every ranking, so chat ("you must try it!", "I always cherish that",
"don't give up") must not qualify, while rules an agent has to keep must.

A sentence (never a question) states a requirement when it holds:

1. requirement vocabulary: "required", "requirement", "mandatory", "compulsory",
   "prohibited", "forbidden", "not allowed", "not permitted", "constraint", "non-negotiable",
   "under no circumstances", "deadline", "due by/on", "no later than", "allergic to";
2. an obligation modal: "must not", "mustn't", "shall (not)", or "must" + a verb, except the
   epistemic readings ("must have felt", "must be thrilled", "that must be hard") and
   enthusiasm (a sentence ending with "!");
3. a numeric limit: "no more than 3", "maximum of 10", "must not exceed $500", "capped at 5";
4. an imperative rule opening the sentence: "Never deploy on Fridays", "Always run the
   tests", "Do not log the API key" (not "Don't worry", not an exclamation);
5. a date as a deadline next to an obligation: "submit the report by Friday".

``critical_facts`` (the compression heuristics) is deliberately broader: a summary should keep
"I always cherish that", a criticality flag should not.
"""

from __future__ import annotations

import re

from agentcore.domain.fact_text import split_sentences

SCAN_CHARS = 4_000  # rules are stated up front; a long text is not scanned to the end


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_VOCABULARY = re.compile(
    r"\b(?:(?:is|are|be|been|remains?|not)\s+(?:\w+\s+)?required|required\s+(?:to|for|by)\b|"
    r"requirements?\s*(?:is|are|:)|mandatory|compulsory|prohibited|forbidden|"
    r"not (?:allowed|permitted)|constraints?\s*(?:is|are|:)|non-negotiable|"
    r"under no circumstances|deadline|due (?:by|on|date)|no later than|allergic to|"
    r"a must for (?:me|us|him|her|them))(?!\w)",
    re.IGNORECASE,
)
_MODAL = re.compile(r"(?<!\ba )(?<!\bthe )\b(?:must|shall)(?:n't)?\b(?!-)", re.IGNORECASE)
_LIMIT = re.compile(
    r"\b(?:no more than|not more than|no less than|no fewer than|maximum(?: of)?|"
    r"minimum(?: of)?|limit(?:ed)? (?:of|to|is)|capped at|(?:must|shall|may|cannot|can't) "
    r"not exceed|not to exceed|never exceed|budget (?:of|is))\s+(?:[$€£]\s?)?\d",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:never|always|do not|don't)\s+([a-z]+)(?:\s+([a-z]+))?", re.IGNORECASE
)
_DEADLINE_DATE = re.compile(
    r"\b(?:by|before|until|no later than)\s+(?:the\s+|next\s+|this\s+)?(?:"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|tonight|noon|midnight|eod|"
    r"end of (?:the )?(?:day|week|month|quarter|year|sprint)|\d{4}-\d{2}-\d{2}|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}\b|"
    r"\d{1,2}(?::\d{2})?\s?(?:am|pm)\b)",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(
    r"\b(?:must|need(?:s)? to|ha(?:s|ve) to|should|required|due|submit|deliver|ship|"
    r"finish|complete|send)\b",
    re.IGNORECASE,
)
# After "must": what makes it a guess or a feeling rather than a rule.
_EPISTEMIC_AFTER_MUST = _words(
    "have 've feel say admit confess mean know love see try visit watch read check remind"
)
# Intensifiers and praise after "must" make it a guess: "must add so much", "must be unreal".
_EMOTIVE_TAIL = _words(
    "so such quite really super pretty very totally truly still one amazing awesome unreal "
    "incredible fun great nice wonderful lovely cool tough hard rough special"
)
_FEELINGS = _words(
    "thrilled excited proud happy glad tired exhausted pleased delighted amazed scared "
    "worried bored overwhelmed relieved stoked devastated surprised impressed interested "
    "hard tough nice great fun amazing awesome incredible wonderful lovely cool difficult "
    "rough scary exciting special so really very such a an the"
)
# Sentence-opening imperatives of conversation, not rules.
_CHAT_IMPERATIVES = _words(
    "worry forget mind hesitate stop give miss be get let know think care feel quit fear "
    "ever doubt underestimate sweat panic rush lose love like enjoy want wanted fun on in a "
    "an the so full great good nice happy ready there here been"
)
# Past forms: "Never saw this coming", "Never had a chance" tell a story, not a rule.
_PAST = _words(
    "had saw did done heard went got thought knew made felt said told took came became found "
    "gave left met ran won wrote seen known been tried"
)


def states_requirement(text: str) -> bool:
    """Whether ``text`` states a constraint or a requirement (see the module doc)."""
    return any(_is_requirement(s) for s in split_sentences(text[:SCAN_CHARS]))


def _is_requirement(sentence: str) -> bool:
    stripped = sentence.rstrip(" \"')]")
    if stripped.endswith("?"):
        return False
    if _VOCABULARY.search(sentence) or _LIMIT.search(sentence):
        return True
    exclaimed = stripped.endswith("!")
    if not exclaimed and (_has_rule_modal(sentence) or _opens_with_rule(sentence)):
        return True
    return bool(_DEADLINE_DATE.search(sentence) and _OBLIGATION.search(sentence))


def _has_rule_modal(sentence: str) -> bool:
    for match in _MODAL.finditer(sentence):
        after = re.findall(r"[a-z']+", sentence[match.end() :].lower())[:4]
        nxt, second = [*after, "", ""][:2]
        if match.group(0).lower().endswith("n't") or nxt in ("not", "never", "always", "only"):
            return True
        subject = _subject_before(sentence, match.start())
        if not nxt or nxt in _EPISTEMIC_AFTER_MUST or not subject or subject.endswith("ing"):
            continue  # "Must be fun", "Getting a pup must bring joy": guesses
        if _EMOTIVE_TAIL & set(after):
            continue  # "must add so much cheer", "must still be raw"
        if nxt == "be" and (second in _FEELINGS or second.endswith("ing") or not second):
            continue
        if nxt == "be" and subject in ("it", "that", "this") and not second.endswith(("ed", "en")):
            continue  # "it must be reviewed" is a rule, "that must be hard" a guess
        return True
    return False


def _subject_before(sentence: str, end: int) -> str:
    """The word before the modal within its clause ("" when the clause opens with it)."""
    clause = re.split(r"[,;:!.?]", sentence[:end])[-1]
    words = re.findall(r"[A-Za-z']+", clause)
    return words[-1].lower() if words else ""


def _opens_with_rule(sentence: str) -> bool:
    match = _IMPERATIVE.match(sentence.strip(" \"'-*•"))
    if match is None:
        return False
    verb = match.group(1).lower()
    if verb in _CHAT_IMPERATIVES or verb in _PAST or verb.endswith(("ing", "ed", "ly", "ful")):
        return False
    return len(verb) > 2
